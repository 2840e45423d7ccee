// Target alone, without sockets: the peer's requests are applied in order,
// each once; a request that arrives after this side stopped applying is
// dropped and never answered; a SEND without a posted receive waits and
// completes once one is posted; a persist that fails is refused, never
// acknowledged; the peer cannot grow the READ responses beyond its send
// queue's depth; a destroyed QP completes nothing more, and one bound
// again (a request moved to another peer) applies requests again; a
// refused request's NAK follows the ACK of what was applied before it.
#include "rpma_core/src/provider/tcp/tcp_target.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "rpma_core/src/provider/tcp/tcp_completion_queue.h"
#include "rpma_core/src/provider/tcp/tcp_persist.h"
#include "rpma_core/src/provider/tcp/tcp_persist_workers.h"
#include "rpma_core/src/provider/tcp/tcp_progress_engine.h"
#include "rpma_core/src/provider/tcp/tcp_unique_fd.h"
#include "rpma_core/src/provider/tcp/tcp_wire.h"
#include "tests/unit/provider/tcp/tcp_socket_pair.h"
#include "tests/unit/provider/tcp/tcp_test_support.h"

namespace rpma::provider::tcp {
namespace {

using Kind = Target::Verdict::Kind;
using Phase = InboundMessage::Phase;

constexpr uint64_t kPd = 1;
constexpr uint8_t kPersistent = static_cast<uint8_t>(wire::kFlushPersistent);
constexpr int kAllAccess =
    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;

// Resumed on the progress thread when a receive is posted.
class Waiter : public ReceiveWaiter, public std::enable_shared_from_this<Waiter> {
  public:
    void ResumeReceiving() override {
        std::lock_guard lock(mu_);
        resumed_ = true;
        changed_.notify_all();
    }
    std::weak_ptr<ReceiveWaiter> WeakWaiter() override { return weak_from_this(); }
    bool WaitResumed() {
        std::unique_lock lock(mu_);
        return changed_.wait_for(lock, std::chrono::seconds(10), [this] { return resumed_; });
    }

  private:
    std::mutex mu_;
    std::condition_variable changed_;
    bool resumed_ = false;
};

int FailingMsync(void *, size_t, int) {
    errno = EIO;
    return -1;
}

class TargetTest : public ::testing::Test {
  protected:
    void SetUp() override { Attach(); }
    void TearDown() override { SetMsyncForTesting(nullptr); }

    void Attach() {
        ASSERT_EQ(memory_.Register(buffer_.data(), buffer_.size(), kAllAccess, kPd, &region_), 0);
        QueuePairBinding qp;
        qp.qp_num = 7;
        qp.pd_id = kPd;
        qp.recv_cq = &cq_;
        qp.rq_size = 4;
        target_.Attach(qp, engine_);
    }

    // The peer's next request, as the reader hands its header over.
    Target::Verdict Request(wire::Opcode opcode, uint64_t offset, uint32_t length,
                            uint8_t flags = 0) {
        in_.phase = Phase::kHeader;
        in_.destination.clear();
        in_.into_receive = false;
        in_.discard = false;
        in_.header = {};
        in_.header.opcode = opcode;
        in_.header.sequence = next_sequence_++;
        in_.header.rkey = region_->Key();
        in_.header.remote_addr = reinterpret_cast<uintptr_t>(region_->Addr()) + offset;
        in_.header.length = length;
        in_.header.flags = flags;
        return target_.OnRequest(live_);
    }
    // The reader read the payload the verdict asked for.
    Target::Verdict PayloadLanded() {
        in_.phase = Phase::kHeader;
        return target_.OnRequestPayload();
    }
    int PostReceive(uint64_t wr_id, uint8_t *addr, uint32_t length) {
        ibv_sge sge{reinterpret_cast<uintptr_t>(addr), length, region_->Key()};
        ibv_recv_wr wr{};
        wr.wr_id = wr_id;
        wr.sg_list = &sge;
        wr.num_sge = 1;
        return target_.PostReceive(wr, nullptr);
    }
    std::vector<ibv_wc> Completions() { return tcp::testing::DrainCompletions(cq_); }

