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

}  // namespace rpmad

#endif  // DAEMON_COUNTERS_H
