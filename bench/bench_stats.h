// Latency samples and their summary.
#ifndef RPMA_BENCH_BENCH_STATS_H
#define RPMA_BENCH_BENCH_STATS_H

#include <time.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace rpma_bench {

inline uint64_t NowNs() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
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
