// The pure arithmetic of replicated operations: range checks, chunking,
// a batch's covering range and the quorum verdict. No I/O, unit-tested in
// tests/unit/client/plan_test.cc.
#ifndef CLIENT_SRC_PLAN_H
#define CLIENT_SRC_PLAN_H

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace rpma::client {

// [offset, offset + length) lies within [0, size), without overflow.
inline bool InRange(uint64_t offset, uint64_t length, uint64_t size) {
    return offset <= size && length <= size - offset;
}

// A piece of a transfer: `length` bytes at `offset` of the region, at `skip`
// bytes into the caller's buffer.
struct Piece {
    uint64_t offset;
    size_t skip;
    size_t length;
};

// [offset, offset + length) cut into pieces of at most `chunk` (> 0)
// bytes: a view that computes them, so that cutting allocates nothing (every
// write and read is cut, most into one piece).
class Pieces {
  public:
    Pieces(uint64_t offset, size_t length, size_t chunk)
        : offset_(offset), length_(length), chunk_(chunk) {}

    size_t size() const { return (length_ + chunk_ - 1) / chunk_; }
    bool empty() const { return length_ == 0; }
    Piece operator[](size_t i) const {
        const size_t skip = i * chunk_;
        return {offset_ + skip, skip, std::min(chunk_, length_ - skip)};
    }

    class Iterator {
      public:
        Iterator(const Pieces *pieces, size_t i) : pieces_(pieces), i_(i) {}
        Piece operator*() const { return (*pieces_)[i_]; }
        Iterator &operator++() {
            ++i_;
            return *this;
        }
        bool operator!=(const Iterator &other) const { return i_ != other.i_; }

      private:
        const Pieces *pieces_;
        size_t i_;
    };
    Iterator begin() const { return Iterator(this, 0); }
    Iterator end() const { return Iterator(this, size()); }

  private:
    uint64_t offset_;
    size_t length_;
    size_t chunk_;
};

inline Pieces Chunks(uint64_t offset, size_t length, size_t chunk) {
    return Pieces(offset, length, chunk);
}

struct Span {
    uint64_t offset = 0;
    uint64_t length = 0;
};

// The smallest range covering every (offset, length); {0, 0} for none or
// only empty ones.
inline Span Covering(const std::vector<Span> &ranges) {
    uint64_t begin = UINT64_MAX, end = 0;
    for (const Span &r : ranges) {
        if (r.length == 0)
            continue;
        begin = std::min(begin, r.offset);
        end = std::max(end, r.offset + r.length);
    }
    return begin == UINT64_MAX ? Span{} : Span{begin, end - begin};
}

// Group commit: whether a persist of `next` may join a group of deferred
// persists that cover `covering` with `bytes` of their own, so that one
// persist of the new covering range makes all of them durable. Only while
// that range is at most `slack` bytes more than the persists' own (a log's
// appends, neighbouring records): a flush costs per byte it covers (a cache
// line written back each, a page looked at each), so a covering range over
// scattered writes would cost more than the flushes it saves.
inline bool JoinsGroup(Span covering, uint64_t bytes, Span next, uint64_t slack) {
    return Covering({covering, next}).length <= bytes + next.length + slack;
}

enum class Verdict { kDone, kWaiting, kLost };

// An operation needs `needed` confirmations: done when `confirmed` reach it,
// lost when even the `undecided` replicas (live, not yet confirmed) cannot
// make it up.
inline Verdict QuorumVerdict(size_t confirmed, size_t undecided, size_t needed) {
    if (confirmed >= needed)
        return Verdict::kDone;
    if (confirmed + undecided < needed)
        return Verdict::kLost;
    return Verdict::kWaiting;
}

// The same with replica-set records (REPLICA_SETS.md, rule 3): an
// operation waits for every in-sync member (`confirmed` + `undecided`, live
// and not failed), and `needed` is the fewest of them it may be acknowledged
// by. Done when every one confirmed and they are enough; lost when they are
// too few. Members that do not confirm in time are marked failed (and
// recorded STALE) by the caller, which leaves them out of both counts.
// With `needed` equal to every member it decides as QuorumVerdict.
inline Verdict InSyncVerdict(size_t confirmed, size_t undecided, size_t needed) {
    if (confirmed + undecided < needed)
        return Verdict::kLost;
    return undecided == 0 ? Verdict::kDone : Verdict::kWaiting;
}

}  // namespace rpma::client

#endif  // CLIENT_SRC_PLAN_H
