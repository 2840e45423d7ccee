// The staging ring: where a Region copies the bytes of writes from
// unregistered buffers (and reads land) before a replica's connection sends
// them. One registered memory region (buffer 0 of every replica), handed
// out in extents of whole pages, oldest first, each kept until every
// replica completed the work request that used it: with many operations in
// flight a 4 KiB write holds 4 KiB, not a fixed slot.
//
// Not thread-safe: the Region calls it under its mutex.
#ifndef CLIENT_SRC_STAGING_RING_H
#define CLIENT_SRC_STAGING_RING_H

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <span>
#include <vector>

namespace rpma::client {

class StagingRing {
  public:
    // The largest extent: a staged write or read goes in pieces of this.
    static constexpr size_t kMaxExtent = size_t{1} << 20;
    static constexpr size_t kBytes = 8 * kMaxExtent;
    static constexpr size_t kPage = 4096;

    StagingRing();

    // The whole ring, page-aligned, to register with each replica.
    std::span<std::byte> memory() { return memory_; }
    std::byte *at(size_t offset) { return memory_.data() + offset; }

    // An extent of `length` bytes (1..kMaxExtent) free now, used by work
    // request `seq` until `done(seq)` says every replica completed it, or
    // nullopt when the ring holds none that large (wait for Oldest()).
    // Extents whose work request completed are reclaimed first; when none
    // is left in use the next extent starts the ring again, so that one
    // operation at a time reuses the same, cache-warm, pages.
    template <typename Done>
    std::optional<size_t> Take(size_t length, uint64_t seq, const Done &done) {
        Reclaim(done);
        return Allocate(length, seq);
    }
    // The extent taken last is used by `seq` from now on (a copy's read,
    // then its write).
    void Retag(uint64_t seq) { extents_.back().seq = seq; }
    // The work request the oldest extent in use waits for (0: none).
    uint64_t Oldest() const { return extents_.empty() ? 0 : extents_.front().seq; }
    size_t in_use() const { return extents_.size(); }

  private:
    struct Extent {
        size_t offset;
        uint64_t seq;
    };
    template <typename Done>
    void Reclaim(const Done &done) {
        while (!extents_.empty() && done(extents_.front().seq))
            extents_.pop_front();
        if (extents_.empty())
            head_ = 0;
    }
    std::optional<size_t> Allocate(size_t length, uint64_t seq);

    std::vector<std::byte> storage_;
    std::span<std::byte> memory_;
    // In use, oldest first; they lie from extents_.front().offset on to
    // head_, wrapping at kBytes.
    std::deque<Extent> extents_;
    size_t head_ = 0;  // where the next extent starts
};

}  // namespace rpma::client

#endif  // CLIENT_SRC_STAGING_RING_H
