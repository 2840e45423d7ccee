// Connection as an initiator: posting work requests (one message each, sent
// at once from the posting thread when nothing is queued ahead of it, or
// held for the doorbell), and completing them from the peer's ACK, NAK and
// READ_RESPONSE. What a post sends is built in tcp_requests.h. Tests:
// tcp_completion_test, tcp_remote_ops_test, tcp_stress_test.
#include "rpma_core/src/provider/tcp/tcp_connection.h"

#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "rpma_core/src/log.h"
#include "rpma_core/src/provider/tcp/tcp_completion_queue.h"
#include "rpma_core/src/provider/tcp/tcp_parts.h"
#include "rpma_core/src/provider/tcp/tcp_requests.h"
#include "rpma_core/src/provider/tcp/tcp_tsan.h"

namespace rpma::provider::tcp {

void Connection::OnAck(uint64_t sequence) {
    if (!IsLive())
        return ProtocolError("unexpected ACK");
    if (!sq_.Acknowledge(sequence))
        return ProtocolError("ACK for a request that was never sent or not yet answered");
    FailOnFrontLocalError();
}

void Connection::OnNak(const wire::Header &header) {
    if (!IsLive())
        return ProtocolError("unexpected NAK");
    if (!sq_.CompleteBefore(header.sequence))
        return ProtocolError("NAK for a request that is not outstanding");
    const ibv_wc_status status = NakStatus(header.rkey);
    RPMA_LOG_ERROR("%s refused request %llu: %s; the connection is broken", peer_.c_str(),
                   static_cast<unsigned long long>(header.sequence), ibv_wc_status_str(status));
    Fail(status, /*send_nothing=*/true);
}

void Connection::OnReadResponseHeader(const wire::Header &header) {
    if (!IsLive())
        return ProtocolError("unexpected READ_RESPONSE");
    if (!has_qp_) {
        // The application destroyed the QP while its READs were in flight.
        in().discard = true;
        return BeginPayload(header.length);
    }
    if (!sq_.CompleteBefore(header.sequence))
        return ProtocolError("READ_RESPONSE for a request that is not outstanding");
    PendingWr *read = sq_.Front();
    const uint32_t part = read->parts_answered;
    if (!read->is_read || header.sequence != read->FirstSequence() + part ||
        PartLength(read->byte_len, part) != header.length)
        return ProtocolError("READ_RESPONSE does not match the READ");
    in().destination = read->parts == 1
                           ? read->read_destination
                           : SliceSegments(read->read_destination, PartOffset(part), header.length);
    BeginPayload(header.length);
}

int Connection::CheckCanPost() const {
    if (!has_qp_) {
        RPMA_LOG_ERROR("the queue pair was destroyed");
        return EINVAL;
    }
    switch (state_) {
        case State::kEstablished:
        case State::kDisconnecting:
        case State::kClosing:
        case State::kClosed:
            return 0;  // PostRequest flushes what can no longer be sent
        default:
            RPMA_LOG_ERROR("cannot post: the connection is %s, not yet established",
                           ConnectionStateName(state_));
            return ENOTCONN;
    }
}

int Connection::PostSend(const ibv_send_wr &wr) {
    std::lock_guard lock(mu_);
    if (const int err = CheckCanPost(); err != 0)
        return err;
    Request request;
    if (const int err = BuildSendRequest(
            wr, sq_, LocalMemory{deps_.memory, qp_.pd_id, &local_regions_}, &request);
        err != 0)
        return err;
    return PostRequest(std::move(request.wr), std::move(request.message), request.length);
}

int Connection::PostFlush(uint64_t remote_addr, uint32_t rkey, size_t length, FlushType type,
                          bool signaled, uint64_t wr_id) {
    std::lock_guard lock(mu_);
    if (const int err = CheckCanPost(); err != 0)
        return err;
    Request request;
    if (const int err =
            BuildFlushRequest(remote_addr, rkey, length, type, signaled, wr_id, sq_, &request);
        err != 0)
        return err;
    return PostRequest(std::move(request.wr), std::move(request.message), request.length);
}

int Connection::PostAtomicWrite(uint64_t remote_addr, uint32_t rkey, const char value[8],
                                bool signaled, uint64_t wr_id) {
    std::lock_guard lock(mu_);
    if (const int err = CheckCanPost(); err != 0)
        return err;
    Request request;
    if (const int err =
            BuildAtomicWriteRequest(remote_addr, rkey, value, signaled, wr_id, sq_, &request);
        err != 0)
        return err;
    return PostRequest(std::move(request.wr), std::move(request.message));
}

int Connection::PostRequest(PendingWr &&wr, OutboundMessage &&message, uint64_t length) {
    // What the application did to the target region before posting.
    wr.rkey = message.header.rkey;
    tsan::Publish(wr.rkey);
    if (state_ != State::kEstablished) {
        // As a QP in the error state: a work request posted after the
        // connection broke or began to disconnect is accepted and completes
        // with IBV_WC_WR_FLUSH_ERR (signaled or not), after everything
        // posted before it.
        wr.signaled = true;
        if (state_ == State::kDisconnecting) {
            // Never sent, so never acknowledged: FinishDisconnect flushes it
            // behind the earlier ones.
            sq_.Push(std::move(wr));
        } else {
            ibv_wc wc{};
            wc.wr_id = wr.wr_id;
            wc.status = IBV_WC_WR_FLUSH_ERR;
            wc.opcode = wr.opcode;
            SendQueue::Complete(qp_.send_cq, qp_.qp_num, wc);
        }
        return 0;
    }
    const uint32_t parts = wr.parts;
    const bool request_ack = acks_.AskFor(wr.signaled, parts, wr.is_read, qp_.sq_size);
    if (request_ack && !wr.is_read)
        message.header.flags |= wire::kAckRequested;
    WatchPeer();
    const bool may_wait_for_doorbell =
        !request_ack && !wr.is_read && wr.local_error == IBV_WC_SUCCESS;
    const bool nothing_in_flight = sq_.Empty();
    const bool first_unsent = wr.local_error != IBV_WC_SUCCESS && !sq_.ErrorPending();
    const uint64_t sequence = sq_.Push(std::move(wr));
    if (sequence != 0) {
        message.header.sequence = sequence;
        // Only the answer to this very request can be awaited: it is a
        // round trip away. (With earlier requests in flight, their answers
        // may be in already: a pipelining poller keeps reading.)
        posted_since_read_ = posted_since_read_ || nothing_in_flight;
        if (parts > 1) [[unlikely]] {
            EnqueueParts(message, parts, length);
            FailOnFrontLocalError();
            AfterProgress();
            return 0;
        }
        // A SEND goes at once: it is what a peer answers, and what follows
        // it is usually a wait for that answer, not another request to batch.
        if ((!may_wait_for_doorbell || wire::IsSend(message.header.opcode)) &&
            SendAtOnce(message)) {
            LetPollSkip();
            return 0;
        }
        Enqueue(std::move(message));
    } else if (first_unsent && !nothing_in_flight) {
        // This request fails once it is at the front, behind requests sent
        // without asking for an ACK: ask for it now (a NIC would fail it
        // when it gets to it, whatever the acknowledgements).
        OutboundMessage ask;
        ask.header.opcode = wire::Opcode::kAckRequest;
        out_.Push(std::move(ask));
    }
    FailOnFrontLocalError();
    if (may_wait_for_doorbell && sequence != 0 && WaitForDoorbell()) {
        if (qp_.send_cq != nullptr)
            qp_.send_cq->CancelSkip();  // the next poll rings it
        return 0;
    }
    AfterProgress();
    LetPollSkip();
    return 0;
}

void Connection::LetPollSkip() {
    // Everything is sent and only the answer to what was just posted can
    // be awaited: a poll has nothing to do here, and the CQ can tell it so
    // without it taking this lock.
    if (posted_since_read_ && out_.Empty() && qp_.send_cq != nullptr &&
        qp_.send_cq->SkipNextDrive())
        posted_since_read_ = false;
}

void Connection::Enqueue(OutboundMessage &&message) {
    for (MemorySegment &segment : message.segments)
        segment.Own();  // sent later, whatever the cache holds then
    out_.Push(std::move(message));
}

void Connection::EnqueueParts(const OutboundMessage &whole, uint32_t parts, uint64_t length) {
    for (uint32_t k = 0; k < parts; ++k)
        out_.Push(RequestPart(whole, parts, length, k));
}

bool Connection::SendAtOnce(OutboundMessage &message) {
    if (!out_.Empty() || !socket_.Valid() || write_shut_down_ || lease_.DoorbellPending())
        return false;
    size_t payload = message.inline_length;
    for (const MemorySegment &segment : message.segments) {
        if (segment.region->Revoked())
            return false;  // the queue's flush reports it
        payload += segment.length;
    }
    // The pending ACK rides along: in a SEND's own header, or in front.
    const bool ack = acks_.Owed();
    const uint64_t ack_sequence = ack ? acks_.Take() : 0;
    const bool ack_in_header = ack && wire::IsSend(message.header.opcode);
    if (ack_in_header) {
        message.header.flags |= wire::kCarriesAck;
        message.header.remote_addr = ack_sequence;
    }
    wire::EncodedHeader ack_header;
    if (ack && !ack_in_header)
        ack_header = wire::EncodeHeader(wire::AckHeader(ack_sequence));
    const size_t ack_bytes = ack && !ack_in_header ? ack_header.size() : 0;
    const wire::EncodedHeader header = wire::EncodeHeader(message.header);
    const size_t length = ack_bytes + header.size() + payload;
    ssize_t sent;
    if (length <= OutboundQueue::kSmallSendBytes) {
        // One buffer: a plain send costs the kernel less than an iovec array.
        uint8_t bytes[OutboundQueue::kSmallSendBytes];
        size_t at = 0;
        const auto append = [&](const void *data, size_t size) {
            memcpy(bytes + at, data, size);
            at += size;
        };
        append(ack_header.data(), ack_bytes);
        append(header.data(), header.size());
        append(message.inline_payload.data(), message.inline_length);
        for (const MemorySegment &segment : message.segments)
            append(segment.addr, segment.length);
        sent = SocketSend(socket_.Get(), bytes, at, MSG_NOSIGNAL | MSG_DONTWAIT);
    } else {
        // Zero copy: the payload goes from registered memory.
        iovec iov[kMaxSge + 3];
        int count = 0;
        const auto add = [&](const void *data, size_t size) {
            if (size != 0)
                iov[count++] = iovec{const_cast<void *>(data), size};
        };
        add(ack_header.data(), ack_bytes);
        add(header.data(), header.size());
        add(message.inline_payload.data(), message.inline_length);
        for (const MemorySegment &segment : message.segments)
            add(segment.addr, segment.length);
        msghdr msg{};
        msg.msg_iov = iov;
        msg.msg_iovlen = static_cast<size_t>(count);
        sent = SocketSendMsg(socket_.Get(), &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    }
    if (sent == static_cast<ssize_t>(length))
        return true;
    // The socket took part or nothing (or failed: the queue's flush, which
    // AfterProgress runs, reports it): the rest goes through the queue.
    if (ack_bytes != 0)
        out_.PushAck(ack_sequence);
    Enqueue(std::move(message));
    out_.MarkSent(sent > 0 ? static_cast<size_t>(sent) : 0);
    AfterProgress();
    return true;
}

bool Connection::WaitForDoorbell() {
    // Only in the linger after an inline wait: the application drives this
    // connection itself and its next post, wait or poll sends this along
    // (one sendmsg, e.g. a WRITE with the FLUSH after it). The engine's
    // deadline bounds the delay if it does not come back.
    return IsLive() && lease_.MayWaitForDoorbell(out_.Size(), out_.QueuedBytes());
}

void Connection::FailOnFrontLocalError() {
    const ibv_wc_status status = sq_.FrontLocalError();
    if (status == IBV_WC_SUCCESS)
        return;
    if (sq_.CompletionLost())
        return OnCompletionLost();
    Fail(status, /*send_nothing=*/true);
}

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
    return rq_->Post(wr, &local_regions_);  // a private receive queue
}

}  // namespace rpma::provider::tcp
