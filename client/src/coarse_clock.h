// operation_timeout's clock: CLOCK_MONOTONIC_COARSE, which the vDSO reads
// without the TSC, several times cheaper than steady_clock in a VM (BENCH.md),
// on every operation that waits; its tick, a few milliseconds, is far below
// any sensible operation_timeout.
#ifndef CLIENT_SRC_COARSE_CLOCK_H
#define CLIENT_SRC_COARSE_CLOCK_H

#include <time.h>

#include <chrono>

namespace rpma::client {

inline std::chrono::nanoseconds CoarseNow() {
    timespec now{};
    clock_gettime(CLOCK_MONOTONIC_COARSE, &now);
    return std::chrono::seconds(now.tv_sec) + std::chrono::nanoseconds(now.tv_nsec);
}

}  // namespace rpma::client

#endif  // CLIENT_SRC_COARSE_CLOCK_H
