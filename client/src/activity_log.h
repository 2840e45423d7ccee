// A cluster writer's activity log (DRBD's): the extents it may have writes
// in flight to. Before a write into an extent that is not hot, the log with
// that extent added (and the least recently used one dropped beyond
// kHotExtents) is recorded in etcd; a writer that dies leaves it there, and
// the next writer reconciles those extents across the in-sync replicas
// before its first write. A write into a hot extent costs a lookup; only a
// write into a new extent costs an etcd round trip.
#ifndef CLIENT_SRC_ACTIVITY_LOG_H
#define CLIENT_SRC_ACTIVITY_LOG_H

#include <cstddef>
#include <cstdint>
#include <set>
#include <unordered_map>
#include <vector>

namespace rpma::client {

class ActivityLog {
  public:
    static constexpr uint64_t kExtentBytes = uint64_t{4} << 20;
    // 128 extents of 4 MiB: a writer whose working set is under 512 MiB
    // records nothing once its extents are hot.
    static constexpr size_t kHotExtents = 128;

    explicit ActivityLog(uint64_t extent_bytes = kExtentBytes, size_t capacity = kHotExtents)
        : extent_bytes_(extent_bytes), capacity_(capacity) {}

    // True when every extent of [offset, offset + length) is hot (they are
    // marked used now): nothing to record.
    bool Hot(uint64_t offset, uint64_t length);
    // The log to record before writing [offset, offset + length): the
    // range's extents added, the least recently used unpinned others
    // dropped beyond the capacity. Ascending.
    std::vector<uint64_t> With(uint64_t offset, uint64_t length) const;
    // Takes `extents` (With's, once recorded) as the log.
    void Set(const std::vector<uint64_t> &extents);
    // Keeps the range's extents hot until Set drops them explicitly: a
    // write that failed may have reached some replicas and not others.
    void Pin(uint64_t offset, uint64_t length);

    std::vector<uint64_t> Extents() const;
    uint64_t extent_bytes() const { return extent_bytes_; }

  private:
    uint64_t First(uint64_t offset) const { return offset / extent_bytes_; }
    uint64_t Last(uint64_t offset, uint64_t length) const {
        return (offset + (length == 0 ? 1 : length) - 1) / extent_bytes_;
    }

    uint64_t extent_bytes_;
    size_t capacity_;
    uint64_t clock_ = 0;
    std::unordered_map<uint64_t, uint64_t> last_used_;  // extent -> clock
    std::set<uint64_t> pinned_;
};

}  // namespace rpma::client

#endif  // CLIENT_SRC_ACTIVITY_LOG_H
