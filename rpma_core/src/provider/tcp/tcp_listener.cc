#include "rpma_core/src/provider/tcp/tcp_listener.h"

#include <sys/epoll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <vector>

#include "rpma_core/src/log.h"
#include "rpma_core/src/provider/tcp/tcp_request_queue.h"
#include "rpma_core/src/provider/tcp/tcp_socket.h"

namespace rpma::provider::tcp {

// The listening socket's event handler, kept alive by the progress engine
// while registered.
class Acceptor final : public EventHandler, public std::enable_shared_from_this<Acceptor> {
  public:
    Acceptor(const ConnectionDeps &deps, UniqueFd socket, std::weak_ptr<RequestQueue> requests)
        : deps_(deps), socket_(std::move(socket)), requests_(std::move(requests)) {}

    int Start() {
        std::lock_guard lock(mu_);
        return deps_.engine->Add(socket_.Get(), EPOLLIN, shared_from_this(), &token_);
    }

    void Stop() {
        std::lock_guard lock(mu_);
        if (!socket_.Valid())
            return;
        deps_.engine->Remove(token_, socket_.Get());
        socket_.Reset();
    }

    void OnEvents(int /*fd*/, uint32_t /*events*/) override {
        std::lock_guard lock(mu_);
        // Bounded so a connection storm cannot monopolize the progress thread.
        for (int i = 0; i < kMaxAcceptsPerWakeup && socket_.Valid(); ++i) {
            UniqueFd accepted(
                accept4(socket_.Get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
            if (!accepted.Valid()) {
                if (errno == EINTR || errno == ECONNABORTED)
                    continue;
                if (errno != EAGAIN && errno != EWOULDBLOCK)
                    RPMA_LOG_ERROR("cannot accept a connection: %s", strerror(errno));
                return;
            }
            if (SetNoDelay(accepted.Get()) != 0)
                RPMA_LOG_WARNING("cannot set TCP_NODELAY on an accepted connection: %s",
                                 strerror(errno));
            if (const int err = Connection::StartPassive(deps_, std::move(accepted), requests_);
                err != 0)
                RPMA_LOG_ERROR("cannot handle an incoming connection: %s", strerror(err));
        }
    }

  private:
    static constexpr int kMaxAcceptsPerWakeup = 64;

    const ConnectionDeps deps_;
    std::mutex mu_;
    UniqueFd socket_;
    uint64_t token_ = 0;
    const std::weak_ptr<RequestQueue> requests_;
};

int Listener::Create(const ConnectionDeps &connection_deps, const CmIdDeps &cm_id_deps,
                     const char *addr, const char *port,
                     std::unique_ptr<provider::Listener> *listener) {
    if (listener == nullptr)
        return EINVAL;
    std::vector<SocketAddress> addresses;
    if (const int err = ResolveAddresses(addr, port, /*passive=*/true, &addresses); err != 0)
        return err;
    UniqueFd socket;
    int err = EADDRNOTAVAIL;
    for (const SocketAddress &address : addresses) {
        if ((err = OpenStreamSocket(address.Family(), &socket)) != 0)
            continue;
        const int one = 1;
        setsockopt(socket.Get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if (bind(socket.Get(), address.Get(), address.length) == 0 &&
            listen(socket.Get(), SOMAXCONN) == 0) {
            err = 0;
            break;
        }
        err = errno;
        RPMA_LOG_ERROR("cannot listen on %s: %s", address.ToString().c_str(), strerror(err));
        socket.Reset();
    }
    if (err != 0)
        return err;
    const uint16_t bound_port = LocalPort(socket.Get());

    auto requests = std::make_shared<RequestQueue>();
    if (!requests->Valid()) {
        err = errno;
        RPMA_LOG_ERROR("cannot create the listener's event fd: %s", strerror(err));
        return err;
    }
    auto acceptor = std::make_shared<Acceptor>(connection_deps, std::move(socket), requests);
    if ((err = acceptor->Start()) != 0)
        return err;
    *listener = std::make_unique<Listener>(cm_id_deps, std::move(acceptor), std::move(requests),
                                           bound_port);
    return 0;
}

Listener::Listener(const CmIdDeps &cm_id_deps, std::shared_ptr<Acceptor> acceptor,
                   std::shared_ptr<RequestQueue> requests, uint16_t port)
    : cm_id_deps_(cm_id_deps),
      acceptor_(std::move(acceptor)),
      requests_(std::move(requests)),
      port_(port) {}

Listener::~Listener() {
    acceptor_->Stop();
    for (const std::shared_ptr<Connection> &request : requests_->Close())
        request->Reject();
}

int Listener::Fd() const {
    return requests_->Fd();
}

int Listener::NextRequest(std::unique_ptr<provider::CmId> *id) {
    if (id == nullptr)
        return EINVAL;
    std::shared_ptr<Connection> request;
    if (const int err = requests_->Take(&request); err != 0)
        return err;
    *id = std::make_unique<CmId>(cm_id_deps_, std::move(request));
    return 0;
}

}  // namespace rpma::provider::tcp
