// Connection, the inbound stream: reading the socket (through the stage, or
// straight into a large payload's destination) and framing it into
// messages, header then payload, whatever the split of bytes across reads.
// A complete header goes to the initiator (answers to our requests:
// tcp_connection_initiator.cc) or the target executor (the peer's requests:
// tcp_connection_target.cc). Tests: tcp_wire_test, tcp_remote_ops_test,
// tcp_hostile_peer_test, and the wire fuzzer (tests/fuzz).
#include "rpma_core/src/provider/tcp/tcp_connection.h"

#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "rpma_core/src/log.h"
#include "rpma_core/src/provider/tcp/tcp_completion_queue.h"

namespace rpma::provider::tcp {
namespace {

// Bytes read from one connection per wake-up, so one busy peer cannot starve
// the others (the socket stays readable and epoll brings us back).
constexpr size_t kReadBudgetBytes = size_t{4} << 20;

// What is left of a payload at least this long is read straight into its
// destination (with the stage behind it for what follows).
constexpr size_t kDirectPayloadBytes = size_t{8} << 10;

}  // namespace

void Connection::ReadInbound(bool drained) {
    if (reader_busy_)
        return;  // WaitDirect has the socket; it reads on return
    posted_since_read_ = false;
    size_t budget = kReadBudgetBytes;
    // A read that came back short emptied the socket: another would only
    // say EAGAIN, and whoever watches the socket hears of the next bytes.
    while (ReadingEnabled()) {
        if (!stage_.Empty()) {
            ConsumeStaged();
            continue;
        }
        stage_.Clear();
        if (drained || budget == 0)
            return;
        const bool direct = in_.phase == Inbound::Phase::kPayload &&
                            in_.payload_length - in_.payload_received >= kDirectPayloadBytes;
        if (!(direct ? ReadPayloadDirect(&budget, &drained) : FillStage(&budget, &drained)))
            return;
    }
}

bool Connection::ConsumeReadResult(ssize_t result) {
    if (result > 0)
        return true;
    if (result == 0) {
        OnPeerGone(0);
        return false;
    }
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
        return false;
    OnPeerGone(errno);
    return false;
}

bool Connection::FillStage(size_t *budget, bool *drained) {
    const ssize_t got = SocketRecv(socket_.Get(), stage_.Buffer(), Stage::kSize, MSG_DONTWAIT);
    if (!ConsumeReadResult(got))
        return false;
    const auto length = static_cast<size_t>(got);
    stage_.Filled(length);
    *budget -= std::min(*budget, length);
    *drained = length < Stage::kSize;
    return true;
}

void Connection::ConsumeStaged() {
    const uint8_t *data = stage_.Data();
    const size_t available = stage_.Available();
    if (in_.phase == Inbound::Phase::kPayload) {
        const size_t length = std::min(available, in_.payload_length - in_.payload_received);
        if (!CopyPayload(data, length))
            return;
        stage_.Consume(length);
        in_.payload_received += length;
        if (in_.payload_received == in_.payload_length) {
            in_.phase = Inbound::Phase::kHeader;
            OnPayloadComplete();
        }
        return;
    }
    const size_t length = std::min(available, wire::kHeaderSize - in_.header_received);
    memcpy(in_.header_bytes + in_.header_received, data, length);
    stage_.Consume(length);
    in_.header_received += length;
    if (in_.header_received < wire::kHeaderSize) {
        // Rare (a header split across reads): before the handshake, the
        // first bytes may already show that the peer is not rpma.
        if (!IsLive() && !PlausibleHandshake()) [[unlikely]]
            return ProtocolError("not an rpma handshake");
        return;
    }
    in_.header_received = 0;
    wire::Header header;
    const wire::ParseError error = wire::ParseHeader(in_.header_bytes, &header);
    if (error != wire::ParseError::kNone)
        return ProtocolError(wire::ParseErrorString(error));
    in_.header = header;
    OnHeader();
}

bool Connection::DestinationWindow(size_t length, iovec *iov, int *count) const {
    size_t skip = in_.payload_received;
    *count = 0;
    for (const MemorySegment &segment : in_.Destination()) {
        if (length == 0)
            break;
        if (skip >= segment.length) {
            skip -= segment.length;
            continue;
        }
        if (segment.region->Revoked())
            return false;
        const size_t part = std::min(segment.length - skip, length);
        iov[*count].iov_base = segment.addr + skip;
        iov[*count].iov_len = part;
        ++*count;
        length -= part;
        skip = 0;
    }
    return true;
}

bool Connection::CopyPayload(const uint8_t *data, size_t length) {
    if (in_.Destination().empty()) {
        if (!in_.discard)
            memcpy(in_.small.data() + in_.payload_received, data, length);
        return true;
    }
    iovec iov[kMaxSge];
    int count = 0;
    if (!DestinationWindow(length, iov, &count)) {
        OnPayloadRevoked();
        return false;
    }
    for (int i = 0; i < count; ++i) {
        memcpy(iov[i].iov_base, data, iov[i].iov_len);
        data += iov[i].iov_len;
    }
    return true;
}

void Connection::OnPayloadRevoked() {
    if (wire::IsRequest(in_.header.opcode)) {
        RejectRequest(IBV_WC_REM_ACCESS_ERR, "the target memory region was deregistered");
    } else {
        RPMA_LOG_ERROR(
            "the destination of a READ was deregistered while the READ was in "
            "flight");
        Fail(IBV_WC_LOC_PROT_ERR, /*send_nothing=*/true);
    }
}

ssize_t Connection::ReceivePayloadDirect(bool *revoked) {
    // The payload's destination, then room in the stage for the next header
    // only: a large payload is usually followed by another, whose bytes
    // should go straight to their destination too, not through the stage.
    iovec iov[kMaxSge + 1];
    int count = 0;
    if (!DestinationWindow(in_.payload_length - in_.payload_received, iov, &count)) {
        *revoked = true;
        return -1;
    }
    iov[count].iov_base = stage_.Buffer();
    iov[count].iov_len = wire::kHeaderSize;
    ++count;
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = static_cast<size_t>(count);
    return SocketRecvMsg(socket_.Get(), &msg, MSG_DONTWAIT);
}

bool Connection::ReadPayloadDirect(size_t *budget, bool *drained) {
    if (in_.discard)
        return FillStage(budget, drained);
    const size_t remaining = in_.payload_length - in_.payload_received;
    bool revoked = false;
    const ssize_t got = ReceivePayloadDirect(&revoked);
    if (revoked) {
        OnPayloadRevoked();
        return false;
    }
    if (!ConsumeReadResult(got))
        return false;
    const auto total = static_cast<size_t>(got);
    const size_t to_payload = std::min(total, remaining);
    in_.payload_received += to_payload;
    stage_.Filled(total - to_payload);
    *budget -= std::min(*budget, total);
    *drained = total < remaining + wire::kHeaderSize;
    if (in_.payload_received == in_.payload_length) {
        in_.phase = Inbound::Phase::kHeader;
        OnPayloadComplete();
    }
    return true;
}

void Connection::BeginPayload(size_t length) {
    if (in_.Destination().empty() && length > in_.small.size() && !in_.discard)
        return ProtocolError("payload without a destination");
    in_.payload_length = length;
    in_.payload_received = 0;
    if (length == 0) {
        in_.phase = Inbound::Phase::kHeader;
        OnPayloadComplete();
    } else {
        in_.phase = Inbound::Phase::kPayload;
    }
}

void Connection::OnHeader() {
    const wire::Header &header = in_.header;
    in_.destination.clear();
    in_.into_receive = false;
    switch (header.opcode) {
        case wire::Opcode::kConnectRequest:
            if (active_ || state_ != State::kAwaitingRequest)
                return ProtocolError("unexpected CONNECT_REQUEST");
            return BeginPayload(header.length);
        case wire::Opcode::kAccept:
            if (!active_ || state_ != State::kAwaitingReply)
                return ProtocolError("unexpected ACCEPT");
            return BeginPayload(header.length);
        case wire::Opcode::kReject:
            if (!active_ || state_ != State::kAwaitingReply)
                return ProtocolError("unexpected REJECT");
            RPMA_LOG_NOTICE("%s rejected the connection request", peer_.c_str());
            Emit(CmEventType::kRejected);
            return CloseNow();
        case wire::Opcode::kReadyToUse:
            if (active_ || state_ != State::kAwaitingRtu)
                return ProtocolError("unexpected READY_TO_USE");
            MoveTo(State::kEstablished);
            timer_.Disarm(TimerPurpose::kHandshake);
            return Emit(CmEventType::kEstablished);
        case wire::Opcode::kDisconnect:
            return OnDisconnectMessage();
        case wire::Opcode::kAck:
            return OnAck(header.sequence);
        case wire::Opcode::kNak:
            return OnNak(header);
        case wire::Opcode::kReadResponse:
            return OnReadResponseHeader(header);
        case wire::Opcode::kAckRequest:
            if (!IsLive())
                return ProtocolError("unexpected ACK_REQUEST");
            // Everything before it was applied; answered even when nothing
            // is new, as the peer may be asking whether we live.
            acks_.Force();
            return;
        default:
            if (header.flags & wire::kCarriesAck) {
                OnAck(header.remote_addr);
                if (!IsLive())
                    return;
            }
            return OnRequestHeader();
    }
}

void Connection::CountWritten() {
    // A WRITE's payload has one destination segment (none when empty).
    if (!in_.destination.empty())
        in_.destination[0].region->CountWritten(in_.header.length);
}

void Connection::OnPayloadComplete() {
    const wire::Header &header = in_.header;
    if (std::exchange(in_.discard, false)) [[unlikely]] {
        // Dropped: a request no longer applied, or a READ_RESPONSE whose
        // queue pair was destroyed.
        in_.destination.clear();
        return;
    }
    switch (header.opcode) {
        case wire::Opcode::kConnectRequest:
            return OnConnectRequest();
        case wire::Opcode::kAccept:
            return OnAccept();
        case wire::Opcode::kWrite:
            CountWritten();
            return CompleteRequest();
        case wire::Opcode::kWriteWithImm:
            CountWritten();
            CompleteReceive(IBV_WC_SUCCESS, IBV_WC_RECV_RDMA_WITH_IMM, header.length, true);
            return CompleteRequest();
        case wire::Opcode::kSend:
            CompleteReceive(IBV_WC_SUCCESS, IBV_WC_RECV, header.length, false);
            return CompleteRequest();
        case wire::Opcode::kSendWithImm:
            CompleteReceive(IBV_WC_SUCCESS, IBV_WC_RECV, header.length, true);
            return CompleteRequest();
        case wire::Opcode::kAtomicWrite: {
            uint64_t value;
            memcpy(&value, in_.small.data(), sizeof(value));
            if (in_.atomic_target.region->Revoked())
                return RejectRequest(IBV_WC_REM_ACCESS_ERR, "the memory region was deregistered");
            std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t *>(in_.atomic_target.addr))
                .store(value);
            in_.atomic_target.region->CountWritten(sizeof(value));
            in_.atomic_target = {};
            return CompleteRequest();
        }
        case wire::Opcode::kReadResponse:
            in_.destination.clear();
            if (PendingWr *read = sq_.Front();
                read != nullptr && ++read->parts_answered < read->parts)
                return;  // more parts to come (tcp_parts.h)
            sq_.CompleteFront(IBV_WC_SUCCESS);
            return FailOnFrontLocalError();
        default:
            return ProtocolError("unexpected payload");
    }
}

}  // namespace rpma::provider::tcp
