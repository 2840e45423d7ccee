// Connection, the handshake and the goodbye (what is not its state machine
// is the Handshake role, tcp_handshake.h): rdma_cm's connect, accept,
// reject and disconnect carried by CONNECT_REQUEST, ACCEPT, REJECT,
// READY_TO_USE and DISCONNECT, and telling a peer that does not speak rpma
// from one that does. The states they move through are ConnectionState
// (tcp_connection_state.h). Tests: tcp_connection_test,
// tcp_hostile_handshake_test. The timeouts of its steps (and of the
// target's wait for a receive) are handled here too (OnTimer).
#include "rpma_core/src/provider/tcp/tcp_connection.h"

#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <mutex>

#include "rpma_core/src/log.h"
#include "rpma_core/src/provider/tcp/tcp_protection_domain.h"
#include "rpma_core/src/provider/tcp/tcp_request_queue.h"

namespace rpma::provider::tcp {
int Connection::Connect(const void *private_data, uint8_t length, int timeout_ms) {
    std::lock_guard lock(mu_);
    if (!active_ || state_ != State::kIdle) {
        RPMA_LOG_ERROR("cannot connect: the connection is %s, not a fresh outgoing one",
                       ConnectionStateName(state_));
        return EINVAL;
    }
    if (const int err = Handshake::CheckPrivateData(private_data, length, "connect"); err != 0)
        return err;
    if (!has_qp_) {
        RPMA_LOG_ERROR("cannot connect: create the queue pair first");
        return EINVAL;
    }
    handshake_.SetConnectData(private_data, length);
    if (const int err = timer_.Ensure(*deps_.engine, shared_from_this()); err != 0)
        return err;
    MoveTo(State::kConnecting);
    if (timeout_ms > 0)
        timer_.Arm(TimerPurpose::kConnect, timeout_ms);
    if (!TryNextAddress()) {
        RPMA_LOG_ERROR("cannot connect to %s: no address could be reached", peer_.c_str());
        events_.Emit(CmEventType::kUnreachable);
        CloseNow();
    }
    AfterProgress();
    return 0;
}

bool Connection::TryNextAddress() {
    DetachSocket();
    for (UniqueFd socket; (socket = handshake_.ConnectNext(&peer_)).Valid();)
        if (AttachSocket(std::move(socket)) == 0)
            return true;
    return false;
}

void Connection::FinishTcpConnect() {
    int error = 0;
    socklen_t length = sizeof(error);
    if (getsockopt(socket_.Get(), SOL_SOCKET, SO_ERROR, &error, &length) != 0)
        error = errno;
    if (error != 0) {
        RPMA_LOG_INFO("connect to %s failed: %s", peer_.c_str(), strerror(error));
        if (!TryNextAddress()) {
            RPMA_LOG_ERROR("cannot connect to %s: %s", peer_.c_str(), strerror(error));
            events_.Emit(CmEventType::kUnreachable);
            CloseNow();
        }
        return;
    }
    MoveTo(State::kAwaitingReply);
    timer_.Arm(TimerPurpose::kConnect, deps_.reply_timeout_ms->load());
    out_.Push(handshake_.ConnectRequest(qp_.sq_size));
}

int Connection::Accept(const void *private_data, uint8_t length) {
    std::lock_guard lock(mu_);
    if (active_) {
        RPMA_LOG_ERROR("cannot accept an outgoing connection");
        return EINVAL;
    }
    if (const int err = Handshake::CheckPrivateData(private_data, length, "accept"); err != 0)
        return err;
    if (handshake_.request_failed()) {
        RPMA_LOG_ERROR("cannot accept the connection from %s: the peer gave up on it",
                       peer_.c_str());
        events_.Emit(CmEventType::kConnectError);
        return 0;
    }
    if (state_ != State::kRequestQueued) {
        RPMA_LOG_ERROR("cannot accept: the connection is %s, not a pending request",
                       ConnectionStateName(state_));
        return EINVAL;
    }
    if (!has_qp_) {
        RPMA_LOG_ERROR("cannot accept: create the queue pair first");
        return EINVAL;
    }
    out_.Push(Handshake::Accept(qp_.sq_size, private_data, length));
    MoveTo(State::kAwaitingRtu);
    timer_.Arm(TimerPurpose::kHandshake, Handshake::kPassiveTimeoutMs);
    AfterProgress();
    return 0;
}

int Connection::Reject() {
    std::lock_guard lock(mu_);
    if (active_) {
        RPMA_LOG_ERROR("cannot reject an outgoing connection");
        return EINVAL;
    }
    if (handshake_.request_failed())
        return 0;
    if (state_ != State::kRequestQueued) {
        RPMA_LOG_ERROR("cannot reject: the connection is %s, not a pending request",
                       ConnectionStateName(state_));
        return EINVAL;
    }
    out_.Push(Handshake::Reject());
    BeginClosing();
    AfterProgress();
    return 0;
}

int Connection::Disconnect() {
    std::lock_guard lock(mu_);
    switch (state_) {
        case State::kEstablished: {
            acks_.Queue(out_);
            out_.Push(handshake_.Disconnect());
            MoveTo(State::kDisconnecting);
            Act(target_.StopApplying());
            timer_.Arm(TimerPurpose::kLinger, Handshake::kDisconnectTimeoutMs);
            break;
        }
        case State::kDisconnecting:
            break;
        case State::kConnecting:
        case State::kAwaitingReply:
        case State::kAwaitingRtu:
            initiator_.queue().FlushAll(IBV_WC_WR_FLUSH_ERR);
            target_.FlushReceives();
            events_.Emit(CmEventType::kDisconnected);
            CloseNow();
            break;
        case State::kClosing:
        case State::kClosed:
            // Already broken or closed; confirm it so a caller waiting for
            // the disconnected event does not hang.
            events_.Emit(CmEventType::kDisconnected);
            break;
        case State::kIdle:
        case State::kAwaitingRequest:
        case State::kRequestQueued:
            RPMA_LOG_ERROR("cannot disconnect: the connection is %s", ConnectionStateName(state_));
            return EINVAL;
    }
    AfterProgress();
    return 0;
}

void Connection::Abandon() {
    std::lock_guard lock(mu_);
    switch (state_) {
        case State::kRequestQueued: {
            // rdma_destroy_id on an unanswered request rejects it.
            out_.Push(Handshake::Reject());
            BeginClosing();
            break;
        }
        case State::kConnecting:
        case State::kAwaitingReply:
        case State::kAwaitingRequest:
        case State::kAwaitingRtu:
        case State::kEstablished:
            initiator_.queue().FlushAll(IBV_WC_WR_FLUSH_ERR);
            target_.FlushReceives();
            CloseNow();
            break;
        case State::kDisconnecting:
        case State::kClosing:
            // Finishes on its own, bounded by the linger timer.
            break;
        case State::kIdle:
        case State::kClosed:
            break;
    }
    AfterProgress();
}

// The handshake's messages, each in the one state that may take it.
void Connection::OnHandshakeHeader() {
    const wire::Header &header = in().header;
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
            events_.Emit(CmEventType::kRejected);
            return CloseNow();
        case wire::Opcode::kReadyToUse:
            if (active_ || state_ != State::kAwaitingRtu)
                return ProtocolError("unexpected READY_TO_USE");
            MoveTo(State::kEstablished);
            timer_.Disarm(TimerPurpose::kHandshake);
            events_.Emit(CmEventType::kEstablished);
            return;
        case wire::Opcode::kDisconnect:
            if (!IsLive(state_) || handshake_.peer_disconnected())
                return ProtocolError("unexpected DISCONNECT");
            handshake_.PeerDisconnected();
            acks_.Queue(out_);
            if (!handshake_.sent_disconnect()) {
                out_.Push(handshake_.Disconnect());
                MoveTo(State::kDisconnecting);
                timer_.Arm(TimerPurpose::kLinger, Handshake::kDisconnectTimeoutMs);
            }
            return;
        default:
            return ProtocolError("not a handshake message");
    }
}

