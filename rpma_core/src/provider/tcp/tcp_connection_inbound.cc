// Connection, the inbound dispatch: what the InboundReader (tcp_inbound_reader.h)
// framed goes where it belongs. A header goes to the handshake, to the
// initiator (answers to our requests: tcp_connection_initiator.cc) or to
// the target (the peer's requests: tcp_connection_target.cc).
// Tests: tcp_remote_ops_test, tcp_hostile_peer_test, tcp_hostile_answers_test
// and the wire fuzzer (tests/fuzz).
#include "rpma_core/src/provider/tcp/tcp_connection.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "rpma_core/src/log.h"
#include "rpma_core/src/provider/tcp/tcp_completion_queue.h"

namespace rpma::provider::tcp {

// Reads (reader_) and dispatches what it frames while reading is enabled.
// `drained`: the last read came back short already. Nothing while a direct
// reader has the socket.
void Connection::ReadInbound(bool drained) {
    if (inline_.ReaderBusy())
        return;  // WaitDirect has the socket; it reads on return
    initiator_.Read();
    InboundReader::Budget budget;
    budget.drained = drained;
    while (ReadingEnabled()) {
        switch (reader_.Next(socket_.Get(), &budget)) {
            case InboundReader::Framed::kHeader:
                OnHeader();
                break;
            case InboundReader::Framed::kPayload:
                OnPayloadComplete();
                break;
            case InboundReader::Framed::kPartialHeader:
                // Before the handshake, the first bytes may already show
                // that the peer is not rpma.
                if (!IsLive(state_) && !Handshake::Plausible(state_, in())) [[unlikely]]
                    return ProtocolError("not an rpma handshake");
                break;
            case InboundReader::Framed::kMalformed:
                return ProtocolError(reader_.error());
            case InboundReader::Framed::kRevoked:
                // The memory under the payload was deregistered meanwhile.
                if (wire::IsRequest(in().header.opcode))
                    return Act(target_.OnPayloadRevoked());
                return Act(initiator_.OnPayloadRevoked());
            case InboundReader::Framed::kClosed:
                return OnPeerGone(reader_.peer_error());
            case InboundReader::Framed::kStop:
                return;
        }
    }
}

void Connection::BeginPayload(size_t length) {
    if (!reader_.BeginPayload(length))
        return ProtocolError("payload without a destination");
    if (length == 0)
        OnPayloadComplete();
}

void Connection::OnHeader() {
    const wire::Header &header = in().header;
    in().destination.clear();
    in().into_receive = false;
    switch (header.opcode) {
        case wire::Opcode::kConnectRequest:
        case wire::Opcode::kAccept:
        case wire::Opcode::kReject:
        case wire::Opcode::kReadyToUse:
        case wire::Opcode::kDisconnect:
            return OnHandshakeHeader();
        case wire::Opcode::kAck:
            return Act(initiator_.OnAck(header.sequence, IsLive(state_)));
        case wire::Opcode::kNak:
            return Act(initiator_.OnNak(header, IsLive(state_)));
        case wire::Opcode::kReadResponse:
            return Act(
                initiator_.OnReadResponse(header, IsLive(state_), has_qp_, &in().destination));
        case wire::Opcode::kAckRequest:
            if (!IsLive(state_))
                return ProtocolError("unexpected ACK_REQUEST");
            // Everything before it was applied; answered even when nothing
            // is new, as the peer may be asking whether we live.
            acks_.Force();
            return;
        default:
            if (header.flags & wire::kCarriesAck) {
                Act(initiator_.OnAck(header.remote_addr, IsLive(state_)));
                if (!IsLive(state_))
                    return;
            }
            return Act(target_.OnRequest(IsLive(state_)));
    }
}

void Connection::OnPayloadComplete() {
    const wire::Header &header = in().header;
    if (std::exchange(in().discard, false)) [[unlikely]] {
        // Dropped: a request no longer applied, or a READ_RESPONSE whose
        // queue pair was destroyed.
        in().destination.clear();
        return;
    }
    switch (header.opcode) {
        case wire::Opcode::kConnectRequest:
        case wire::Opcode::kAccept:
            return OnHandshakePayload();
        case wire::Opcode::kWrite:
        case wire::Opcode::kWriteWithImm:
        case wire::Opcode::kSend:
        case wire::Opcode::kSendWithImm:
        case wire::Opcode::kAtomicWrite:
            return Act(target_.OnRequestPayload());
        case wire::Opcode::kReadResponse:
            in().destination.clear();
            return Act(initiator_.OnReadResponsePayload());
        default:
            return ProtocolError("unexpected payload");
    }
}

}  // namespace rpma::provider::tcp
