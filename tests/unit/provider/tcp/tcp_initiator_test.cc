// Initiator alone, against one end of a socket pair as its peer: requests
// are sequenced and asked to be acknowledged as the policy says, an ACK
// completes them in posting order, an ACK or answer for more than was posted
// is a protocol error (never an underflow of the send queue), a READ's
// response that comes after its request was flushed, or after the QP went,
// is refused or dropped safely, and a request posted while the connection is
// broken completes flushed in order; a post with `more` (RPMA_EXT_F_MORE)
// waits for the next one.
#include "rpma_core/src/provider/tcp/tcp_initiator.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "rpma_core/src/provider/tcp/tcp_completion_queue.h"
#include "rpma_core/src/provider/tcp/tcp_unique_fd.h"
#include "rpma_core/src/provider/tcp/tcp_wire.h"
#include "tests/unit/provider/tcp/tcp_socket_pair.h"
#include "tests/unit/provider/tcp/tcp_test_support.h"

namespace rpma::provider::tcp {
namespace {

constexpr uint32_t kDepth = 8;
constexpr bool kLive = true;  // the connection is established
using Kind = Initiator::Verdict::Kind;

class InitiatorTest : public ::testing::Test {
  protected:
    void SetUp() override {
        ASSERT_TRUE(testing::OpenSocketPair(&ours_, &peer_));
        initiator_.Attach(kDepth, /*qp_num=*/7, &cq_);
    }

    // An 8-byte atomic write: a request with its payload inline.
    Initiator::Posted PostWrite(uint64_t wr_id, bool signaled, int fd, bool more = false) {
        PendingWr wr;
        wr.wr_id = wr_id;
        wr.opcode = IBV_WC_RDMA_WRITE;
        wr.signaled = signaled;
        OutboundMessage message;
        message.header.opcode = wire::Opcode::kAtomicWrite;
        message.header.length = wire::kAtomicWriteSize;
        message.inline_length = wire::kAtomicWriteSize;
        return initiator_.Post(std::move(wr), std::move(message), 0, fd, more);
    }
    Initiator::Posted PostRead(uint64_t wr_id, uint32_t length, bool more = false) {
        PendingWr wr;
        wr.wr_id = wr_id;
        wr.opcode = IBV_WC_RDMA_READ;
        wr.signaled = true;
        wr.is_read = true;
        wr.byte_len = length;
        OutboundMessage message;
        message.header.opcode = wire::Opcode::kReadRequest;
        message.header.length = length;
        return initiator_.Post(std::move(wr), std::move(message), length, ours_.Get(), more);
    }

    // `wr` as a WRITE of `length` bytes (no payload attached).
    Initiator::Posted PostAsWrite(PendingWr wr, uint32_t length, int fd, bool more = false) {
        OutboundMessage message;
        message.header.opcode = wire::Opcode::kWrite;
        message.header.length = length;
        return initiator_.Post(std::move(wr), std::move(message), length, fd, more);
    }

    Kind Ack(uint64_t sequence) { return initiator_.OnAck(sequence, kLive).kind; }
    // The header of the peer's answer to READ `sequence`, `length` bytes.
    static wire::Header ReadResponse(uint64_t sequence, uint32_t length) {
        wire::Header response;
        response.opcode = wire::Opcode::kReadResponse;
        response.sequence = sequence;
        response.length = length;
        return response;
    }
    Initiator::Verdict Nak(uint64_t sequence, uint32_t status = IBV_WC_REM_ACCESS_ERR) {
        wire::Header nak;
        nak.opcode = wire::Opcode::kNak;
        nak.sequence = sequence;
        nak.rkey = status;
        return initiator_.OnNak(nak, kLive);
    }

    // The headers the peer got so far.
    std::vector<wire::Header> Received() { return testing::ReceivedHeaders(peer_.Get()); }

    std::vector<ibv_wc> Completions() { return tcp::testing::DrainCompletions(cq_); }

