// Keeping N operations outstanding, as fio's iodepth does: the same loop for
// every client, so that only the transport differs.
#ifndef RPMA_BENCH_DEPTH_H
#define RPMA_BENCH_DEPTH_H

#include <algorithm>
#include <cstdint>
#include <vector>

#include "bench/bench_stats.h"
#include "bench/workload.h"

namespace rpma_bench {

// `post(slot)` starts an operation in slot [0, depth); `complete()` waits
// for any one outstanding operation and returns its slot, which is reused
// at once for the next operation.
template <class Post, class Complete>
DepthResult RunAtDepth(int depth, int operations, Post post, Complete complete) {
    DepthResult result;
    result.samples.reserve(operations);
    std::vector<uint64_t> started(depth);
    int posted = 0;
    const uint64_t begin = NowNs();
    for (; posted < std::min(depth, operations); ++posted) {
        started[posted] = NowNs();
        post(posted);
    }
    for (int done = 0; done < operations; ++done) {
        const int slot = complete();
        result.samples.push_back(NowNs() - started[slot]);
        if (posted < operations) {
            started[slot] = NowNs();
            post(slot);
            ++posted;
        }
    }
    result.elapsed_ns = NowNs() - begin;
    return result;
}

}  // namespace rpma_bench

#endif  // RPMA_BENCH_DEPTH_H
