// SendQueue (tcp_send_queue.h), the initiator's outstanding work requests,
// on its own with a real completion queue: the answers a target may give
// and the ones it may not (an ACK beyond what was sent — the send queue's
// underflow —, an ACK for a READ, a response for a WR already completed).
#include "rpma_core/src/provider/tcp/tcp_send_queue.h"

#include <gtest/gtest.h>

#include <vector>

#include "rpma_core/src/provider/tcp/tcp_completion_queue.h"

namespace rpma::provider::tcp {
namespace {

constexpr uint32_t kDepth = 8;
constexpr uint32_t kQpNum = 42;

PendingWr Write(uint64_t wr_id, bool signaled) {
    PendingWr wr;
    wr.wr_id = wr_id;
    wr.signaled = signaled;
    return wr;
}

PendingWr Read(uint64_t wr_id) {
    PendingWr wr = Write(wr_id, true);
    wr.opcode = IBV_WC_RDMA_READ;
    wr.is_read = true;
    return wr;
}

class SendQueueTest : public ::testing::Test {
  protected:
    void SetUp() override { sq_.Attach(kDepth, kQpNum, &cq_); }

    std::vector<ibv_wc> Completions() {
        std::vector<ibv_wc> all;
        ibv_wc wc[kDepth];
        for (int n; (n = cq_.Poll(kDepth, wc)) > 0;)
            all.insert(all.end(), wc, wc + n);
        return all;
    }

    CompletionQueue cq_{static_cast<int>(kDepth), nullptr};
    SendQueue sq_;
};

TEST_F(SendQueueTest, ACumulativeAckCompletesInOrderAndOnlySignaledOnesShow) {
    EXPECT_EQ(sq_.Push(Write(1, false)), 1u);
    EXPECT_EQ(sq_.Push(Write(2, true)), 2u);
    EXPECT_EQ(sq_.Push(Write(3, true)), 3u);
    ASSERT_TRUE(sq_.Acknowledge(2));
    const std::vector<ibv_wc> done = Completions();
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(done[0].wr_id, 2u);
    EXPECT_EQ(done[0].status, IBV_WC_SUCCESS);
    EXPECT_EQ(done[0].qp_num, kQpNum);
    EXPECT_FALSE(sq_.Empty()) << "3 still waits";
}

// Underflow: the peer acknowledges a request it never got.
TEST_F(SendQueueTest, AnAckBeyondWhatWasSentIsAViolationAndCompletesNothing) {
    sq_.Push(Write(1, true));
    EXPECT_FALSE(sq_.Acknowledge(2));
    EXPECT_TRUE(Completions().empty());
    EXPECT_FALSE(sq_.Empty());
    SendQueue empty;
    empty.Attach(kDepth, kQpNum, &cq_);
    EXPECT_FALSE(empty.Acknowledge(1)) << "nothing was ever sent";
}

TEST_F(SendQueueTest, AnAckNeverAnswersForARead) {
    sq_.Push(Read(1));
    EXPECT_FALSE(sq_.Acknowledge(1)) << "a READ's data never came";
    EXPECT_TRUE(Completions().empty());
    EXPECT_TRUE(sq_.Acknowledge(0)) << "an ACK of nothing new is no violation";
}

TEST_F(SendQueueTest, AReadResponseCompletesWhatPrecedesIt) {
    sq_.Push(Write(1, true));
    sq_.Push(Read(2));
    ASSERT_TRUE(sq_.CompleteBefore(2));
    ASSERT_NE(sq_.Front(), nullptr);
    EXPECT_EQ(sq_.Front()->wr_id, 2u);
    sq_.CompleteFront(IBV_WC_SUCCESS);
    const std::vector<ibv_wc> done = Completions();
    ASSERT_EQ(done.size(), 2u);
    EXPECT_EQ(done[0].wr_id, 1u);
    EXPECT_EQ(done[1].wr_id, 2u);
    EXPECT_EQ(done[1].opcode, IBV_WC_RDMA_READ);
}

// A late response: for a READ already completed (or one that never was).
TEST_F(SendQueueTest, AResponseForAWrNoLongerThereIsAViolation) {
    sq_.Push(Read(1));
    ASSERT_TRUE(sq_.CompleteBefore(1));
    sq_.CompleteFront(IBV_WC_SUCCESS);
    EXPECT_FALSE(sq_.CompleteBefore(1)) << "answered already";
    EXPECT_FALSE(sq_.CompleteBefore(0));
    EXPECT_FALSE(sq_.CompleteBefore(5)) << "never sent";
}

// The QP was destroyed with a READ outstanding: whatever still arrives for
// it completes nothing into the CQ the application may reuse.
TEST_F(SendQueueTest, NothingCompletesAfterTheQueuePairWent) {
    sq_.Push(Read(1));
    sq_.Detach();
    EXPECT_TRUE(sq_.Empty());
    sq_.CompleteFront(IBV_WC_SUCCESS);
    EXPECT_FALSE(sq_.CompleteBefore(1));
    EXPECT_TRUE(Completions().empty());
}

TEST_F(SendQueueTest, AFailureCompletesTheFrontWithItsStatusAndFlushesTheRest) {
    sq_.Push(Write(1, false));
    sq_.Push(Write(2, false));
    sq_.FlushAll(IBV_WC_RETRY_EXC_ERR);
    const std::vector<ibv_wc> done = Completions();
    ASSERT_EQ(done.size(), 2u) << "errors complete unsignaled WRs too";
    EXPECT_EQ(done[0].status, IBV_WC_RETRY_EXC_ERR);
    EXPECT_EQ(done[1].status, IBV_WC_WR_FLUSH_ERR);
    EXPECT_TRUE(sq_.ErrorPending());
    EXPECT_EQ(sq_.Push(Write(3, true)), 0u) << "not transmitted after the error";
}

TEST_F(SendQueueTest, AReadInPartsHoldsASlotPerPart) {
    PendingWr read = Read(1);
    read.parts = 3;
    EXPECT_EQ(sq_.Push(std::move(read)), 3u) << "the last part's sequence";
    EXPECT_FALSE(sq_.Full(kDepth - 3));
    EXPECT_TRUE(sq_.Full(kDepth - 2));
}

}  // namespace
}  // namespace rpma::provider::tcp
