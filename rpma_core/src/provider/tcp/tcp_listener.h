// rdma_listen: a listening socket watched by the progress thread. Accepted
// sockets become passive connections that read their CONNECT_REQUEST on the
// progress thread; only a complete request reaches the application, so a
// slow or silent client never blocks it.
#ifndef RPMA_CORE_SRC_PROVIDER_TCP_TCP_LISTENER_H
#define RPMA_CORE_SRC_PROVIDER_TCP_TCP_LISTENER_H

#include <cstdint>
#include <memory>

#include "rpma_core/src/provider/provider.h"
#include "rpma_core/src/provider/tcp/tcp_cm_id.h"
#include "rpma_core/src/provider/tcp/tcp_connection.h"

namespace rpma::provider::tcp {

class Acceptor;
class RequestQueue;

class Listener final : public provider::Listener {
  public:
    // Binds the first address of `addr`:`port` that accepts a bind; port "0"
    // picks a free port (see Port()).
    static int Create(const ConnectionDeps &connection_deps, const CmIdDeps &cm_id_deps,
                      const char *addr, const char *port,
                      std::unique_ptr<provider::Listener> *listener);

    Listener(const CmIdDeps &cm_id_deps, std::shared_ptr<Acceptor> acceptor,
             std::shared_ptr<RequestQueue> requests, uint16_t port);
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
    const std::shared_ptr<RequestQueue> requests_;
    const uint16_t port_;
};

}  // namespace rpma::provider::tcp

#endif  // RPMA_CORE_SRC_PROVIDER_TCP_TCP_LISTENER_H
