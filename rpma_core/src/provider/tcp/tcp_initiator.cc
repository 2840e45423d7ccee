// The initiator's posting and answers (tcp_initiator.h); what a post sends
// is built in tcp_requests.h.
#include "rpma_core/src/provider/tcp/tcp_initiator.h"

#include <sys/socket.h>
#include <sys/uio.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "rpma_core/src/log.h"

#include "rpma_core/src/provider/tcp/tcp_completion_queue.h"
#include "rpma_core/src/provider/tcp/tcp_parts.h"
#include "rpma_core/src/provider/tcp/tcp_receive_queue.h"
#include "rpma_core/src/provider/tcp/tcp_requests.h"
#include "rpma_core/src/provider/tcp/tcp_socket.h"

namespace rpma::provider::tcp {

int Initiator::CheckCanPost(bool has_qp, ConnectionState state) {
    if (!has_qp) {
        RPMA_LOG_ERROR("the queue pair was destroyed");
        return EINVAL;
    }
    switch (state) {
        case ConnectionState::kEstablished:
        case ConnectionState::kDisconnecting:
        case ConnectionState::kClosing:
        case ConnectionState::kClosed:
            return 0;  // Post flushes what can no longer be sent
        default:
            RPMA_LOG_ERROR("cannot post: the connection is %s, not yet established",
                           ConnectionStateName(state));
            return ENOTCONN;
    }
}

void Initiator::PostWhileBroken(PendingWr &&wr, bool disconnecting) {
    wr.signaled = true;
    if (disconnecting) {
        sq_.Push(std::move(wr));
        return;
    }
    ibv_wc wc{};
    wc.wr_id = wr.wr_id;
    wc.status = IBV_WC_WR_FLUSH_ERR;
    wc.opcode = wr.opcode;
    SendQueue::Complete(cq_, sq_.QpNum(), wc);
}

Initiator::Posted Initiator::Post(PendingWr &&wr, OutboundMessage &&message, uint64_t length,
                                  int fd, bool more) {
    const uint32_t parts = wr.parts;
    const bool request_ack = acks_->AskFor(wr.signaled, parts, wr.is_read, sq_.Depth());
    if (request_ack && !wr.is_read)
        message.header.flags |= wire::kAckRequested;
    const bool may_wait_for_doorbell =
        !request_ack && !wr.is_read && wr.local_error == IBV_WC_SUCCESS;
    const bool nothing_in_flight = sq_.Empty();
    const bool first_unsent = wr.local_error != IBV_WC_SUCCESS && !sq_.ErrorPending();
    const bool is_read = wr.is_read;
    const uint64_t sequence = sq_.Push(std::move(wr));
    if (sequence == 0) {
        if (first_unsent && !nothing_in_flight) {
            // This request fails once it is at the front, behind requests
            // sent without asking for an ACK: ask for it now (a NIC would
            // fail it when it gets to it, whatever the acknowledgements).
            OutboundMessage ask;
            ask.header.opcode = wire::Opcode::kAckRequest;
            out_->Push(std::move(ask));
        }
        return Posted::kQueued;
    }
    message.header.sequence = sequence;
    // Only the answer to this very request can be awaited: it is a round
    // trip away. (With earlier requests in flight, their answers may be in
    // already: a pipelining poller keeps reading.)
    posted_since_read_ = posted_since_read_ || nothing_in_flight;
    if (parts > 1) [[unlikely]] {
        EnqueueParts(message, parts, length);
        return Posted::kParts;
    }
    if (more && !is_read && length <= InlineLease::kDoorbellBatchBytes &&
        out_->QueuedBytes() <= InlineLease::kDoorbellBatchBytes) {
        Enqueue(std::move(message));
        lease_->HoldForMore();
        if (cq_ != nullptr)
            cq_->CancelSkip();  // the next poll rings it
        return Posted::kHeld;
    }
    // A SEND goes at once: it is what a peer answers, and what follows it is
    // usually a wait for that answer, not another request to batch.
    if (!may_wait_for_doorbell || wire::IsSend(message.header.opcode)) {
        switch (SendAtOnce(message, fd)) {
            case Sent::kWhole:
                LetPollSkip();
                return Posted::kSent;
            case Sent::kPartly:
                return Posted::kSentPartly;
            case Sent::kNo:
                break;
        }
    }
    Enqueue(std::move(message));
    return may_wait_for_doorbell ? Posted::kMayWaitBell : Posted::kQueued;
}

void Initiator::LetPollSkip() {
    // Everything is sent and only the answer to what was just posted can be
    // awaited: a poll has nothing to do here, and the CQ can tell it so
    // without it taking the connection's lock.
    if (posted_since_read_ && out_->Empty() && cq_ != nullptr && cq_->SkipNextDrive())
        posted_since_read_ = false;
}

bool Initiator::WaitForDoorbell(bool live) {
    // Only in the linger after an inline wait: the application drives the
    // connection itself and its next post, wait or poll sends this along
    // (one sendmsg, e.g. a WRITE with the FLUSH after it). The engine's
    // deadline bounds the delay if it does not come back.
    if (!live || !lease_->MayWaitForDoorbell(out_->Size(), out_->QueuedBytes()))
        return false;
    if (cq_ != nullptr)
        cq_->CancelSkip();  // the next poll rings it
    return true;
}

void Initiator::Enqueue(OutboundMessage &&message) {
    for (MemorySegment &segment : message.segments)
        segment.Own();  // sent later, whatever the cache holds then
    out_->Push(std::move(message));
}

void Initiator::EnqueueParts(const OutboundMessage &whole, uint32_t parts, uint64_t length) {
    for (uint32_t k = 0; k < parts; ++k)
        out_->Push(RequestPart(whole, parts, length, k));
}

Initiator::Sent Initiator::SendAtOnce(OutboundMessage &message, int fd) {
    if (!out_->Empty() || fd < 0 || lease_->DoorbellPending())
        return Sent::kNo;
    size_t payload = message.inline_length;
    for (const MemorySegment &segment : message.segments) {
        if (segment.region->Revoked())
            return Sent::kNo;  // the queue's flush reports it
        payload += segment.length;
    }
    // The pending ACK rides along: in a SEND's own header, or in front.
    const bool ack = acks_->Owed();
    const uint64_t ack_sequence = ack ? acks_->Take() : 0;
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
        sent = SocketSend(fd, bytes, at, MSG_NOSIGNAL | MSG_DONTWAIT);
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
        sent = SocketSendMsg(fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    }
    if (sent == static_cast<ssize_t>(length))
        return Sent::kWhole;
    // The socket took part or nothing (or failed: the queue's flush, which
    // the connection's progress runs, reports it): the rest is queued.
    if (ack_bytes != 0)
        out_->PushAck(ack_sequence);
    Enqueue(std::move(message));
    out_->MarkSent(sent > 0 ? static_cast<size_t>(sent) : 0);
    return Sent::kPartly;
}

Initiator::Verdict Initiator::OnAck(uint64_t sequence, bool live) {
    if (!live)
        return ProtocolError("unexpected ACK");
    if (!sq_.Acknowledge(sequence))
        return ProtocolError("ACK for a request that was never sent or not yet answered");
    return CheckFront();
}

Initiator::Verdict Initiator::OnNak(const wire::Header &header, bool live) {
    if (!live)
        return ProtocolError("unexpected NAK");
    if (!sq_.CompleteBefore(header.sequence))
        return ProtocolError("NAK for a request that is not outstanding");
    return {Verdict::Kind::kRefused, NakStatus(header.rkey)};
}

Initiator::Verdict Initiator::OnReadResponse(const wire::Header &header, bool live, bool has_qp,
                                             SegmentList *destination) {
    if (!live)
        return ProtocolError("unexpected READ_RESPONSE");
    if (!has_qp)
        return {Verdict::Kind::kDropPayload};  // the QP went while its READs were in flight
    if (!sq_.CompleteBefore(header.sequence))
        return ProtocolError("READ_RESPONSE for a request that is not outstanding");
    const PendingWr *read = sq_.Front();
    const uint32_t part = read->parts_answered;
    if (!read->is_read || header.sequence != read->FirstSequence() + part ||
        PartLength(read->byte_len, part) != header.length)
        return ProtocolError("READ_RESPONSE does not match the READ");
    *destination = read->parts == 1
                       ? read->read_destination
                       : SliceSegments(read->read_destination, PartOffset(part), header.length);
    return {Verdict::Kind::kReadPayload};
}

Initiator::Verdict Initiator::OnReadResponsePayload() {
    // More parts to come (tcp_parts.h) leave the READ at the front.
    if (PendingWr *read = sq_.Front(); read == nullptr || ++read->parts_answered >= read->parts)
        sq_.CompleteFront(IBV_WC_SUCCESS);
    return CheckFront();
}

}  // namespace rpma::provider::tcp
