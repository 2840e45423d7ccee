// What rpmad counts for DaemonService.GetStats: monotonic counters updated
// by the control and data planes, read without stopping them.
#ifndef DAEMON_COUNTERS_H
#define DAEMON_COUNTERS_H

#include <atomic>
#include <cstdint>

namespace rpmad {

struct Counters {
    std::atomic<uint64_t> sessions_opened{0};
    std::atomic<uint64_t> connections_accepted{0};
    std::atomic<uint64_t> connections_rejected{0};
    std::atomic<uint64_t> flushes{0};
    std::atomic<uint64_t> bytes_flushed{0};
    std::atomic<uint64_t> flushes_rejected{0};
    std::atomic<uint64_t> errors{0};
};

// What clients did to regions through one-sided operations, as rpma_core
// counts them where it applies them (rpma_ext_mr_get_remote_stats): only the
// tcp provider can; on verbs the NIC applies them unseen. Counted from each
// region's registration, so from rpmad's start (or the region's creation).
struct RegionTraffic {
    uint64_t bytes_written = 0;  // WRITE, WRITE_WITH_IMM payloads, ATOMIC_WRITE
    uint64_t bytes_read = 0;
    uint64_t persistent_flushes = 0;  // APM: what GPSPM counts is Counters::flushes
    uint64_t bytes_persisted = 0;

    RegionTraffic &operator+=(const RegionTraffic &other) {
        bytes_written += other.bytes_written;
        bytes_read += other.bytes_read;
        persistent_flushes += other.persistent_flushes;
        bytes_persisted += other.bytes_persisted;
        return *this;
    }
};

}  // namespace rpmad

#endif  // DAEMON_COUNTERS_H