// The payload of a CONNECT_REQUEST (passive) or an ACCEPT (active): the
// peer's prefix and private data (Handshake::Take).
void Connection::OnHandshakePayload() {
    const Handshake::Peer peer = handshake_.Take(in());
    if (active_) {
        if (peer != Handshake::Peer::kRpma)
            return ProtocolError("it answered with another protocol or version");
        MoveTo(State::kEstablished);
        timer_.Disarm(TimerPurpose::kConnect);
        OutboundMessage ready;
        ready.header.opcode = wire::Opcode::kReadyToUse;
        out_.Push(std::move(ready));
        events_.Emit(CmEventType::kEstablished, handshake_.peer_private_data());
        return;
    }
    switch (peer) {
        case Handshake::Peer::kRpma:
            break;
        case Handshake::Peer::kOtherProtocol:
            return ProtocolError("a connection request of another protocol");
        case Handshake::Peer::kOtherVersion: {
            // Tell it, so that it reports REJECTED.
            RPMA_LOG_NOTICE_RATELIMITED(
                "rejecting the connection request from %s: another version of rpma", peer_.c_str());
            out_.Push(Handshake::Reject());
            BeginClosing();
            return;
        }
    }
    MoveTo(State::kRequestQueued);
    timer_.Disarm(TimerPurpose::kHandshake);
    std::shared_ptr<RequestQueue> requests = handshake_.Requests();
    if (requests == nullptr || !requests->Offer(shared_from_this())) {
        RPMA_LOG_NOTICE("rejecting the connection request from %s: the listener is closed",
                        peer_.c_str());
        out_.Push(Handshake::Reject());
        BeginClosing();
    }
}

