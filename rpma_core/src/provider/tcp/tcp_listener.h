// rdma_listen: a listening socket watched by the progress thread. Accepted
// sockets become passive connections that read their CONNECT_REQUEST on the
// progress thread; only a complete request reaches the application, so a
// slow or silent client never blocks it.
//
// On an open network most of that happens before anyone authenticated the
// peer (rpmad checks a session token in the request's private data), so
// what a listener spends on peers it has not handed to the application yet
// is bounded (ListenerLimits):
//  - a connection that has not sent its request costs one fd (its socket;
//    tcp_incoming_sockets.h); beyond max_handshaking of them, or when the
//    process runs out of fds, the oldest is told REJECT and closed;
//  - a complete request waits for the application (rpma_ep_next_conn_req)
//    in a queue of at most max_pending; a request that finds it full is
//    refused with a REJECT at once. The newest is refused, not the oldest:
//    a queued request is never taken back from under an application about
//    to take it, and the refused peer learns it right away and may retry
//    (as a kernel's full listen backlog does);
//  - when accept fails for want of fds or memory and nothing held can be
//    closed instead, the listener stops watching its socket for a short,
//    growing interval (10 ms to 500 ms) instead of spinning on it, and logs
//    one line per such episode. Meanwhile connections wait in the kernel's
//    backlog.
// A listener's own fds: its socket, two event fds (requests arriving and
// requests queued) and a reserve of two (see tcp_listener.cc).
// Per-peer log lines are rate-limited (RPMA_LOG_*_RATELIMITED).
#ifndef RPMA_CORE_SRC_PROVIDER_TCP_TCP_LISTENER_H
#define RPMA_CORE_SRC_PROVIDER_TCP_TCP_LISTENER_H

#include <cstddef>
#include <cstdint>
#include <memory>

#include "rpma_core/src/provider/provider.h"
#include "rpma_core/src/provider/tcp/tcp_cm_id.h"
#include "rpma_core/src/provider/tcp/tcp_connection.h"

namespace rpma::provider::tcp {

class Acceptor;

struct ListenerLimits {
    static constexpr size_t kDefaultMaxPending = 128;
    static constexpr size_t kDefaultMaxHandshaking = 128;
    // Largest value either environment variable may set.
    static constexpr size_t kMaxLimit = 65536;

    // Complete connection requests waiting for the application
    // (RPMA_TCP_MAX_PENDING). Each holds three fds (socket, timer, event fd).
    size_t max_pending = kDefaultMaxPending;
    // Accepted connections that have not sent their request yet
    // (RPMA_TCP_MAX_HANDSHAKING). Each holds one fd.
    size_t max_handshaking = kDefaultMaxHandshaking;
};

class Listener final : public provider::Listener {
  public:
    // Binds the first address of `addr`:`port` that accepts a bind; port "0"
    // picks a free port (see Port()).
    static int Create(const ConnectionDeps &connection_deps, const CmIdDeps &cm_id_deps,
                      const ListenerLimits &limits, const char *addr, const char *port,
                      std::unique_ptr<provider::Listener> *listener);

    Listener(const CmIdDeps &cm_id_deps, std::shared_ptr<Acceptor> acceptor, uint16_t port);
    // Stops accepting and rejects the requests nobody took.
    ~Listener() override;
    Listener(const Listener &) = delete;
    Listener &operator=(const Listener &) = delete;

    int Fd() const override;
    int NextRequest(std::unique_ptr<provider::CmId> *id) override;
    uint16_t Port() const { return port_; }

  private:
    const CmIdDeps cm_id_deps_;
    const std::shared_ptr<Acceptor> acceptor_;
    const uint16_t port_;
};

}  // namespace rpma::provider::tcp

#endif  // RPMA_CORE_SRC_PROVIDER_TCP_TCP_LISTENER_H
