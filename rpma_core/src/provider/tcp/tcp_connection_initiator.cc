// Connection as an initiator: the posting entry points and what the
// connection does with its Initiator's verdicts (tcp_initiator.h): fail,
// break, run its progress. What a post sends is built in tcp_requests.h.
#include "rpma_core/src/provider/tcp/tcp_connection.h"

#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <mutex>

#include "rpma_core/src/log.h"
#include "rpma_core/src/provider/tcp/tcp_completion_queue.h"
#include "rpma_core/src/provider/tcp/tcp_parts.h"
#include "rpma_core/src/provider/tcp/tcp_requests.h"
#include "rpma_core/src/provider/tcp/tcp_tsan.h"

namespace rpma::provider::tcp {

// What the Initiator (tcp_initiator.h) said of the peer's answer in in(), or
// of the front of the send queue after a post, done.
void Connection::Act(Initiator::Verdict verdict) {
    switch (verdict.kind) {
        case Initiator::Verdict::Kind::kDone:
            return;
        case Initiator::Verdict::Kind::kDropPayload:
            in().discard = true;
            [[fallthrough]];
        case Initiator::Verdict::Kind::kReadPayload:
            return BeginPayload(in().header.length);
        case Initiator::Verdict::Kind::kRefused:
            RPMA_LOG_ERROR("%s refused request %llu: %s; the connection is broken", peer_.c_str(),
                           static_cast<unsigned long long>(in().header.sequence),
                           ibv_wc_status_str(verdict.status));
            return Fail(verdict.status, /*send_nothing=*/true);
        case Initiator::Verdict::Kind::kFail:
            if (verdict.why != nullptr)
                RPMA_LOG_ERROR("%s", verdict.why);
            return Fail(verdict.status, /*send_nothing=*/true);
        case Initiator::Verdict::Kind::kCompletionLost:
            return OnCompletionLost();
        case Initiator::Verdict::Kind::kProtocolError:
            return ProtocolError(verdict.why);
    }
}

int Connection::PostSend(const ibv_send_wr &wr) {
    std::lock_guard lock(mu_);
    if (const int err = Initiator::CheckCanPost(has_qp_, state_); err != 0)
        return err;
    Request request;
    if (const int err =
            BuildSendRequest(wr, initiator_.queue(),
                             LocalMemory{deps_.memory, qp_.pd_id, &local_regions_}, &request);
        err != 0)
        return err;
    return PostRequest(std::move(request.wr), std::move(request.message), request.length,
                       (wr.send_flags & kSendMore) != 0);
}

int Connection::PostFlush(uint64_t remote_addr, uint32_t rkey, size_t length, FlushType type,
                          bool signaled, uint64_t wr_id) {
    std::lock_guard lock(mu_);
    if (const int err = Initiator::CheckCanPost(has_qp_, state_); err != 0)
        return err;
    Request request;
    if (const int err = BuildFlushRequest(remote_addr, rkey, length, type, signaled, wr_id,
                                          initiator_.queue(), &request);
        err != 0)
        return err;
    return PostRequest(std::move(request.wr), std::move(request.message), request.length);
}

int Connection::PostAtomicWrite(uint64_t remote_addr, uint32_t rkey, const char value[8],
                                bool signaled, uint64_t wr_id) {
    std::lock_guard lock(mu_);
    if (const int err = Initiator::CheckCanPost(has_qp_, state_); err != 0)
        return err;
    Request request;
    if (const int err = BuildAtomicWriteRequest(remote_addr, rkey, value, signaled, wr_id,
                                                initiator_.queue(), &request);
        err != 0)
        return err;
    return PostRequest(std::move(request.wr), std::move(request.message));
}

// `length`: the request's, which may span several parts (tcp_parts.h);
// `more`: another post follows at once (RPMA_EXT_F_MORE).
int Connection::PostRequest(PendingWr &&wr, OutboundMessage &&message, uint64_t length, bool more) {
    // What the application did to the target region before posting.
    wr.rkey = message.header.rkey;
    tsan::Publish(wr.rkey);
    if (state_ != State::kEstablished) {
        initiator_.PostWhileBroken(std::move(wr), state_ == State::kDisconnecting);
        return 0;
    }
    if (!liveness_.Watching()) [[unlikely]]
        WatchPeer();  // no call on the posting path while the looks run
    const int fd = socket_.Valid() && !write_shut_down_ ? socket_.Get() : -1;
    switch (initiator_.Post(std::move(wr), std::move(message), length, fd, more)) {
        case Initiator::Posted::kSent:
            return 0;
        case Initiator::Posted::kHeld:
            // Sent by the next post, wait or poll (RingDoorbell). No front
            // to check: a request with a local error is never held (kQueued).
            return 0;
        case Initiator::Posted::kSentPartly:
            AfterProgress();
            initiator_.LetPollSkip();
            return 0;
        case Initiator::Posted::kParts:
            Act(initiator_.CheckFront());
            AfterProgress();
            return 0;
        case Initiator::Posted::kMayWaitBell:
            Act(initiator_.CheckFront());
            if (initiator_.WaitForDoorbell(IsLive(state_)))
                return 0;
            break;
        case Initiator::Posted::kQueued:
            Act(initiator_.CheckFront());
            break;
    }
    AfterProgress();
    initiator_.LetPollSkip();
    return 0;
}

// A completion did not fit its CQ: the QP enters the error state.
void Connection::OnCompletionLost() {
    RPMA_LOG_ERROR(
        "a completion of the connection to %s did not fit its completion queue; the "
        "queue pair enters the error state and the connection breaks",
        peer_.c_str());
    Fail(IBV_WC_WR_FLUSH_ERR, /*send_nothing=*/true);
}

int Connection::PostRecv(const ibv_recv_wr &wr) {
    std::lock_guard lock(mu_);
    if (!has_qp_) {
        RPMA_LOG_ERROR("the queue pair was destroyed");
        return EINVAL;
    }
    if (qp_.srq != nullptr) {
        RPMA_LOG_ERROR(
            "this queue pair takes its receives from a shared receive queue; post "
            "them there");
        return EINVAL;
    }
    if (state_ == State::kClosing || state_ == State::kClosed) {
        // A QP in the error state flushes new receives right away.
        ibv_wc wc{};
        wc.wr_id = wr.wr_id;
        wc.status = IBV_WC_WR_FLUSH_ERR;
        wc.opcode = IBV_WC_RECV;
        SendQueue::Complete(qp_.recv_cq, qp_.qp_num, wc);
        return 0;
    }
    return target_.PostReceive(wr, &local_regions_);  // a private receive queue
}

}  // namespace rpma::provider::tcp
