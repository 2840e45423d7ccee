#include "activity_log.h"

#include <algorithm>

namespace rpma::client {

bool ActivityLog::Hot(uint64_t offset, uint64_t length) {
    const uint64_t first = First(offset), last = Last(offset, length);
    for (uint64_t e = first; e <= last; ++e)
        if (!last_used_.count(e))
            return false;
    ++clock_;
    for (uint64_t e = first; e <= last; ++e)
        last_used_[e] = clock_;
    return true;
}

std::vector<uint64_t> ActivityLog::With(uint64_t offset, uint64_t length) const {
    const uint64_t first = First(offset), last = Last(offset, length);
    std::vector<std::pair<uint64_t, uint64_t>> others;  // (last used, extent)
    for (const auto &[extent, used] : last_used_)
        if (extent < first || extent > last)
            others.push_back({pinned_.count(extent) ? UINT64_MAX : used, extent});
    std::sort(others.begin(), others.end());
    const size_t range = last - first + 1;
    size_t drop = others.size() + range > capacity_ ? others.size() + range - capacity_ : 0;
    std::vector<uint64_t> extents;
    for (const auto &[used, extent] : others) {
        if (drop > 0 && used != UINT64_MAX) {
            --drop;
            continue;
        }
        extents.push_back(extent);
    }
    for (uint64_t e = first; e <= last; ++e)
        extents.push_back(e);
    std::sort(extents.begin(), extents.end());
    return extents;
}

void ActivityLog::Set(const std::vector<uint64_t> &extents) {
    ++clock_;
    std::unordered_map<uint64_t, uint64_t> next;
    for (uint64_t e : extents) {
        auto was = last_used_.find(e);
        next[e] = was == last_used_.end() ? clock_ : was->second;
    }
    last_used_ = std::move(next);
    for (auto it = pinned_.begin(); it != pinned_.end();)
        it = last_used_.count(*it) ? std::next(it) : pinned_.erase(it);
}

void ActivityLog::Pin(uint64_t offset, uint64_t length) {
    for (uint64_t e = First(offset); e <= Last(offset, length); ++e)
        if (last_used_.count(e))
            pinned_.insert(e);
}

std::vector<uint64_t> ActivityLog::Extents() const {
    std::vector<uint64_t> extents;
    for (const auto &[extent, used] : last_used_)
        extents.push_back(extent);
    std::sort(extents.begin(), extents.end());
    return extents;
}

}  // namespace rpma::client