    // Aligned as an atomic write's target must be.
    alignas(8) std::array<uint8_t, 4096> buffer_{};
    MemoryTable memory_;
    std::shared_ptr<Region> region_;
    ProgressEngine engine_;
    CompletionQueue cq_{64, nullptr};
    std::shared_ptr<Waiter> waiter_ = std::make_shared<Waiter>();
    InboundMessage in_;
    OutboundQueue out_;
    Acknowledgements acks_;
    Handshake handshake_;  // the peer's send queue: depth 1 until it says more
    Target target_{&memory_,
                   waiter_.get(),
                   &in_,
                   &out_,
                   &acks_,
                   &handshake_,
                   /*persist_workers=*/true};
    uint64_t next_sequence_ = 1;
    bool live_ = true;  // the connection is established
};

TEST_F(TargetTest, RequestsAreAppliedInOrderEachOnce) {
    EXPECT_EQ(Request(wire::Opcode::kWrite, 0, 64).kind, Kind::kReadPayload);
    ASSERT_EQ(in_.destination.size(), 1u) << "the payload goes straight to the region";
    EXPECT_EQ(in_.destination[0].addr, buffer_.data());
    EXPECT_FALSE(acks_.Owed()) << "applied once its payload landed, not before";
    EXPECT_EQ(PayloadLanded().kind, Kind::kDone);
    EXPECT_TRUE(acks_.Owed());
    EXPECT_EQ(region_->Counts().bytes_written, 64u);
    EXPECT_EQ(acks_.Take(), 1u);

    next_sequence_ = 3;  // 2 skipped
    EXPECT_EQ(Request(wire::Opcode::kFlush, 0, 64).kind, Kind::kProtocolError);
    next_sequence_ = 1;  // 1 again
    EXPECT_EQ(Request(wire::Opcode::kFlush, 0, 64).kind, Kind::kProtocolError);
    EXPECT_FALSE(acks_.Owed()) << "nothing out of order is applied";
    EXPECT_EQ(Request(wire::Opcode::kFlush, 0, 64).kind, Kind::kDone);
    EXPECT_EQ(acks_.Take(), 2u);
}

TEST_F(TargetTest, ARequestOutsideItsRegistrationIsRefusedNotApplied) {
    const Target::Verdict verdict = Request(wire::Opcode::kWrite, buffer_.size() - 8, 64);
    EXPECT_EQ(verdict.kind, Kind::kReject);
    EXPECT_EQ(verdict.status, IBV_WC_REM_ACCESS_ERR);
    EXPECT_TRUE(in_.destination.empty()) << "not a byte lands";
    next_sequence_ = 1;  // a refused request is not applied: its sequence is still due
    EXPECT_EQ(Request(wire::Opcode::kAtomicWrite, 4, wire::kAtomicWriteSize).status,
              IBV_WC_REM_INV_REQ_ERR)
        << "an atomic write must be aligned";
    EXPECT_FALSE(acks_.Owed());
}

TEST_F(TargetTest, ARequestAfterStopApplyingIsDroppedAndNotAnswered) {
    EXPECT_EQ(target_.StopApplying().kind, Kind::kDone);
    EXPECT_EQ(Request(wire::Opcode::kWrite, 0, 64).kind, Kind::kReadPayload);
    EXPECT_TRUE(in_.discard) << "its payload is read and dropped";
    EXPECT_TRUE(in_.destination.empty()) << "and lands nowhere";
    EXPECT_EQ(Request(wire::Opcode::kReadRequest, 0, 64).kind, Kind::kReadPayload);
    EXPECT_TRUE(in_.discard);
    EXPECT_TRUE(out_.Empty()) << "a READ dropped is not answered";
    EXPECT_EQ(Request(wire::Opcode::kFlush, 0, 64, wire::kAckRequested).kind, Kind::kReadPayload);
    EXPECT_FALSE(acks_.Owed()) << "nothing dropped is acknowledged";
    EXPECT_FALSE(acks_.Requested());
    EXPECT_EQ(region_->Counts().bytes_read, 0u);
}

TEST_F(TargetTest, APayloadArrivingWhenApplyingStopsIsDropped) {
    EXPECT_EQ(Request(wire::Opcode::kWrite, 0, 64).kind, Kind::kReadPayload);
    in_.phase = Phase::kPayload;
    EXPECT_EQ(target_.StopApplying().kind, Kind::kDone);
    EXPECT_TRUE(in_.discard) << "the rest of it is read and dropped";
    EXPECT_TRUE(in_.destination.empty()) << "nothing more of the peer lands";
}

TEST_F(TargetTest, ARequestOutsideALiveConnectionOrAfterThePeersDisconnectIsAProtocolError) {
    live_ = false;
    EXPECT_EQ(Request(wire::Opcode::kWrite, 0, 8).kind, Kind::kProtocolError);
    live_ = true;
    handshake_.PeerDisconnected();
    EXPECT_EQ(Request(wire::Opcode::kWrite, 0, 8).kind, Kind::kProtocolError)
        << "the peer said goodbye";
    EXPECT_FALSE(acks_.Owed()) << "nothing applied";
}

TEST_F(TargetTest, ASendWithoutAPostedReceiveWaitsThenCompletesWhenOneIsPosted) {
    const char message[] = "hello, target";
    EXPECT_EQ(Request(wire::Opcode::kSend, 0, sizeof(message)).kind, Kind::kWaitForReceive);
    EXPECT_TRUE(target_.WaitingForReceive()) << "the message stays in the socket";
    EXPECT_FALSE(acks_.Owed());
    EXPECT_TRUE(Completions().empty());

    uint8_t *into = buffer_.data() + 1024;
    ASSERT_EQ(PostReceive(42, into, 256), 0);
    ASSERT_TRUE(waiter_->WaitResumed()) << "posting a receive resumes the waiting target";
    // As the connection's ResumeReceiving does: the header again.
    in_.phase = Phase::kHeader;
    EXPECT_EQ(target_.OnRequest(/*live=*/true).kind, Kind::kReadPayload);
    EXPECT_TRUE(in_.into_receive);
    ASSERT_EQ(in_.Destination().size(), 1u);
    EXPECT_EQ(in_.Destination()[0].addr, into);
    memcpy(into, message, sizeof(message));  // what the reader does
    EXPECT_EQ(PayloadLanded().kind, Kind::kDone);
    const std::vector<ibv_wc> done = Completions();
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(done[0].wr_id, 42u);
    EXPECT_EQ(done[0].status, IBV_WC_SUCCESS);
    EXPECT_EQ(done[0].opcode, IBV_WC_RECV);
    EXPECT_EQ(done[0].byte_len, sizeof(message));
    EXPECT_EQ(done[0].qp_num, 7u);
    EXPECT_TRUE(acks_.Owed());
}

TEST_F(TargetTest, ASendLargerThanItsReceiveFailsBothSides) {
    ASSERT_EQ(PostReceive(1, buffer_.data(), 16), 0);
    const Target::Verdict verdict = Request(wire::Opcode::kSend, 0, 17);
    EXPECT_EQ(verdict.kind, Kind::kReject);
    EXPECT_EQ(verdict.status, IBV_WC_REM_INV_REQ_ERR);
    const std::vector<ibv_wc> done = Completions();
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(done[0].status, IBV_WC_LOC_LEN_ERR);
    EXPECT_FALSE(acks_.Owed());
}

TEST_F(TargetTest, ASendWaitingForAReceiveIsDroppedWhenApplyingStops) {
    EXPECT_EQ(Request(wire::Opcode::kSend, 0, 32).kind, Kind::kWaitForReceive);
    EXPECT_EQ(target_.StopApplying().kind, Kind::kReadPayload) << "read it, to drop it";
    EXPECT_TRUE(in_.discard);
    EXPECT_FALSE(target_.WaitingForReceive());
    // Its receive, posted too late, stays unused: the disconnect flushes it.
    ASSERT_EQ(PostReceive(5, buffer_.data(), 64), 0);
    target_.FlushReceives();
    const std::vector<ibv_wc> done = Completions();
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(done[0].wr_id, 5u);
    EXPECT_EQ(done[0].status, IBV_WC_WR_FLUSH_ERR);
    EXPECT_FALSE(acks_.Owed());
}

TEST_F(TargetTest, ADestroyedQpCompletesNothingMore) {
    ASSERT_EQ(PostReceive(1, buffer_.data(), 64), 0);
    EXPECT_EQ(Request(wire::Opcode::kSend, 0, 32).kind, Kind::kReadPayload);
    in_.phase = Phase::kPayload;
    EXPECT_EQ(target_.Detach().kind, Kind::kDone);
    EXPECT_TRUE(in_.discard);
    EXPECT_FALSE(in_.has_receive);
    target_.FlushReceives();
    EXPECT_TRUE(Completions().empty());
    EXPECT_EQ(Request(wire::Opcode::kSend, 0, 32).kind, Kind::kReadPayload);
    EXPECT_TRUE(in_.discard) << "a request after the QP went is dropped";
}

TEST_F(TargetTest, AQpBoundAgainAppliesRequestsAgain) {
    // A request moved to another peer: its first QP goes, another comes.
    EXPECT_EQ(target_.Detach().kind, Kind::kDone);
    EXPECT_EQ(Request(wire::Opcode::kFlush, 0, 64).kind, Kind::kReadPayload);
    EXPECT_TRUE(in_.discard);
    next_sequence_ = 1;
    Attach();
    EXPECT_EQ(Request(wire::Opcode::kFlush, 0, 64).kind, Kind::kDone);
    EXPECT_TRUE(acks_.Owed());
    // A disconnect, though, stops applying for good.
    EXPECT_EQ(target_.StopApplying().kind, Kind::kDone);
    EXPECT_EQ(target_.Detach().kind, Kind::kDone);
    Attach();
    EXPECT_EQ(Request(wire::Opcode::kFlush, 0, 64).kind, Kind::kReadPayload);
    EXPECT_TRUE(in_.discard);
}

TEST_F(TargetTest, ThePeerCannotHaveMoreReadsOutstandingThanItsSendQueueHolds) {
    EXPECT_EQ(Request(wire::Opcode::kReadRequest, 0, 64).kind, Kind::kDone);
    EXPECT_EQ(out_.PendingResponses(), 1u);
    EXPECT_EQ(region_->Counts().bytes_read, 64u);
    EXPECT_EQ(Request(wire::Opcode::kReadRequest, 0, 64).kind, Kind::kProtocolError)
        << "its declared depth (1) holds one READ: a second cannot grow our queue";
    EXPECT_EQ(out_.PendingResponses(), 1u);
}

TEST_F(TargetTest, AnAtomicWriteToADeregisteredRegionIsRefused) {
    EXPECT_EQ(Request(wire::Opcode::kAtomicWrite, 8, wire::kAtomicWriteSize).kind,
              Kind::kReadPayload);
    memory_.Deregister(region_);
    const Target::Verdict verdict = PayloadLanded();
    EXPECT_EQ(verdict.kind, Kind::kReject);
    EXPECT_EQ(verdict.status, IBV_WC_REM_ACCESS_ERR);
    EXPECT_FALSE(acks_.Owed());
}

using tcp::testing::SharedFile;

TEST_F(TargetTest, APersistThatFailsIsRefusedNeverAcknowledged) {
    SharedFile file(size_t{256} << 10);
    ASSERT_EQ(memory_.Register(file.data(), size_t{256} << 10, kAllAccess, kPd, &region_), 0);
    SetMsyncForTesting(FailingMsync);

    // Small: persisted at once, and refused at once.
    Target::Verdict verdict =
        Request(wire::Opcode::kFlush, 0, 4096, kPersistent | wire::kAckRequested);
    EXPECT_EQ(verdict.kind, Kind::kReject);
    EXPECT_EQ(verdict.status, IBV_WC_REM_OP_ERR);
    EXPECT_FALSE(acks_.Owed());
    EXPECT_FALSE(acks_.Requested()) << "never an ACK for it";

    // Large: handed to a worker; its failure is refused when it comes back.
    next_sequence_ = 1;
    verdict = Request(wire::Opcode::kFlush, 0, size_t{256} << 10, kPersistent);
    ASSERT_EQ(verdict.kind, Kind::kPersistOnWorker);
    EXPECT_TRUE(target_.Persisting()) << "the requests behind it wait in the socket";
    const MemorySegment segment = target_.TakePersist();
    EXPECT_EQ(segment.length, size_t{256} << 10);
    EXPECT_NE(segment.owner, nullptr) << "the worker keeps the region";
    EXPECT_EQ(segment.region->PersistUnlocked(segment.addr, segment.length), EIO);
    verdict = target_.OnPersisted(EIO);
    EXPECT_EQ(verdict.kind, Kind::kReject);
    EXPECT_EQ(verdict.status, IBV_WC_REM_OP_ERR);
    EXPECT_FALSE(target_.Persisting());
    EXPECT_FALSE(acks_.Owed());

    // One whose region went meanwhile: an access error.
    next_sequence_ = 1;
    ASSERT_EQ(Request(wire::Opcode::kFlush, 0, size_t{256} << 10, kPersistent).kind,
              Kind::kPersistOnWorker);
    EXPECT_EQ(target_.OnPersisted(EFAULT).status, IBV_WC_REM_ACCESS_ERR);
    EXPECT_FALSE(acks_.Owed());

    // And one that succeeds is acknowledged.
    SetMsyncForTesting(nullptr);
    next_sequence_ = 1;
    ASSERT_EQ(Request(wire::Opcode::kFlush, 0, size_t{256} << 10, kPersistent).kind,
              Kind::kPersistOnWorker);
    EXPECT_EQ(target_.OnPersisted(0).kind, Kind::kDone);
    EXPECT_TRUE(acks_.Owed());
}

TEST_F(TargetTest, ARefusedRequestIsNakedAfterTheAckOfWhatWasAppliedBeforeIt) {
    ASSERT_EQ(Request(wire::Opcode::kFlush, 0, 64).kind, Kind::kDone);
    const Target::Verdict verdict = Request(wire::Opcode::kWrite, buffer_.size() - 8, 64);
    ASSERT_EQ(verdict.kind, Kind::kReject);
    target_.Refuse(verdict.status);

    UniqueFd ours;
    UniqueFd peer;
    ASSERT_TRUE(testing::OpenSocketPair(&ours, &peer));
    ASSERT_EQ(out_.Flush(ours.Get()).status, OutboundQueue::FlushStatus::kDrained);
    const std::vector<wire::Header> sent = testing::ReceivedHeaders(peer.Get());
    ASSERT_EQ(sent.size(), 2u);
    EXPECT_EQ(sent[0].opcode, wire::Opcode::kAck);
    EXPECT_EQ(sent[0].sequence, 1u) << "the flush applied before";
    EXPECT_EQ(sent[1].opcode, wire::Opcode::kNak);
    EXPECT_EQ(sent[1].sequence, 2u) << "the refused request";
    EXPECT_EQ(sent[1].rkey, static_cast<uint32_t>(IBV_WC_REM_ACCESS_ERR)) << "its status";
}

}  // namespace
}  // namespace rpma::provider::tcp
