#include "staging_ring.h"

#include <cstdint>

namespace rpma::client {

StagingRing::StagingRing() : storage_(kBytes + kPage) {
    // A vector's own data is not page-aligned: a 4 KiB extent is one page
    // and 64 cache lines, for the copy in and the send.
    const auto misaligned = reinterpret_cast<uintptr_t>(storage_.data()) % kPage;
    memory_ = std::span(storage_).subspan(misaligned == 0 ? 0 : kPage - misaligned, kBytes);
}

std::optional<size_t> StagingRing::Allocate(size_t length, uint64_t seq) {
    const size_t pages = (length + kPage - 1) / kPage * kPage;
    if (pages == 0 || pages > kMaxExtent)
        return std::nullopt;
    size_t at = head_;
    if (!extents_.empty()) {
        const size_t tail = extents_.front().offset;
        if (head_ > tail) {
            // [tail, head_) in use: free after head_, then before tail.
            if (kBytes - head_ < pages) {
                if (tail < pages)
                    return std::nullopt;
                at = 0;
            }
        } else if (tail - head_ < pages) {
            // Wrapped: only [head_, tail) is free (none when equal).
            return std::nullopt;
        }
    }
    extents_.push_back({at, seq});
    head_ = at + pages;
    return at;
}

}  // namespace rpma::client
