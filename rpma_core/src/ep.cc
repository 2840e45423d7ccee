// rpma_ep_*: listening endpoints.
#include <cerrno>
#include <cstring>
#include <memory>
#include <new>

#include "librpma.h"
#include "rpma_core/src/conn_req.h"
#include "rpma_core/src/fd_wait.h"
#include "rpma_core/src/log.h"
#include "rpma_core/src/peer.h"

struct rpma_ep {
    rpma_peer *peer = nullptr;
    std::unique_ptr<rpma::provider::Listener> listener;
};

int rpma_ep_listen(struct rpma_peer *peer, const char *addr, const char *port,
                   struct rpma_ep **ep_ptr) {
    if (peer == nullptr || addr == nullptr || port == nullptr || ep_ptr == nullptr)
        return RPMA_E_INVAL;
    auto ep = std::unique_ptr<rpma_ep>(new (std::nothrow) rpma_ep);
    if (ep == nullptr)
        return RPMA_E_NOMEM;
    int err = peer->device->Listen(addr, port, &ep->listener);
    if (err != 0) {
        RPMA_LOG_ERROR("listening on %s:%s failed: %s", addr, port, strerror(err));
        return err == ENOMEM ? RPMA_E_NOMEM : RPMA_E_PROVIDER;
    }
    ep->peer = peer;
    RPMA_LOG_NOTICE("listening on %s:%s", addr, port);
    *ep_ptr = ep.release();
    return 0;
}

int rpma_ep_shutdown(struct rpma_ep **ep_ptr) {
    if (ep_ptr == nullptr)
        return RPMA_E_INVAL;
    delete *ep_ptr;
    *ep_ptr = nullptr;
    return 0;
}

int rpma_ep_get_fd(const struct rpma_ep *ep, int *fd) {
    if (ep == nullptr || fd == nullptr)
        return RPMA_E_INVAL;
    *fd = ep->listener->Fd();
    return 0;
}

int rpma_ep_next_conn_req(struct rpma_ep *ep, const struct rpma_conn_cfg *cfg,
                          struct rpma_conn_req **req_ptr) {
    if (ep == nullptr || req_ptr == nullptr)
        return RPMA_E_INVAL;
    int fd = ep->listener->Fd();
    bool blocking = !rpma::IsNonBlocking(fd);
    std::unique_ptr<rpma::provider::CmId> id;
    int err;
    while ((err = ep->listener->NextRequest(&id)) == EAGAIN && blocking) {
        err = rpma::WaitReadable(fd);
        if (err != 0)
            break;
    }
    if (err == EAGAIN)
        return RPMA_E_NO_EVENT;
    if (err != 0) {
        RPMA_LOG_ERROR("reading the next connection request failed: %s", strerror(err));
        return err == ENOMEM ? RPMA_E_NOMEM : RPMA_E_PROVIDER;
    }
    return rpma::NewConnReq(ep->peer, std::move(id), cfg, true, req_ptr);
}
