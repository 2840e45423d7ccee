// Latency samples and their summary.
#ifndef RPMA_BENCH_BENCH_STATS_H
#define RPMA_BENCH_BENCH_STATS_H

#include <time.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace rpma_bench {

// Per-operation timestamps come from the TSC, calibrated once against
// CLOCK_MONOTONIC, as perftest takes its own: on virtual machines whose
// kernel distrusts the TSC, clock_gettime falls back to an emulated clock
// costing microseconds per call, which would be charged to every operation.
class Clock {
  public:
    static uint64_t NowNs() {
#if defined(__x86_64__)
        static const double ns_per_tick = Calibrate();
        return static_cast<uint64_t>(static_cast<double>(__rdtsc()) * ns_per_tick);
#else
        return MonotonicNs();
#endif
    }

  private:
    static uint64_t MonotonicNs() {
        timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
    }
#if defined(__x86_64__)
    static double Calibrate() {
        const uint64_t ns0 = MonotonicNs();
        const uint64_t tick0 = __rdtsc();
        timespec pause{0, 50 * 1000 * 1000};
        nanosleep(&pause, nullptr);
        const uint64_t ns1 = MonotonicNs();
        const uint64_t tick1 = __rdtsc();
        return static_cast<double>(ns1 - ns0) / static_cast<double>(tick1 - tick0);
    }
#endif
};

inline uint64_t NowNs() {
    return Clock::NowNs();
}

struct Summary {
    double median_us = 0;
    double p99_us = 0;
};

inline Summary Summarize(std::vector<uint64_t> samples_ns) {
    Summary s;
    if (samples_ns.empty())
        return s;
    std::sort(samples_ns.begin(), samples_ns.end());
    if (getenv("RPMA_BENCH_QUANTILES") != nullptr) {  // diagnosis: the whole distribution
        fprintf(stderr, "   quantiles (us):");
        for (double q : {0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.98, 0.99, 0.999})
            fprintf(stderr, " p%g=%.1f", q * 100,
                    samples_ns[std::min(samples_ns.size() - 1,
                                        static_cast<size_t>(q * samples_ns.size()))] /
                        1000.0);
        fprintf(stderr, "\n");
    }
    s.median_us = samples_ns[samples_ns.size() / 2] / 1000.0;
    s.p99_us = samples_ns[std::min(samples_ns.size() - 1, samples_ns.size() * 99 / 100)] / 1000.0;
    return s;
}

}  // namespace rpma_bench

#endif  // RPMA_BENCH_BENCH_STATS_H
