// The build-time probes and the native posting code. rdma-core 44 cannot
// post either native operation, so the posting code is exercised on a fake
// extended QP shaped like ibv_qp_ex (same member names and calls).
#include "rpma_core/src/provider/verbs/verbs_native_ops.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdint>
#include <string>

namespace rpma::provider::verbs::native {
namespace {

enum ProbeFlags { PROBE_PRESENT = 1 << 5 };

TEST(Probe, FindsAnEnumeratorThatExists) {
    EXPECT_EQ(RPMA_VERBS_ENUMERATOR_OR_ZERO(ProbeFlags, PROBE_PRESENT), 32u);
    EXPECT_EQ(RPMA_VERBS_ENUMERATOR_OR_ZERO(ibv_access_flags, IBV_ACCESS_REMOTE_READ),
              uint64_t{IBV_ACCESS_REMOTE_READ});
}

TEST(Probe, GivesZeroForAnEnumeratorThatDoesNot) {
    EXPECT_EQ(RPMA_VERBS_ENUMERATOR_OR_ZERO(ProbeFlags, PROBE_ABSENT), 0u);
}

TEST(Probe, BuildSupportNeedsEveryPiece) {
    EXPECT_EQ(kBuildHasFlush, HasWrFlush<ibv_qp_ex> && kSendOpsFlush && kAccessFlushGlobal &&
                                  kAccessFlushPersistent && kDeviceCapFlushGlobal &&
                                  kDeviceCapFlushPersistent);
    EXPECT_EQ(kBuildHasAtomicWrite,
              HasWrAtomicWrite<ibv_qp_ex> && kSendOpsAtomicWrite && kDeviceCapAtomicWrite);
}

// What the fake QP saw.
struct Recorded {
    std::string calls;
    uint32_t rkey = 0;
    uint64_t remote_addr = 0;
    size_t length = 0;
    uint8_t type = 0xff;
    uint8_t level = 0xff;
    const void *value = nullptr;
    int complete_result = 0;
};
Recorded recorded;

struct FakeQpEx {
    uint64_t wr_id = 0;
    unsigned int wr_flags = 0;
    void (*wr_start)(FakeQpEx *) = [](FakeQpEx *) { recorded.calls += "start,"; };
    void (*wr_flush)(FakeQpEx *, uint32_t, uint64_t, size_t, uint8_t, uint8_t) =
        [](FakeQpEx *, uint32_t rkey, uint64_t addr, size_t len, uint8_t type, uint8_t level) {
            recorded.calls += "flush,";
            recorded.rkey = rkey;
            recorded.remote_addr = addr;
            recorded.length = len;
            recorded.type = type;
            recorded.level = level;
        };
    void (*wr_atomic_write)(FakeQpEx *, uint32_t, uint64_t, const void *) =
        [](FakeQpEx *, uint32_t rkey, uint64_t addr, const void *value) {
            recorded.calls += "atomic_write,";
            recorded.rkey = rkey;
            recorded.remote_addr = addr;
            recorded.value = value;
        };
    int (*wr_complete)(FakeQpEx *) = [](FakeQpEx *) {
        recorded.calls += "complete,";
        return recorded.complete_result;
    };
};

struct QpWithoutNativeOps {};

class NativeOps : public ::testing::Test {
  protected:
    void SetUp() override { recorded = Recorded{}; }
};

TEST_F(NativeOps, PersistentFlushIsARangeFlushToThePersistenceDomain) {
    FakeQpEx qp;
    EXPECT_EQ(PostFlush(&qp, 42, /*signaled=*/true, 0xabc, 0x1000, 4096, FlushType::kPersistent),
              0);
    EXPECT_EQ(recorded.calls, "start,flush,complete,");
    EXPECT_EQ(qp.wr_id, 42u);
    EXPECT_EQ(qp.wr_flags, unsigned{IBV_SEND_SIGNALED});
    EXPECT_EQ(recorded.rkey, 0xabcu);
    EXPECT_EQ(recorded.remote_addr, 0x1000u);
    EXPECT_EQ(recorded.length, 4096u);
    EXPECT_EQ(recorded.type, kPlacementPersistent);
    EXPECT_EQ(recorded.level, kSelectivityRange);
}

TEST_F(NativeOps, VisibilityFlushIsAGlobalVisibilityFlush) {
    FakeQpEx qp;
    EXPECT_EQ(PostFlush(&qp, 1, /*signaled=*/false, 1, 2, 3, FlushType::kVisibility), 0);
    EXPECT_EQ(qp.wr_flags, 0u);
    EXPECT_EQ(recorded.type, kPlacementGlobal);
}

TEST_F(NativeOps, PostingReportsWhatCompletingThePostSays) {
    FakeQpEx qp;
    recorded.complete_result = ENOMEM;
    EXPECT_EQ(PostFlush(&qp, 1, true, 1, 2, 3, FlushType::kVisibility), ENOMEM);
    EXPECT_EQ(PostAtomicWrite(&qp, 1, true, 1, 2, "12345678"), ENOMEM);
}

TEST_F(NativeOps, AtomicWritePassesTheCallersEightBytes) {
    FakeQpEx qp;
    const char value[8] = {'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'};
    EXPECT_EQ(PostAtomicWrite(&qp, 7, /*signaled=*/true, 0x55, 0x2008, value), 0);
    EXPECT_EQ(recorded.calls, "start,atomic_write,complete,");
    EXPECT_EQ(qp.wr_id, 7u);
    EXPECT_EQ(qp.wr_flags, unsigned{IBV_SEND_SIGNALED});  // no fence natively
    EXPECT_EQ(recorded.rkey, 0x55u);
    EXPECT_EQ(recorded.remote_addr, 0x2008u);
    EXPECT_EQ(recorded.value, value);
}

TEST_F(NativeOps, QpsWithoutTheOperationsRefuseThem) {
    QpWithoutNativeOps qp;
    EXPECT_EQ(PostFlush(&qp, 1, true, 1, 2, 3, FlushType::kPersistent), EOPNOTSUPP);
    EXPECT_EQ(PostAtomicWrite(&qp, 1, true, 1, 2, "12345678"), EOPNOTSUPP);
}

}  // namespace
}  // namespace rpma::provider::verbs::native
