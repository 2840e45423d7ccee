#include "rpma_core/src/provider/tcp/tcp_target.h"

#include <atomic>
#include <cerrno>
#include <cstring>
#include <utility>

#include "rpma_core/src/log.h"
#include "rpma_core/src/provider/tcp/tcp_completion_queue.h"
#include "rpma_core/src/provider/tcp/tcp_persist_workers.h"
#include "rpma_core/src/provider/tcp/tcp_send_queue.h"
#include "rpma_core/src/provider/tcp/tcp_tsan.h"

namespace rpma::provider::tcp {

using Phase = InboundMessage::Phase;
using Kind = Target::Verdict::Kind;

void Target::Attach(const QueuePairBinding &qp, ProgressEngine &engine) {
    attached_ = true;
    pd_id_ = qp.pd_id;
    qp_num_ = qp.qp_num;
    recv_cq_ = qp.recv_cq;
    if (qp.srq != nullptr) {
        rq_ = qp.srq;
    } else {
        private_rq_ = std::make_unique<ReceiveQueue>(*memory_, engine, qp.pd_id, qp.rq_size,
                                                     /*shared=*/false);
        rq_ = private_rq_.get();
    }
}

Target::Verdict Target::Detach() {
    // A destroyed QP reports nothing more, like a verbs QP, and applies no
    // request of the peer (those that follow are dropped: OnRequest) until
    // a QP is bound again (a request moved to another peer).
    attached_ = false;
    const Verdict verdict = DropInProgress();
    in_->has_receive = false;
    ReleaseReceive();
    rq_ = nullptr;
    private_rq_.reset();
    recv_cq_ = nullptr;
    return verdict;
}

Target::Verdict Target::OnRequest(bool live) {
    if (!live || handshake_->peer_disconnected())
        return ProtocolError("request outside an established connection");
    const wire::Header &header = in_->header;
    if (!Applying()) [[unlikely]]
        return Drop();
    if (!acks_->InOrder(header.sequence))
        return ProtocolError("request out of sequence");
    tsan::Observe(header.rkey);  // the initiator's post (a one-sided request)
    MemorySegment segment;
    RemoteCheck check = RemoteCheck::kOk;
    switch (header.opcode) {
        case wire::Opcode::kWrite:
        case wire::Opcode::kWriteWithImm:
            check = memory_->ResolveRemote(header.rkey, header.remote_addr, header.length, pd_id_,
                                           IBV_ACCESS_REMOTE_WRITE, &segment, &remote_regions_);
            if (check != RemoteCheck::kOk)
                return Reject(IBV_WC_REM_ACCESS_ERR, RemoteCheckString(check));
            if (header.opcode == wire::Opcode::kWriteWithImm && !AcquireReceive()) {
                if (rq_ == nullptr) [[unlikely]]
                    return Reject(IBV_WC_REM_OP_ERR, "the queue pair is gone");
                return {Kind::kWaitForReceive};
            }
            if (segment.length > 0)
                in_->destination.push_back(std::move(segment));
            return {Kind::kReadPayload};
        case wire::Opcode::kReadRequest: {
            check = memory_->ResolveRemote(header.rkey, header.remote_addr, header.length, pd_id_,
                                           IBV_ACCESS_REMOTE_READ, &segment, &remote_regions_);
            if (check != RemoteCheck::kOk)
                return Reject(IBV_WC_REM_ACCESS_ERR, RemoteCheckString(check));
            // An honest peer cannot have more READs outstanding than its send
            // queue holds; more would let it grow our queue without bound.
            if (out_->PendingResponses() >= handshake_->peer_send_queue_depth())
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
            out_->Push(std::move(response));
            Applied();
            return {};
        }
        case wire::Opcode::kAtomicWrite:
            check = memory_->ResolveRemote(header.rkey, header.remote_addr, header.length, pd_id_,
                                           IBV_ACCESS_REMOTE_WRITE, &segment, &remote_regions_);
            if (check != RemoteCheck::kOk)
                return Reject(IBV_WC_REM_ACCESS_ERR, RemoteCheckString(check));
            if (header.remote_addr % wire::kAtomicWriteSize != 0)
                return Reject(IBV_WC_REM_INV_REQ_ERR,
                              "atomic write to an address not aligned to 8 bytes");
            in_->atomic_target = std::move(segment);
            return {Kind::kReadPayload};
        case wire::Opcode::kFlush:
            check = memory_->ResolveRemote(header.rkey, header.remote_addr, header.length, pd_id_,
                                           IBV_ACCESS_REMOTE_READ, &segment, &remote_regions_);
            if (check != RemoteCheck::kOk)
                return Reject(IBV_WC_REM_ACCESS_ERR, RemoteCheckString(check));
            if ((header.flags & ~wire::kAckRequested) == wire::kFlushPersistent)
                return Persist(std::move(segment));
            Applied();
            return {};
        case wire::Opcode::kSend:
        case wire::Opcode::kSendWithImm:
            return OnSend();
        default:
            return ProtocolError("unexpected opcode");
    }
}

Target::Verdict Target::OnSend() {
    if (!AcquireReceive()) {
        if (rq_ == nullptr) [[unlikely]]
            return Reject(IBV_WC_REM_OP_ERR, "the queue pair is gone");
        return {Kind::kWaitForReceive};
    }
    if (!in_->receive.buffers_valid) {
        CompleteReceive(IBV_WC_LOC_PROT_ERR, IBV_WC_RECV, 0, false);
        return Reject(IBV_WC_REM_OP_ERR, "the receive buffer is not registered");
    }
    if (in_->header.length > in_->receive.capacity) {
        RPMA_LOG_ERROR("a %u-byte message does not fit the %llu-byte receive buffer",
                       in_->header.length, static_cast<unsigned long long>(in_->receive.capacity));
        CompleteReceive(IBV_WC_LOC_LEN_ERR, IBV_WC_RECV, 0, false);
        return Reject(IBV_WC_REM_INV_REQ_ERR, "message larger than the posted receive");
    }
    in_->into_receive = true;
    return {Kind::kReadPayload};
}

Target::Verdict Target::OnRequestPayload() {
    const wire::Header &header = in_->header;
    bool delivered = true;
    switch (header.opcode) {
        case wire::Opcode::kWrite:
        case wire::Opcode::kWriteWithImm:
            // A WRITE's payload has one destination segment (none when empty).
            if (!in_->destination.empty())
                in_->destination[0].region->CountWritten(header.length);
            if (header.opcode == wire::Opcode::kWriteWithImm)
                delivered =
                    CompleteReceive(IBV_WC_SUCCESS, IBV_WC_RECV_RDMA_WITH_IMM, header.length, true);
            break;
        case wire::Opcode::kSend:
        case wire::Opcode::kSendWithImm:
            delivered = CompleteReceive(IBV_WC_SUCCESS, IBV_WC_RECV, header.length,
                                        header.opcode == wire::Opcode::kSendWithImm);
            break;
        case wire::Opcode::kAtomicWrite: {
            uint64_t value;
            memcpy(&value, in_->small.data(), sizeof(value));
            if (in_->atomic_target.region->Revoked())
                return Reject(IBV_WC_REM_ACCESS_ERR, "the memory region was deregistered");
            std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t *>(in_->atomic_target.addr))
                .store(value);
            in_->atomic_target.region->CountWritten(sizeof(value));
            in_->atomic_target = {};
            break;
        }
        default:
            return ProtocolError("unexpected payload");
    }
    Applied();
    // An error completion is lost on a connection that breaks anyway.
    if (!delivered) [[unlikely]]
        return {Kind::kCompletionLost};
    return {};
}

