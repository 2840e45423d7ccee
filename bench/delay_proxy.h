// A delaying TCP proxy, so that a loopback benchmark sees a network's round
// trip: every byte is held for half of `round_trip_us` in each direction
// before it is forwarded (user space, timer-driven: one thread waits in
// ppoll until the next chunk is due).
#ifndef RPMA_BENCH_DELAY_PROXY_H
#define RPMA_BENCH_DELAY_PROXY_H

#include <cstdint>
#include <string>

namespace rpma_bench {

// Listens on 127.0.0.1:`listen_port` and forwards every connection to
// 127.0.0.1:`upstream_port`; runs in a child process until it is killed,
// after writing one line to `ready_fd`.
[[noreturn]] void RunDelayProxy(uint16_t listen_port, uint16_t upstream_port, int round_trip_us,
                                int ready_fd);

}  // namespace rpma_bench

#endif  // RPMA_BENCH_DELAY_PROXY_H
