// Connection as a target: executing the peer's requests on registered
// memory, in order and without the application — access checks, WRITE,
// READ, ATOMIC_WRITE, FLUSH (a large persist on a persist worker), SEND
// into posted receives (held while none is posted) — and acknowledging them.
// Once this side began to disconnect, or its QP went, no request is applied
// any more (as a verbs QP moved to the error state): the rest is dropped.
// Tests: tcp_remote_ops_test, tcp_messaging_test, tcp_persist_workers_test,
// tcp_hostile_peer_test.
#include "rpma_core/src/provider/tcp/tcp_connection.h"

#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "rpma_core/src/log.h"
#include "rpma_core/src/provider/tcp/tcp_completion_queue.h"
#include "rpma_core/src/provider/tcp/tcp_tsan.h"

namespace rpma::provider::tcp {
namespace {

// Makes the segment durable (earlier writes are already applied: requests
// run in order) by the method its region's registration chose
// (tcp_persist.h): CPU cache flushes on DAX, msync on a page-cache file,
// nothing on private memory. 0, EFAULT when the region was deregistered, or
// msync's errno.
int Persist(const MemorySegment &segment) {
    return segment.region->Persist(segment.addr, segment.length);
}

}  // namespace

void Connection::OnRequestHeader() {
    const wire::Header &header = in().header;
    if (!IsLive() || received_disconnect_)
        return ProtocolError("request outside an established connection");
    if (sent_disconnect_ || !has_qp_) [[unlikely]]
        return DropRequest();
    if (!acks_.InOrder(header.sequence))
        return ProtocolError("request out of sequence");
    tsan::Observe(header.rkey);  // the initiator's post (a one-sided request)
    MemorySegment segment;
    RemoteCheck check = RemoteCheck::kOk;
    switch (header.opcode) {
        case wire::Opcode::kWrite:
        case wire::Opcode::kWriteWithImm:
            check = deps_.memory->ResolveRemote(header.rkey, header.remote_addr, header.length,
                                                qp_.pd_id, IBV_ACCESS_REMOTE_WRITE, &segment,
                                                &remote_regions_);
            if (check != RemoteCheck::kOk)
                return RejectRequest(IBV_WC_REM_ACCESS_ERR, RemoteCheckString(check));
            if (header.opcode == wire::Opcode::kWriteWithImm && !AcquireReceive())
                return;
            if (segment.length > 0)
                in().destination.push_back(std::move(segment));
            return BeginPayload(header.length);
        case wire::Opcode::kReadRequest: {
            check = deps_.memory->ResolveRemote(header.rkey, header.remote_addr, header.length,
                                                qp_.pd_id, IBV_ACCESS_REMOTE_READ, &segment,
                                                &remote_regions_);
            if (check != RemoteCheck::kOk)
                return RejectRequest(IBV_WC_REM_ACCESS_ERR, RemoteCheckString(check));
            // An honest peer cannot have more READs outstanding than its send
            // queue holds; more would let it grow our queue without bound.
            if (out_.PendingResponses() >= handshake_.peer_send_queue_depth())
                return ProtocolError("more outstanding READs than the peer's send queue depth");
            OutboundMessage response;
            response.header.opcode = wire::Opcode::kReadResponse;
            response.header.length = header.length;
            response.header.sequence = header.sequence;
            if (segment.length > 0) {
                // Counted once accepted: only a broken connection (which
                // fails the READ at the peer) keeps it from being sent.
                segment.region->CountRead(segment.length);
                segment.Own();  // read when the queue gets to it
                response.segments.push_back(std::move(segment));
            }
            out_.Push(std::move(response));
            return CompleteRequest();
        }
        case wire::Opcode::kAtomicWrite:
            check = deps_.memory->ResolveRemote(header.rkey, header.remote_addr, header.length,
                                                qp_.pd_id, IBV_ACCESS_REMOTE_WRITE, &segment,
                                                &remote_regions_);
            if (check != RemoteCheck::kOk)
                return RejectRequest(IBV_WC_REM_ACCESS_ERR, RemoteCheckString(check));
            if (header.remote_addr % wire::kAtomicWriteSize != 0)
                return RejectRequest(IBV_WC_REM_INV_REQ_ERR,
                                     "atomic write to an address not aligned to 8 bytes");
            in().atomic_target = std::move(segment);
            return BeginPayload(header.length);
        case wire::Opcode::kFlush: {
            check = deps_.memory->ResolveRemote(header.rkey, header.remote_addr, header.length,
                                                qp_.pd_id, IBV_ACCESS_REMOTE_READ, &segment,
                                                &remote_regions_);
            if (check != RemoteCheck::kOk)
                return RejectRequest(IBV_WC_REM_ACCESS_ERR, RemoteCheckString(check));
            if ((header.flags & ~wire::kAckRequested) == wire::kFlushPersistent)
                return PersistForFlush(std::move(segment));
            return CompleteRequest();
        }
        case wire::Opcode::kSend:
        case wire::Opcode::kSendWithImm:
            if (!AcquireReceive())
                return;
            if (!in().receive.buffers_valid) {
                CompleteReceive(IBV_WC_LOC_PROT_ERR, IBV_WC_RECV, 0, false);
                return RejectRequest(IBV_WC_REM_OP_ERR, "the receive buffer is not registered");
            }
            if (header.length > in().receive.capacity) {
                RPMA_LOG_ERROR("a %u-byte message does not fit the %llu-byte receive buffer",
                               header.length,
                               static_cast<unsigned long long>(in().receive.capacity));
                CompleteReceive(IBV_WC_LOC_LEN_ERR, IBV_WC_RECV, 0, false);
                return RejectRequest(IBV_WC_REM_INV_REQ_ERR,
                                     "message larger than the posted receive");
            }
            in().into_receive = true;
            return BeginPayload(header.length);
        default:
            return ProtocolError("unexpected opcode");
    }
}

void Connection::DropRequest() {
    // Neither applied nor answered: the peer's WR fails when the connection
    // ends, as one that reached a verbs QP in the error state.
    in().discard = true;
    BeginPayload(wire::PayloadLength(in().header));
}

void Connection::StopApplyingRequests() {
    if (in().phase == Inbound::Phase::kWaitingForReceive) {
        // Its receive stays unused (the disconnect flushes it).
        in().phase = Inbound::Phase::kHeader;
        return DropRequest();
    }
    if (in().phase != Inbound::Phase::kPayload || !wire::IsRequest(in().header.opcode))
        return;
    // The rest of the payload is read and dropped; a receive it was filling
    // is flushed with the others.
    in().into_receive = false;
    in().destination.clear();
    in().atomic_target = {};
    in().discard = true;
}

void Connection::PersistForFlush(MemorySegment &&segment) {
    const bool large = segment.length > PersistWorkers::kInlineBytes &&
                       segment.region->persist_plan().MsyncBytes(segment.addr, segment.length) >
                           PersistWorkers::kInlineBytes;
    if (!large || deps_.persist_workers == nullptr) {
        if (const int err = Persist(segment); err != 0)
            return OnPersistFailed(err);
        segment.region->CountPersisted(segment.length);
        return CompleteRequest();
    }
    // Stop reading until the range is durable (the requests behind the
    // FLUSH stay in order); meanwhile the looks at the peer tell it that we
    // live. The worker owns a reference to the region; deregistration waits
    // for its persist (Region::PersistUnlocked).
    in().phase = Inbound::Phase::kPersisting;
    WatchPeer();
    segment.Own();
    deps_.persist_workers->Submit([weak = weak_from_this(), segment = std::move(segment)] {
        const int err = segment.region->PersistUnlocked(segment.addr, segment.length);
        if (err == 0)
            segment.region->CountPersisted(segment.length);
        if (const std::shared_ptr<Connection> connection = weak.lock())
            connection->OnPersisted(err);
    });
}

void Connection::OnPersisted(int error) {
    std::lock_guard lock(mu_);
    if (in().phase != Inbound::Phase::kPersisting || !socket_.Valid())
        return;  // the connection broke meanwhile
    in().phase = Inbound::Phase::kHeader;
    if (error != 0)
        OnPersistFailed(error);
    else
        CompleteRequest();
    if (ReadingEnabled())
        ReadInbound();
    AfterProgress();
}

void Connection::OnPersistFailed(int error) {
    if (error == EFAULT)
        return RejectRequest(IBV_WC_REM_ACCESS_ERR, "the memory region was deregistered");
    RPMA_LOG_ERROR("persistent flush of %#llx+%u failed: persist: %s",
                   static_cast<unsigned long long>(in().header.remote_addr), in().header.length,
                   strerror(error));
    RejectRequest(IBV_WC_REM_OP_ERR, "persist failed");
}

bool Connection::AcquireReceive() {
    if (in().has_receive)
        return true;
    if (rq_ == nullptr) {
        RejectRequest(IBV_WC_REM_OP_ERR, "the queue pair is gone");
        return false;
    }
    if (rq_->PopOrWait(&in().receive, *this)) {
        in().has_receive = true;
        timer_.Disarm(TimerPurpose::kReceiverNotReady);
        return true;
    }
    // Receiver not ready: leave the message in the socket (the peer's sends
    // back up behind it) until a receive is posted or the RNR bound expires.
    // Meanwhile the looks at the peer tell it that we live.
    in().phase = Inbound::Phase::kWaitingForReceive;
    WatchPeer();
    if (timer_.Armed() != TimerPurpose::kReceiverNotReady)
        timer_.Arm(TimerPurpose::kReceiverNotReady, deps_.rnr_timeout_ms->load());
    return false;
}

void Connection::ResumeReceiving() {
    std::lock_guard lock(mu_);
    if (in().phase != Inbound::Phase::kWaitingForReceive || !socket_.Valid())
        return;
    in().phase = Inbound::Phase::kHeader;
    OnRequestHeader();
    if (ReadingEnabled())
        ReadInbound();
    AfterProgress();
}

void Connection::CompleteRequest() {
    tsan::Publish(in().header.rkey);  // to the initiator's completion
    acks_.Applied((in().header.flags & wire::kAckRequested) != 0);
    in().destination.clear();
}

void Connection::CompleteReceive(ibv_wc_status status, ibv_wc_opcode opcode, uint32_t byte_len,
                                 bool with_imm) {
    if (!in().has_receive)
        return;
    ibv_wc wc{};
    wc.wr_id = in().receive.wr_id;
    wc.status = status;
    wc.opcode = opcode;
    wc.byte_len = byte_len;
    if (with_imm) {
        wc.imm_data = in().header.imm;
        wc.wc_flags = IBV_WC_WITH_IMM;
    }
    const bool delivered = SendQueue::Complete(qp_.recv_cq, qp_.qp_num, wc);
    in().has_receive = false;
    ReleaseReceive();
    // An error completion is lost on a connection that breaks anyway.
    if (!delivered && status == IBV_WC_SUCCESS) [[unlikely]]
        OnCompletionLost();
}

void Connection::ReleaseReceive() {
    if (in().into_receive && in().phase == Inbound::Phase::kPayload) {
        // Its payload is still arriving (flushed early, or the QP went):
        // the rest goes where it was going.
        in().destination = std::move(in().receive.segments);
    }
    in().into_receive = false;
    in().receive.segments.clear();
}

void Connection::RejectRequest(ibv_wc_status status, const char *why) {
    if (state_ == State::kClosing || state_ == State::kClosed)
        return;
    RPMA_LOG_ERROR_RATELIMITED(
        "refusing %s request %llu from %s (rkey %#x, address %#llx, length %u): %s; "
        "breaking the connection",
        wire::OpcodeName(in().header.opcode), static_cast<unsigned long long>(in().header.sequence),
        peer_.c_str(), in().header.rkey, static_cast<unsigned long long>(in().header.remote_addr),
        in().header.length, why);
    acks_.Queue(out_);
    OutboundMessage nak;
    nak.header.opcode = wire::Opcode::kNak;
    nak.header.sequence = in().header.sequence;
    nak.header.rkey = status;
    out_.Push(std::move(nak));
    Fail(IBV_WC_WR_FLUSH_ERR, /*send_nothing=*/false);
}

}  // namespace rpma::provider::tcp
