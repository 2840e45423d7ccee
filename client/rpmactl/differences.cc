#include "client/rpmactl/differences.h"

#include <algorithm>
#include <map>

namespace rpmactl {
namespace {

constexpr size_t kChecksumBytes = 16;

}  // namespace

ExtentComparer::ExtentComparer(uint64_t size, uint64_t extent_size, std::vector<bool> in_sync,
                               std::vector<bool> compared)
    : size_(size),
      extent_size_(extent_size),
      in_sync_(std::move(in_sync)),
      compared_(std::move(compared)) {
    in_sync_.resize(compared_.size(), false);
}

void ExtentComparer::Add(uint64_t offset, const std::vector<std::string_view> &checksums) {
    const size_t replicas = std::min(checksums.size(), compared_.size());
    size_t extents = 0;
    for (size_t r = 0; r < replicas; ++r)
        if (compared_[r])
            extents = std::max(extents, checksums[r].size() / kChecksumBytes);
    // The replicas whose checksums decide: the in-sync ones compared, else
    // every one compared.
    std::vector<size_t> deciders;
    for (size_t r = 0; r < replicas; ++r)
        if (compared_[r] && in_sync_[r])
            deciders.push_back(r);
    if (deciders.empty())
        for (size_t r = 0; r < replicas; ++r)
            if (compared_[r])
                deciders.push_back(r);

    for (size_t e = 0; e < extents; ++e) {
        const uint64_t at = offset + e * extent_size_;
        if (at >= size_)
            break;
        const uint64_t length = std::min(extent_size_, size_ - at);
        compared_bytes_ += length;
        auto sum = [&](size_t r) -> std::string_view {
            if (checksums[r].size() < (e + 1) * kChecksumBytes)
                return {};
            return checksums[r].substr(e * kChecksumBytes, kChecksumBytes);
        };
        // The most common value among the deciders; on a tie, the first
        // decider's among those most common.
        std::map<std::string_view, size_t> counts;
        for (size_t r : deciders)
            ++counts[sum(r)];
        std::string_view reference;
        size_t best = 0;
        for (size_t r : deciders) {
            const size_t count = counts[sum(r)];
            if (count > best) {
                best = count;
                reference = sum(r);
            }
        }
        const bool majority = best * 2 > deciders.size();
        std::vector<size_t> differing, agreeing;
        for (size_t r = 0; r < replicas; ++r) {
            if (!compared_[r])
                continue;
            (sum(r) == reference ? agreeing : differing).push_back(r);
        }
        if (differing.empty())
            continue;
        ++differing_extents_;
        const bool no_majority = !majority;
        if (!ranges_.empty()) {
            DifferingRange &last = ranges_.back();
            if (last.offset + last.length == at && last.differing == differing &&
                last.no_majority == no_majority) {
                last.length += length;
                continue;
            }
        }
        DifferingRange range;
        range.offset = at;
        range.length = length;
        range.differing = std::move(differing);
        range.agreeing = std::move(agreeing);
        range.no_majority = no_majority;
        range.differing_bytes.resize(range.differing.size());
        ranges_.push_back(std::move(range));
    }
}

uint64_t CountDifferingBytes(std::string_view a, std::string_view b) {
    const size_t n = std::min(a.size(), b.size());
    uint64_t count = std::max(a.size(), b.size()) - n;
    // Word by word first: differences are usually few.
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        if (a.compare(i, 8, b, i, 8) == 0)
            continue;
        for (size_t j = i; j < i + 8; ++j)
            count += a[j] != b[j];
    }
    for (; i < n; ++i)
        count += a[i] != b[i];
    return count;
}

std::string FormatOffset(uint64_t offset) {
    if (offset == 0)
        return "0";
    if (offset % (1ull << 30) == 0)
        return std::to_string(offset >> 30) + " GiB";
    if (offset % (1ull << 20) == 0)
        return std::to_string(offset >> 20) + " MiB";
    if (offset % (1ull << 10) == 0)
        return std::to_string(offset >> 10) + " KiB";
    return std::to_string(offset);
}

std::string FormatRange(uint64_t offset, uint64_t length) {
    return "[" + FormatOffset(offset) + ", " + FormatOffset(offset + length) + ")";
}

}  // namespace rpmactl