// Before the handshake completes, a violation means the peer does not speak
// rpma: NotAnRpmaPeer. After it, the oldest request fails with
// IBV_WC_BAD_RESP_ERR when the violation is an answer to our requests (as a
// verbs requester reports a responder's malformed or unexpected response),
// IBV_WC_RETRY_EXC_ERR otherwise.
void Connection::ProtocolError(const char *why) {
    if (state_ == State::kAwaitingRequest || state_ == State::kAwaitingReply)
        return NotAnRpmaPeer(why);
    RPMA_LOG_ERROR_RATELIMITED(
        "protocol violation by %s (%s, last header %s, connection %s); breaking the "
        "connection",
        peer_.c_str(), why, wire::OpcodeName(in().header.opcode), ConnectionStateName(state_));
    // in().header_bytes holds the header being handled, parsed or not.
    Fail(wire::IsAnswer(in().header_bytes[0]) ? IBV_WC_BAD_RESP_ERR : IBV_WC_RETRY_EXC_ERR,
         /*send_nothing=*/true);
}

// Passive: closed with one INFO line. Active: REJECTED, as rdma_cm reports a
// port nobody listens on, with an error that names the peer.
void Connection::NotAnRpmaPeer(const char *why) {
    if (active_) {
        RPMA_LOG_ERROR(
            "%s is not an rpma server (%s); the connection is rejected (check the "
            "address and port)",
            peer_.c_str(), why);
        events_.Emit(CmEventType::kRejected);
    } else {
        // A stranger knocking (a scanner, a misdirected client): one quiet
        // line, nothing allocated for it survives.
        RPMA_LOG_INFO_RATELIMITED("%s is not an rpma client (%s); closing its connection",
                                  peer_.c_str(), why);
    }
    CloseNow();
}

// What the connection's timer (ConnectionTimer) ends: a connect or an
// accept that took too long, a goodbye the peer did not finish, and the
// target's wait for a receive.
void Connection::OnTimer(TimerPurpose purpose) {
    switch (purpose) {
        case TimerPurpose::kNone:
            return;
        case TimerPurpose::kConnect:
            if (state_ == State::kConnecting || state_ == State::kAwaitingReply) {
                RPMA_LOG_ERROR("%s did not %s in time", peer_.c_str(),
                               state_ == State::kConnecting ? "answer the connection"
                                                            : "accept or reject the request");
                events_.Emit(CmEventType::kUnreachable);
                CloseNow();
            }
            return;
        case TimerPurpose::kHandshake:
            if (state_ == State::kAwaitingRequest) {
                RPMA_LOG_INFO_RATELIMITED(
                    "%s opened a connection but sent no connection request within "
                    "%d ms; closing it",
                    peer_.c_str(), Handshake::kPassiveTimeoutMs);
                CloseNow();
            } else if (state_ == State::kAwaitingRtu) {
                RPMA_LOG_ERROR_RATELIMITED(
                    "%s did not confirm the accepted connection within %d ms", peer_.c_str(),
                    Handshake::kPassiveTimeoutMs);
                Fail(IBV_WC_WR_FLUSH_ERR, /*send_nothing=*/true);
            }
            return;
        case TimerPurpose::kReceiverNotReady:
            if (target_.WaitingForReceive()) {
                RPMA_LOG_ERROR(
                    "%s sent a message but no receive was posted within %d ms; "
                    "failing the sender with IBV_WC_RNR_RETRY_EXC_ERR (post receives "
                    "before the peer sends)",
                    peer_.c_str(), deps_.rnr_timeout_ms->load());
                Act(target_.ReceiverNotReady());
            }
            return;
        case TimerPurpose::kLinger:
            if (state_ == State::kDisconnecting) {
                RPMA_LOG_NOTICE_RATELIMITED(
                    "%s did not complete the disconnect within %d ms; closing", peer_.c_str(),
                    Handshake::kDisconnectTimeoutMs);
                FinishDisconnect();
            } else if (state_ == State::kClosing) {
                CloseNow();
            }
            return;
    }
}

}  // namespace rpma::provider::tcp