Target::Verdict Target::Drop() {
    // Neither applied nor answered: the peer's WR fails when the connection
    // ends, as one that reached a verbs QP in the error state.
    in_->discard = true;
    return {Kind::kReadPayload};
}

Target::Verdict Target::StopApplying() {
    stopped_ = true;
    return DropInProgress();
}

Target::Verdict Target::DropInProgress() {
    if (in_->phase == Phase::kWaitingForReceive) {
        // Its receive stays unused (the disconnect flushes it).
        in_->phase = Phase::kHeader;
        return Drop();
    }
    if (in_->phase != Phase::kPayload || !wire::IsRequest(in_->header.opcode))
        return {};
    // The rest of the payload is read and dropped; a receive it was filling
    // is flushed with the others.
    in_->into_receive = false;
    in_->destination.clear();
    in_->atomic_target = {};
    in_->discard = true;
    return {};
}

Target::Verdict Target::Persist(MemorySegment &&segment) {
    const bool large = segment.length > PersistWorkers::kInlineBytes &&
                       segment.region->persist_plan().MsyncBytes(segment.addr, segment.length) >
                           PersistWorkers::kInlineBytes;
    if (!large || !persist_workers_) {
        // Earlier writes are applied already: requests run in order.
        if (const int err = segment.region->Persist(segment.addr, segment.length); err != 0)
            return PersistFailed(err);
        segment.region->CountPersisted(segment.length);
        Applied();
        return {};
    }
    // Reading stops until the range is durable (the requests behind the
    // FLUSH stay in order). The worker owns a reference to the region;
    // deregistration waits for its persist (Region::PersistUnlocked).
    in_->phase = Phase::kPersisting;
    segment.Own();
    persisting_ = std::move(segment);
    return {Kind::kPersistOnWorker};
}