    UniqueFd ours_;
    UniqueFd peer_;
    CompletionQueue cq_{64, nullptr};
    OutboundQueue out_;
    Acknowledgements acks_;
    InlineLease lease_;
    Initiator initiator_{&out_, &acks_, &lease_};
};

TEST_F(InitiatorTest, SignaledRequestsGoAtOnceAskingForAnAckAndCompleteInOrder) {
    for (uint64_t id = 1; id <= 3; ++id)
        EXPECT_EQ(PostWrite(id, /*signaled=*/true, ours_.Get()), Initiator::Posted::kSent);
    EXPECT_TRUE(out_.Empty());
    const std::vector<wire::Header> sent = Received();
    ASSERT_EQ(sent.size(), 3u);
    for (uint64_t k = 0; k < 3; ++k) {
        EXPECT_EQ(sent[k].sequence, k + 1);
        EXPECT_NE(sent[k].flags & wire::kAckRequested, 0);
    }
    // A cumulative ACK of 2 completes 1 and 2, in posting order; 3 waits.
    EXPECT_EQ(Ack(2), Kind::kDone);
    std::vector<ibv_wc> done = Completions();
    ASSERT_EQ(done.size(), 2u);
    EXPECT_EQ(done[0].wr_id, 1u);
    EXPECT_EQ(done[1].wr_id, 2u);
    EXPECT_EQ(done[0].qp_num, 7u);
    // A repeated (older) ACK completes nothing more and is no error.
    EXPECT_EQ(Ack(2), Kind::kDone);
    EXPECT_TRUE(Completions().empty());
    EXPECT_EQ(Ack(3), Kind::kDone);
    done = Completions();
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(done[0].wr_id, 3u);
    EXPECT_EQ(done[0].status, IBV_WC_SUCCESS);
    EXPECT_TRUE(initiator_.queue().Empty());
}

TEST_F(InitiatorTest, UnsignaledWritesAskForAnAckOnlyWhenHalfTheQueueWaits) {
    for (uint64_t id = 1; id < kDepth / 2; ++id)
        EXPECT_EQ(PostWrite(id, /*signaled=*/false, ours_.Get()), Initiator::Posted::kMayWaitBell)
            << "an unsignaled write waits for the doorbell or the connection's progress";
    EXPECT_EQ(out_.Size(), kDepth / 2 - 1);
    EXPECT_EQ(PostWrite(kDepth / 2, /*signaled=*/false, ours_.Get()), Initiator::Posted::kQueued)
        << "behind queued messages it never jumps the queue";
    EXPECT_EQ(Received().size(), 0u);
    ASSERT_EQ(out_.Flush(ours_.Get()).status, OutboundQueue::FlushStatus::kDrained);
    const std::vector<wire::Header> sent = Received();
    ASSERT_EQ(sent.size(), kDepth / 2);
    for (size_t k = 0; k < sent.size(); ++k) {
        EXPECT_EQ(sent[k].sequence, k + 1);
        EXPECT_EQ(sent[k].flags & wire::kAckRequested,
                  k + 1 == sent.size() ? wire::kAckRequested : 0)
            << k;
    }
    EXPECT_EQ(Ack(kDepth / 2), Kind::kDone);
    EXPECT_TRUE(Completions().empty()) << "unsignaled";
    EXPECT_TRUE(initiator_.queue().Empty());
}

TEST_F(InitiatorTest, AnAckForMoreThanWasPostedIsAProtocolErrorNotAnUnderflow) {
    EXPECT_EQ(PostWrite(1, true, ours_.Get()), Initiator::Posted::kSent);
    EXPECT_EQ(PostWrite(2, true, ours_.Get()), Initiator::Posted::kSent);
    EXPECT_EQ(Ack(3), Kind::kProtocolError);
    EXPECT_EQ(Ack(UINT64_MAX), Kind::kProtocolError);
    EXPECT_EQ(Nak(5).kind, Kind::kProtocolError);
    EXPECT_EQ(Nak(0).kind, Kind::kProtocolError);
    EXPECT_TRUE(Completions().empty()) << "a refused answer completes nothing";
    EXPECT_FALSE(initiator_.queue().Empty());
    // The queue is intact: the honest ACK still completes both.
    EXPECT_EQ(Ack(2), Kind::kDone);
    EXPECT_EQ(Completions().size(), 2u);
    // And on an empty queue, any ACK beyond the last request is refused.
    EXPECT_EQ(Ack(3), Kind::kProtocolError);
    EXPECT_EQ(Ack(2), Kind::kDone);
}

TEST_F(InitiatorTest, AnAckNeverAnswersARead) {
    EXPECT_EQ(PostWrite(1, true, ours_.Get()), Initiator::Posted::kSent);
    EXPECT_EQ(PostRead(2, 64), Initiator::Posted::kSent);
    const std::vector<wire::Header> sent = Received();
    ASSERT_EQ(sent.size(), 2u);
    EXPECT_EQ(sent[1].flags & wire::kAckRequested, 0) << "its response answers a READ";
    EXPECT_EQ(Ack(2), Kind::kProtocolError) << "an ACK for a READ whose data never came";
    // The write before it was completed on the way, the READ still waits.
    ASSERT_EQ(Completions().size(), 1u);
    wire::Header response = ReadResponse(2, 64);
    SegmentList destination;
    EXPECT_EQ(initiator_.OnReadResponse(response, kLive, /*has_qp=*/true, &destination).kind,
              Kind::kReadPayload);
    EXPECT_EQ(initiator_.OnReadResponsePayload().kind, Kind::kDone);
    const std::vector<ibv_wc> done = Completions();
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(done[0].wr_id, 2u);
    EXPECT_EQ(done[0].opcode, IBV_WC_RDMA_READ);
}

TEST_F(InitiatorTest, AReadResponseThatDoesNotMatchItsReadIsRefused) {
    EXPECT_EQ(PostRead(1, 64), Initiator::Posted::kSent);
    wire::Header response = ReadResponse(1, 32);
    SegmentList destination;
    EXPECT_EQ(initiator_.OnReadResponse(response, kLive, true, &destination).kind,
              Kind::kProtocolError);
    response.sequence = 2;
    response.length = 64;
    EXPECT_EQ(initiator_.OnReadResponse(response, kLive, true, &destination).kind,
              Kind::kProtocolError);
    EXPECT_TRUE(Completions().empty());
}

TEST_F(InitiatorTest, ALateReadResponseIsDroppedSafely) {
    EXPECT_EQ(PostRead(1, 64), Initiator::Posted::kSent);
    // The connection broke: the READ completes flushed...
    initiator_.queue().FlushAll(IBV_WC_WR_FLUSH_ERR);
    std::vector<ibv_wc> done = Completions();
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(done[0].status, IBV_WC_WR_FLUSH_ERR);
    // ...and its response, arriving after, completes nothing twice.
    wire::Header response = ReadResponse(1, 64);
    SegmentList destination;
    EXPECT_EQ(initiator_.OnReadResponse(response, kLive, true, &destination).kind,
              Kind::kProtocolError);
    EXPECT_TRUE(destination.empty()) << "its payload lands nowhere";
    EXPECT_TRUE(Completions().empty());
}

TEST_F(InitiatorTest, AReadResponseAfterTheQpWentIsDropped) {
    EXPECT_EQ(PostRead(1, 64), Initiator::Posted::kSent);
    initiator_.Detach();
    wire::Header response = ReadResponse(1, 64);
    SegmentList destination;
    EXPECT_EQ(initiator_.OnReadResponse(response, kLive, /*has_qp=*/false, &destination).kind,
              Kind::kDropPayload);
    EXPECT_TRUE(destination.empty());
    EXPECT_TRUE(Completions().empty()) << "a destroyed QP reports nothing more";
}

TEST_F(InitiatorTest, APostWhileBrokenCompletesFlushedBehindEarlierOnes) {
    EXPECT_EQ(PostWrite(1, false, -1), Initiator::Posted::kMayWaitBell);
    PendingWr late;
    late.wr_id = 2;
    // Disconnecting: queued behind the first, never sent, flushed by the
    // disconnect, signaled or not.
    initiator_.PostWhileBroken(std::move(late), /*disconnecting=*/true);
    EXPECT_TRUE(Completions().empty());
    initiator_.queue().FlushAll(IBV_WC_WR_FLUSH_ERR);
    std::vector<ibv_wc> done = Completions();
    ASSERT_EQ(done.size(), 2u) << "a flushed WR is reported, signaled or not, as verbs does";
    EXPECT_EQ(done[0].wr_id, 1u);
    EXPECT_EQ(done[1].wr_id, 2u);
    // Broken: completed at once.
    PendingWr after;
    after.wr_id = 3;
    initiator_.PostWhileBroken(std::move(after), /*disconnecting=*/false);
    done = Completions();
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(done[0].wr_id, 3u);
    EXPECT_EQ(done[0].status, IBV_WC_WR_FLUSH_ERR);
}

TEST_F(InitiatorTest, APendingAckRidesAlongInFrontOfARequest) {
    acks_.Applied(/*ack_requested=*/false);  // as target: the peer's request 1
    EXPECT_EQ(PostWrite(1, true, ours_.Get()), Initiator::Posted::kSent);
    const std::vector<wire::Header> sent = Received();
    ASSERT_EQ(sent.size(), 2u);
    EXPECT_EQ(sent[0].opcode, wire::Opcode::kAck);
    EXPECT_EQ(sent[0].sequence, 1u);
    EXPECT_EQ(sent[1].opcode, wire::Opcode::kAtomicWrite);
    EXPECT_FALSE(acks_.Owed());
}

TEST_F(InitiatorTest, APostWithMoreWaitsForTheNextAndBothGoInOneSend) {
    // Signaled (it asks for an ACK), which alone would go at once.
    EXPECT_EQ(PostWrite(1, true, ours_.Get(), /*more=*/true), Initiator::Posted::kHeld);
    EXPECT_TRUE(lease_.DoorbellPending());
    EXPECT_TRUE(Received().empty()) << "held for the next post";
    // The next post queues behind it; the connection's progress sends the
    // queue, both in one sendmsg (the peer reads them at once).
    EXPECT_EQ(PostWrite(2, true, ours_.Get()), Initiator::Posted::kQueued);
    EXPECT_EQ(out_.Size(), 2u);
    EXPECT_EQ(out_.Flush(ours_.Get()).status, OutboundQueue::FlushStatus::kDrained);
    const std::vector<wire::Header> sent = Received();
    ASSERT_EQ(sent.size(), 2u);
    EXPECT_EQ(sent[0].sequence, 1u);
    EXPECT_EQ(sent[1].sequence, 2u);
    // A deadline that passes meanwhile would have sent it at once.
    EXPECT_TRUE(lease_.DoorbellDue(InlineLease::Clock::now()));
}

TEST_F(InitiatorTest, MoreIsIgnoredForReadsAndForWhatIsAlreadyABatch) {
    EXPECT_EQ(PostRead(1, 8, /*more=*/true), Initiator::Posted::kSent) << "a read goes at once";
    PendingWr wr;
    wr.wr_id = 2;
    wr.opcode = IBV_WC_RDMA_WRITE;
    wr.signaled = true;
    EXPECT_NE(PostAsWrite(wr, InlineLease::kDoorbellBatchBytes + 1, -1, /*more=*/true),
              Initiator::Posted::kHeld)
        << "more than a small batch is worth its own sendmsg";
    EXPECT_FALSE(lease_.DoorbellPending());
}

TEST_F(InitiatorTest, ASkipAfterAPostIsTakenOnce) {
    EXPECT_EQ(PostWrite(1, true, -1), Initiator::Posted::kQueued);
    EXPECT_TRUE(initiator_.TakeSkip()) << "posted with nothing in flight";
    EXPECT_FALSE(initiator_.TakeSkip());
    EXPECT_EQ(PostWrite(2, true, -1), Initiator::Posted::kQueued);
    EXPECT_FALSE(initiator_.TakeSkip()) << "an earlier answer may be in already";
}

TEST_F(InitiatorTest, ANakCompletesWhatCameBeforeItAndRefusesItsOwnRequest) {
    for (uint64_t id = 1; id <= 3; ++id)
        EXPECT_EQ(PostWrite(id, /*signaled=*/true, ours_.Get()), Initiator::Posted::kSent);
    const Initiator::Verdict verdict = Nak(2, IBV_WC_REM_ACCESS_ERR);
    EXPECT_EQ(verdict.kind, Kind::kRefused);
    EXPECT_EQ(verdict.status, IBV_WC_REM_ACCESS_ERR);
    const std::vector<ibv_wc> done = Completions();
    ASSERT_EQ(done.size(), 1u) << "only what the target applied before the refused request";
    EXPECT_EQ(done[0].wr_id, 1u);
    EXPECT_EQ(done[0].status, IBV_WC_SUCCESS);
    // The refused request stays at the front for the connection's flush to
    // complete with the NAK's status.
    ASSERT_NE(initiator_.queue().Front(), nullptr);
    EXPECT_EQ(initiator_.queue().Front()->wr_id, 2u);
}

TEST_F(InitiatorTest, ANakWithAStatusItMayNotCarryReportsARemoteOperationError) {
    EXPECT_EQ(PostWrite(1, true, ours_.Get()), Initiator::Posted::kSent);
    const Initiator::Verdict verdict = Nak(1, IBV_WC_SUCCESS);
    EXPECT_EQ(verdict.kind, Kind::kRefused);
    EXPECT_EQ(verdict.status, IBV_WC_REM_OP_ERR);
}

TEST_F(InitiatorTest, AnswersOutsideALiveConnectionAreProtocolErrorsAndCompleteNothing) {
    EXPECT_EQ(PostWrite(1, true, ours_.Get()), Initiator::Posted::kSent);
    EXPECT_EQ(PostRead(2, 64), Initiator::Posted::kSent);
    EXPECT_EQ(initiator_.OnAck(1, /*live=*/false).kind, Kind::kProtocolError);
    wire::Header nak;
    nak.opcode = wire::Opcode::kNak;
    nak.sequence = 1;
    EXPECT_EQ(initiator_.OnNak(nak, /*live=*/false).kind, Kind::kProtocolError);
    wire::Header response = ReadResponse(2, 64);
    SegmentList destination;
    const Initiator::Verdict verdict =
        initiator_.OnReadResponse(response, /*live=*/false, /*has_qp=*/true, &destination);
    EXPECT_EQ(verdict.kind, Kind::kProtocolError);
    EXPECT_NE(verdict.why, nullptr) << "the log says why";
    EXPECT_TRUE(destination.empty());
    EXPECT_TRUE(Completions().empty());
}

TEST_F(InitiatorTest, AnAckThatBringsARequestWithALocalErrorToTheFrontFailsIt) {
    EXPECT_EQ(PostWrite(1, /*signaled=*/true, ours_.Get()), Initiator::Posted::kSent);
    PendingWr bad;
    bad.wr_id = 2;
    bad.signaled = true;
    bad.local_error = IBV_WC_LOC_PROT_ERR;
    EXPECT_EQ(PostAsWrite(bad, 0, ours_.Get()), Initiator::Posted::kQueued);
    ASSERT_EQ(out_.Size(), 1u) << "the request ahead is asked for its ACK";
    EXPECT_EQ(initiator_.CheckFront().kind, Kind::kDone) << "not at the front yet";
    const Initiator::Verdict verdict = initiator_.OnAck(1, kLive);
    EXPECT_EQ(verdict.kind, Kind::kFail);
    EXPECT_EQ(verdict.status, IBV_WC_LOC_PROT_ERR);
    const std::vector<ibv_wc> done = Completions();
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(done[0].wr_id, 1u);
}

TEST_F(InitiatorTest, AnAckOutOfOrderWithAReadAheadCompletesNothingBehindTheRead) {
    EXPECT_EQ(PostRead(1, 64), Initiator::Posted::kSent);
    EXPECT_EQ(PostWrite(2, true, ours_.Get()), Initiator::Posted::kSent);
    // The target answers in order: an ACK of the write before the READ's
    // response is a protocol error, and the write is not completed early.
    EXPECT_EQ(Ack(2), Kind::kProtocolError);
    EXPECT_TRUE(Completions().empty());
    wire::Header response = ReadResponse(1, 64);
    SegmentList destination;
    ASSERT_EQ(initiator_.OnReadResponse(response, kLive, true, &destination).kind,
              Kind::kReadPayload);
    EXPECT_EQ(initiator_.OnReadResponsePayload().kind, Kind::kDone);
    EXPECT_EQ(Ack(2), Kind::kDone);
    const std::vector<ibv_wc> done = Completions();
    ASSERT_EQ(done.size(), 2u);
    EXPECT_EQ(done[0].wr_id, 1u);
    EXPECT_EQ(done[1].wr_id, 2u);
}

}  // namespace
}  // namespace rpma::provider::tcp
