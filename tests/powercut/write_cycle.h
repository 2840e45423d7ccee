// One cycle's writes: records appended to the records region through the
// client library, each logged once acknowledged; optionally regions created
// and deleted meanwhile; and the power cut at a random moment among them.
#ifndef TESTS_POWERCUT_WRITE_CYCLE_H
#define TESTS_POWERCUT_WRITE_CYCLE_H

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "tests/powercut/harness_state.h"

namespace powercut {

struct WriteOptions {
    Endpoints endpoints;
    std::string state_dir;
    uint32_t cycle = 0;
    // What rpmad was configured with ("apm" or "gpspm"); checked against
    // what the session reports, so a cycle never tests the other method.
    std::string persistence;
    // Create and delete regions while writing (the cut may land in one).
    bool churn = false;
    // qemu: SIGKILLed cut_after_ms after the first acknowledged record (in
    // a churn cycle, then at a random point of the next create or delete).
    pid_t cut_pid = 0;
    int cut_after_ms = 0;
    uint64_t seed = 0;
    // Write without persisting, logging the records as acknowledged all the
    // same: the harness must then report them lost.
    bool no_persist = false;
    uint64_t records_region_size = 0;
};

// Runs the cycle; prints "WRITE cycle=... acknowledged=... in_flight_at_cut=..."
// and returns 0 when the writes went on until the cut, 1 otherwise (a write
// or a region change that failed before the cut, a full region).
int RunWriteCycle(const WriteOptions &options);

}  // namespace powercut

#endif  // TESTS_POWERCUT_WRITE_CYCLE_H