Target::Verdict Target::OnPersisted(int error) {
    in_->phase = Phase::kHeader;
    if (error != 0)
        return PersistFailed(error);
    Applied();
    return {};
}

Target::Verdict Target::PersistFailed(int error) {
    if (error == EFAULT)
        return Reject(IBV_WC_REM_ACCESS_ERR, "the memory region was deregistered");
    RPMA_LOG_ERROR("persistent flush of %#llx+%u failed: persist: %s",
                   static_cast<unsigned long long>(in_->header.remote_addr), in_->header.length,
                   strerror(error));
    return Reject(IBV_WC_REM_OP_ERR, "persist failed");
}

bool Target::AcquireReceive() {
    if (in_->has_receive)
        return true;
    if (rq_ == nullptr)
        return false;
    if (rq_->PopOrWait(&in_->receive, *waiter_)) {
        in_->has_receive = true;
        return true;
    }
    // Receiver not ready: the message stays in the socket (the peer's sends
    // back up behind it) until a receive is posted or the RNR bound expires.
    in_->phase = Phase::kWaitingForReceive;
    return false;
}

void Target::Applied() {
    tsan::Publish(in_->header.rkey);  // to the initiator's completion
    acks_->Applied((in_->header.flags & wire::kAckRequested) != 0);
    in_->destination.clear();
}

bool Target::CompleteReceive(ibv_wc_status status, ibv_wc_opcode opcode, uint32_t byte_len,
                             bool with_imm) {
    if (!in_->has_receive)
        return true;
    ibv_wc wc{};
    wc.wr_id = in_->receive.wr_id;
    wc.status = status;
    wc.opcode = opcode;
    wc.byte_len = byte_len;
    if (with_imm) {
        wc.imm_data = in_->header.imm;
        wc.wc_flags = IBV_WC_WITH_IMM;
    }
    const bool delivered = SendQueue::Complete(recv_cq_, qp_num_, wc);
    in_->has_receive = false;
    ReleaseReceive();
    return delivered || status != IBV_WC_SUCCESS;
}

void Target::ReleaseReceive() {
    if (in_->into_receive && in_->phase == Phase::kPayload) {
        // Its payload is still arriving (flushed early, or the QP went):
        // the rest goes where it was going.
        in_->destination = std::move(in_->receive.segments);
    }
    in_->into_receive = false;
    in_->receive.segments.clear();
}

void Target::FlushReceives() {
    CompleteReceive(IBV_WC_WR_FLUSH_ERR, IBV_WC_RECV, 0, false);
    if (private_rq_ == nullptr)
        return;
    for (const PostedReceive &receive : private_rq_->TakeAll()) {
        ibv_wc wc{};
        wc.wr_id = receive.wr_id;
        wc.status = IBV_WC_WR_FLUSH_ERR;
        wc.opcode = IBV_WC_RECV;
        SendQueue::Complete(recv_cq_, qp_num_, wc);
    }
}

void Target::Refuse(ibv_wc_status status) {
    acks_->Queue(*out_);
    OutboundMessage nak;
    nak.header.opcode = wire::Opcode::kNak;
    nak.header.sequence = in_->header.sequence;
    nak.header.rkey = status;
    out_->Push(std::move(nak));
}

}  // namespace rpma::provider::tcp
