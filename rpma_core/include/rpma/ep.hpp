// rpma::Endpoint: owns an rpma_ep listening on addr:port. Its Peer must
// outlive it; the requests it hands out do not depend on it. The destructor
// shuts it down.
#ifndef RPMA_CORE_INCLUDE_RPMA_EP_HPP
#define RPMA_CORE_INCLUDE_RPMA_EP_HPP

#include <string>

#include "librpma.h"
#include "rpma/conn_cfg.hpp"
#include "rpma/conn_req.hpp"
#include "rpma/error.hpp"
#include "rpma/owner.hpp"
#include "rpma/peer.hpp"

namespace rpma {

class Endpoint {
  public:
    Endpoint() = default;

    static Result<Endpoint> Listen(Peer &peer, const std::string &addr, const std::string &port) {
        rpma_ep *ep = nullptr;
        detail::Returned made =
            detail::Check(rpma_ep_listen(peer.get(), addr.c_str(), port.c_str(), &ep));
        if (made.code != 0)
            return detail::Failure(made, "rpma_ep_listen", addr + ":" + port);
        return Endpoint(ep);
    }

    // Readable when Next has a request; may be made O_NONBLOCK. -1 when empty.
    int fd() const {
        int fd = -1;
        if (rpma_ep_get_fd(ep_.get(), &fd) != 0)
            return -1;
        return fd;
    }

    // The next incoming request, its queues shaped by cfg (nullptr:
    // defaults). Blocks unless fd() is O_NONBLOCK; then RPMA_E_NO_EVENT
    // passes through as an error, as do all others.
    Result<ConnReq> Next(const ConnCfg *cfg = nullptr) {
        rpma_conn_req *req = nullptr;
        detail::Returned got =
            detail::Check(rpma_ep_next_conn_req(ep_.get(), cfg ? cfg->get() : nullptr, &req));
        if (got.code != 0)
            return detail::Failure(got, "rpma_ep_next_conn_req");
        return ConnReq(req);
    }

    rpma_ep *get() const { return ep_.get(); }

  private:
    explicit Endpoint(rpma_ep *ep) : ep_(ep) {}

    detail::Owner<rpma_ep, rpma_ep_shutdown> ep_;
};

}  // namespace rpma

#endif  // RPMA_CORE_INCLUDE_RPMA_EP_HPP
