// The check after a cut, once rpmad is up again on the same disk: every
// acknowledged record read back through the data plane, and the catalog
// consistent -- every listed region healthy, of its size and readable from
// end to end; every region whose create was acknowledged there, every one
// whose delete was acknowledged gone, one in flight either whole or absent.
#ifndef TESTS_POWERCUT_VERIFY_BOOT_H
#define TESTS_POWERCUT_VERIFY_BOOT_H

#include <cstdint>
#include <string>

#include "tests/powercut/harness_state.h"

namespace powercut {

// Checks the daemon after cut `cycle`; prints "VERIFY cycle=...
// acknowledged=... verified=... lost=..." and returns 0 when nothing
// acknowledged was lost and the catalog is consistent, else 1. Then
// deletes the cycle's churn regions, so the next cycle starts from the
// records region alone.
int VerifyAfterCut(const Endpoints &endpoints, const std::string &state_dir, uint32_t cycle);

}  // namespace powercut

#endif  // TESTS_POWERCUT_VERIFY_BOOT_H
