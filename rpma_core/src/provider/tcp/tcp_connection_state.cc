#include "rpma_core/src/provider/tcp/tcp_connection_state.h"

namespace rpma::provider::tcp {

const char *ConnectionStateName(ConnectionState state) {
    using State = ConnectionState;
    switch (state) {
        case State::kIdle:
            return "idle";
        case State::kConnecting:
            return "connecting";
        case State::kAwaitingReply:
            return "awaiting reply";
        case State::kAwaitingRequest:
            return "awaiting request";
        case State::kRequestQueued:
            return "request queued";
        case State::kAwaitingRtu:
            return "awaiting ready-to-use";
        case State::kEstablished:
            return "established";
        case State::kDisconnecting:
            return "disconnecting";
        case State::kClosing:
            return "closing";
        case State::kClosed:
            return "closed";
    }
    return "unknown";
}

bool IsConnectionMove(ConnectionState from, ConnectionState to) {
    using State = ConnectionState;
    // Any living connection may die; a dying one only finishes dying.
    if (to == State::kClosed)
        return true;
    if (to == State::kClosing)
        return from != State::kClosed;
    switch (from) {
        case State::kIdle:
            return to == State::kConnecting;
        case State::kConnecting:
            return to == State::kAwaitingReply;
        case State::kAwaitingReply:
            return to == State::kEstablished;
        case State::kAwaitingRequest:
            return to == State::kRequestQueued;
        case State::kRequestQueued:
            return to == State::kAwaitingRtu;
        case State::kAwaitingRtu:
            return to == State::kEstablished;
        case State::kEstablished:
            return to == State::kDisconnecting;
        case State::kDisconnecting:
        case State::kClosing:
        case State::kClosed:
            return false;
    }
    return false;
}

}  // namespace rpma::provider::tcp
