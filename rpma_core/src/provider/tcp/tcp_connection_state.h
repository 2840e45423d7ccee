// The states of a connection (tcp_connection.h) and the moves between them,
// as one explicit state machine: Connection changes its state only through
// a move this table allows (checked in debug builds), so the table is the
// whole story of a connection's life.
//
//   active:  idle -> connecting -> awaiting reply -> established
//   passive: awaiting request -> request queued -> awaiting ready-to-use
//            -> established
//   both:    established -> disconnecting; and from any state -> closing
//            (a last NAK or REJECT to deliver) -> closed, or straight to
//            closed. A closed connection stays closed.
#ifndef RPMA_CORE_SRC_PROVIDER_TCP_TCP_CONNECTION_STATE_H
#define RPMA_CORE_SRC_PROVIDER_TCP_TCP_CONNECTION_STATE_H

namespace rpma::provider::tcp {

enum class ConnectionState {
    kIdle,             // active: resolved, Connect not called
    kConnecting,       // active: TCP connect in progress
    kAwaitingReply,    // active: CONNECT_REQUEST sent
    kAwaitingRequest,  // passive: reading the CONNECT_REQUEST
    kRequestQueued,    // passive: waiting for Accept/Reject
    kAwaitingRtu,      // passive: ACCEPT sent
    kEstablished,
    kDisconnecting,  // DISCONNECT sent and/or received, finishing
    kClosing,        // dead; sending a last NAK or REJECT
    kClosed,
};

// "idle", "awaiting reply", ... for the log.
const char *ConnectionStateName(ConnectionState state);

// True when a connection in `from` may move to `to`.
bool IsConnectionMove(ConnectionState from, ConnectionState to);

// Requests and their answers flow: established, or finishing a disconnect.
inline bool IsLive(ConnectionState state) {
    return state == ConnectionState::kEstablished || state == ConnectionState::kDisconnecting;
}

}  // namespace rpma::provider::tcp

#endif  // RPMA_CORE_SRC_PROVIDER_TCP_TCP_CONNECTION_STATE_H
