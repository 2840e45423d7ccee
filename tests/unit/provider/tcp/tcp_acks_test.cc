// Acknowledgements (tcp_acks.h) against a socket pair: what goes out, when,
// and in which order, for the target's ACKs; when the initiator's requests
// ask for one.
#include "rpma_core/src/provider/tcp/tcp_acks.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "rpma_core/src/provider/tcp/tcp_unique_fd.h"
#include "rpma_core/src/provider/tcp/tcp_wire.h"
#include "tests/unit/provider/tcp/tcp_socket_pair.h"

namespace rpma::provider::tcp {
namespace {

class AcksTest : public ::testing::Test {
  protected:
    void SetUp() override { ASSERT_TRUE(testing::OpenSocketPair(&ours_, &peer_)); }

    // Every header the peer has received so far.
    std::vector<wire::Header> Received() { return testing::ReceivedHeaders(peer_.Get()); }

    void Flush() {
        ASSERT_EQ(out_.Flush(ours_.Get()).status, OutboundQueue::FlushStatus::kDrained);
    }

    UniqueFd ours_;
    UniqueFd peer_;
    OutboundQueue out_;
    Acknowledgements acks_;
};

TEST_F(AcksTest, RequestsAreAppliedInOrder) {
    EXPECT_TRUE(acks_.InOrder(1));
    EXPECT_FALSE(acks_.InOrder(2));
    acks_.Applied(false);
    EXPECT_FALSE(acks_.InOrder(1)) << "each request once";
    EXPECT_TRUE(acks_.InOrder(2));
}

TEST_F(AcksTest, NothingGoesOutWhenNothingIsOwedOrAsked) {
    acks_.BeforeFlush(ours_.Get(), out_);
    EXPECT_TRUE(out_.Empty());
    EXPECT_TRUE(Received().empty());
}

TEST_F(AcksTest, AnUnrequestedAckWaitsToRideAlong) {
    acks_.Applied(false);
    acks_.BeforeFlush(ours_.Get(), out_);
    EXPECT_TRUE(Received().empty()) << "no message to ride along with: nothing sent";
    EXPECT_TRUE(acks_.Owed());
    EXPECT_EQ(acks_.Take(), 1u);
    EXPECT_FALSE(acks_.Owed());
}

TEST_F(AcksTest, ARequestedAckGoesAtOnceWhenNothingIsQueued) {
    acks_.Applied(false);
    acks_.Applied(true);
    acks_.BeforeFlush(ours_.Get(), out_);
    EXPECT_TRUE(out_.Empty()) << "sent straight, not queued";
    const std::vector<wire::Header> got = Received();
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].opcode, wire::Opcode::kAck);
    EXPECT_EQ(got[0].sequence, 2u) << "cumulative";
    EXPECT_FALSE(acks_.Requested());
    EXPECT_FALSE(acks_.Owed());
}

// An ACK never overtakes bytes queued before it: the peer must see a
// response (or a goodbye) before the ACK that follows it.
TEST_F(AcksTest, AnAckNeverOvertakesWhatIsQueued) {
    OutboundMessage goodbye;
    goodbye.header.opcode = wire::Opcode::kDisconnect;
    out_.Push(std::move(goodbye));
    acks_.Applied(true);
    acks_.BeforeFlush(ours_.Get(), out_);
    EXPECT_TRUE(Received().empty()) << "nothing sent around the queue";
    Flush();
    const std::vector<wire::Header> got = Received();
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(got[0].opcode, wire::Opcode::kDisconnect);
    EXPECT_EQ(got[1].opcode, wire::Opcode::kAck);
    EXPECT_EQ(got[1].sequence, 1u);
}

TEST_F(AcksTest, QueuedAcksMergeIntoOne) {
    acks_.Applied(false);
    acks_.Queue(out_);
    acks_.Applied(false);
    acks_.Queue(out_);
    Flush();
    const std::vector<wire::Header> got = Received();
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].sequence, 2u);
}

// ACK_REQUEST, or a heartbeat: answered even when nothing is new.
TEST_F(AcksTest, AForcedAckRepeatsTheLast) {
    acks_.Applied(true);
    acks_.BeforeFlush(ours_.Get(), out_);
    ASSERT_EQ(Received().size(), 1u);
    acks_.Force();
    acks_.BeforeFlush(ours_.Get(), out_);
    const std::vector<wire::Header> got = Received();
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].sequence, 1u);
    acks_.BeforeFlush(ours_.Get(), out_);
    EXPECT_TRUE(Received().empty()) << "once per request";
}

TEST_F(AcksTest, AQueuedAckWithNothingDueQueuesNothing) {
    acks_.Queue(out_);
    EXPECT_TRUE(out_.Empty());
}

TEST_F(AcksTest, TheInitiatorAsksEveryHalfSendQueue) {
    constexpr uint32_t kSendQueue = 8;
    for (int round = 0; round < 3; ++round) {
        EXPECT_FALSE(acks_.AskFor(false, 1, false, kSendQueue));
        EXPECT_FALSE(acks_.AskFor(false, 1, false, kSendQueue));
        EXPECT_FALSE(acks_.AskFor(false, 1, false, kSendQueue));
        EXPECT_TRUE(acks_.AskFor(false, 1, false, kSendQueue)) << "the 4th of 8";
    }
}

TEST_F(AcksTest, SignaledPartedAndReadRequestsRestartTheCount) {
    constexpr uint32_t kSendQueue = 8;
    EXPECT_FALSE(acks_.AskFor(false, 1, false, kSendQueue));
    EXPECT_FALSE(acks_.AskFor(false, 1, false, kSendQueue));
    EXPECT_TRUE(acks_.AskFor(true, 1, false, kSendQueue)) << "signaled";
    EXPECT_FALSE(acks_.AskFor(false, 1, false, kSendQueue));
    EXPECT_TRUE(acks_.AskFor(false, 3, false, kSendQueue)) << "in parts";
    EXPECT_FALSE(acks_.AskFor(false, 1, false, kSendQueue));
    EXPECT_FALSE(acks_.AskFor(false, 1, true, kSendQueue)) << "a READ's response answers";
    EXPECT_FALSE(acks_.AskFor(false, 1, false, kSendQueue));
    EXPECT_FALSE(acks_.AskFor(false, 1, false, kSendQueue));
    EXPECT_FALSE(acks_.AskFor(false, 1, false, kSendQueue));
    EXPECT_TRUE(acks_.AskFor(false, 1, false, kSendQueue));
}

TEST_F(AcksTest, ASendQueueOfOneAsksEveryTime) {
    EXPECT_TRUE(acks_.AskFor(false, 1, false, 1));
    EXPECT_TRUE(acks_.AskFor(false, 1, false, 1));
}

}  // namespace
}  // namespace rpma::provider::tcp
