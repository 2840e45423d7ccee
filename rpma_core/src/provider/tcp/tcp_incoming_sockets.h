// Accepted connections whose CONNECT_REQUEST has not arrived yet: all a
// listener keeps for a peer before it knows the peer speaks rpma, one fd
// each. Their bytes are looked at (MSG_PEEK) and left in the socket, so the
// connection that takes a socket over (Connection::StartPassive) reads the
// request itself; a connection's other fds (its timer and event fd) are made
// only once a request is there.
//
// Bounded by the listener (ListenerLimits::max_handshaking): the oldest goes
// first, to make room for a newer one or for fds when the process runs out
// (a client that means it sends its request at once, so the oldest is the
// likeliest to be idle), and none stays longer than kHandshakeTimeout.
#ifndef RPMA_CORE_SRC_PROVIDER_TCP_TCP_INCOMING_SOCKETS_H
#define RPMA_CORE_SRC_PROVIDER_TCP_TCP_INCOMING_SOCKETS_H

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <unordered_map>
#include <vector>

#include "rpma_core/src/provider/tcp/tcp_progress_engine.h"
#include "rpma_core/src/provider/tcp/tcp_socket.h"
#include "rpma_core/src/provider/tcp/tcp_unique_fd.h"

namespace rpma::provider::tcp {

// What an accepted connection has sent so far.
enum class Arrival {
    kNothingYet,  // nothing, or the start of a CONNECT_REQUEST
    kRequest,     // a complete CONNECT_REQUEST of this rpma version
    kOther,       // anything else: for the connection to answer (it closes
                  // a stranger, and tells rpma of another version REJECT)
    kGone,        // end of stream or an error before a request
};

// Classifies the first `length` bytes a peer sent.
Arrival ClassifyArrival(const uint8_t *bytes, size_t length);
// Looks at what `fd` received without consuming it.
Arrival PeekArrival(int fd);

// Tells the peer REJECT (what a client that sent a request, or is about to,
// reports as RPMA_CONN_REJECTED) and closes the connection. Reads what the
// peer sent first, so that the close is a FIN behind the REJECT, not a reset
// that could overtake it.
void RefuseConnection(UniqueFd socket);

class IncomingSockets {
  public:
    using Clock = ProgressEngine::Clock;
    // As long as a connection gives a peer to send its CONNECT_REQUEST.
    static constexpr std::chrono::milliseconds kHandshakeTimeout{10000};

    struct Held {
        UniqueFd socket;
        SocketAddress peer;
        Clock::time_point accepted;
    };

    explicit IncomingSockets(ProgressEngine *engine) : engine_(engine) {}
    IncomingSockets(const IncomingSockets &) = delete;
    IncomingSockets &operator=(const IncomingSockets &) = delete;

    size_t Size() const { return by_age_.size(); }
    bool Empty() const { return by_age_.empty(); }
    bool Holds(int fd) const { return by_fd_.count(fd) != 0; }

    // Holds `held` (the newest), with its socket watched by `handler` for
    // the next bytes (edge-triggered: bytes left unread must not wake the
    // progress thread again). On error the socket is closed.
    int Add(Held held, std::shared_ptr<EventHandler> handler);
    // Each of these hands sockets back unwatched.
    Held Take(int fd);
    Held TakeOldest();
    std::vector<Held> TakeExpired(Clock::time_point now);
    std::vector<Held> TakeAll();

    // When the oldest one's time is up (precondition: not empty).
    Clock::time_point NextExpiry() const {
        return by_age_.front().held.accepted + kHandshakeTimeout;
    }

  private:
    struct Entry {
        Held held;
        uint64_t token;
    };
    Held Release(std::list<Entry>::iterator it);

    ProgressEngine *const engine_;
    std::list<Entry> by_age_;  // oldest first
    std::unordered_map<int, std::list<Entry>::iterator> by_fd_;
};

}  // namespace rpma::provider::tcp

#endif  // RPMA_CORE_SRC_PROVIDER_TCP_TCP_INCOMING_SOCKETS_H
