#include "rpma_core/src/provider/verbs/verbs_work_requests.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdint>

#include "tests/unit/log_capture.h"

namespace rpma::provider::verbs {
namespace {

constexpr uint64_t kRemote = 0x7f0000001000;
constexpr uint32_t kRkey = 0x1234;
constexpr uint64_t kWrId = 0xfeedface;

TEST(ApmFlushRead, ReadsEightBytesFromTheFlushedAddressIntoTheBuffer) {
    ibv_sge buffer{0x5000, kApmReadLength, 0x77};
    ibv_send_wr wr = ApmFlushRead(kRemote, kRkey, &buffer, /*signaled=*/true, kWrId);
    EXPECT_EQ(wr.opcode, IBV_WR_RDMA_READ);
    EXPECT_EQ(wr.wr.rdma.remote_addr, kRemote);
    EXPECT_EQ(wr.wr.rdma.rkey, kRkey);
    EXPECT_EQ(wr.sg_list, &buffer);
    EXPECT_EQ(wr.num_sge, 1);
    EXPECT_EQ(buffer.length, 8u);
    EXPECT_EQ(wr.wr_id, kWrId);
    EXPECT_EQ(wr.send_flags, unsigned{IBV_SEND_SIGNALED});
    EXPECT_EQ(wr.next, nullptr);
}

TEST(ApmFlushRead, UnsignaledAsksForNoCompletion) {
    ibv_sge buffer{0x5000, kApmReadLength, 0x77};
    EXPECT_EQ(ApmFlushRead(kRemote, kRkey, &buffer, false, kWrId).send_flags, 0u);
}

TEST(FencedInlineWrite, WritesTheEightBytesInlineBehindEarlierReads) {
    const char value[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    ibv_sge sge{};
    ibv_send_wr wr = FencedInlineWrite(kRemote, kRkey, value, &sge, /*signaled=*/true, kWrId);
    EXPECT_EQ(wr.opcode, IBV_WR_RDMA_WRITE);
    EXPECT_EQ(wr.send_flags, unsigned{IBV_SEND_INLINE | IBV_SEND_FENCE | IBV_SEND_SIGNALED});
    EXPECT_EQ(wr.wr.rdma.remote_addr, kRemote);
    EXPECT_EQ(wr.wr.rdma.rkey, kRkey);
    EXPECT_EQ(wr.sg_list, &sge);
    EXPECT_EQ(wr.num_sge, 1);
    EXPECT_EQ(sge.addr, reinterpret_cast<uintptr_t>(value));
    EXPECT_EQ(sge.length, 8u);
    EXPECT_EQ(wr.wr_id, kWrId);
}

TEST(FencedInlineWrite, UnsignaledKeepsInlineAndFence) {
    const char value[8] = {};
    ibv_sge sge{};
    EXPECT_EQ(FencedInlineWrite(kRemote, kRkey, value, &sge, false, kWrId).send_flags,
              unsigned{IBV_SEND_INLINE | IBV_SEND_FENCE});
}

TEST(ReportPostFailure, SuccessIsSilent) {
    rpma_test::LogCapture log;
    EXPECT_EQ(ReportPostFailure(0, "a send"), 0);
    EXPECT_EQ(log.Text(), "");
}

TEST(ReportPostFailure, FullQueueSaysToPollOrGrowTheQueue) {
    rpma_test::LogCapture log;
    EXPECT_EQ(ReportPostFailure(ENOMEM, "a send"), ENOMEM);
    EXPECT_NE(log.Text().find("a send"), std::string::npos) << log.Text();
    EXPECT_NE(log.Text().find("queue is full"), std::string::npos) << log.Text();
}

}  // namespace
}  // namespace rpma::provider::verbs
