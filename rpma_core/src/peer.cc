// rpma_peer_*: the peer.
#include "rpma_core/src/peer.h"

#include <cerrno>
#include <cstring>
#include <new>

#include "librpma.h"
#include "rpma_core/src/devices.h"
#include "rpma_core/src/log.h"

int rpma_peer_new(struct ibv_context *ibv_ctx, struct rpma_peer **peer_ptr) {
    if (ibv_ctx == nullptr || peer_ptr == nullptr)
        return RPMA_E_INVAL;
    rpma::provider::Device *device = rpma::FindDevice(ibv_ctx);
    if (device == nullptr) {
        RPMA_LOG_ERROR(
            "this ibv_context belongs to no provider of this library "
            "(get it from rpma_utils_get_ibv_context())");
        return RPMA_E_PROVIDER;
    }
    auto peer = std::unique_ptr<rpma_peer>(new (std::nothrow) rpma_peer);
    if (peer == nullptr)
        return RPMA_E_NOMEM;
    peer->device = device;
    int err = device->AllocPd(&peer->pd);
    if (err != 0) {
        RPMA_LOG_ERROR("allocating a protection domain failed: %s", strerror(err));
        return err == ENOMEM ? RPMA_E_NOMEM : RPMA_E_PROVIDER;
    }
    *peer_ptr = peer.release();
    return 0;
}

int rpma_peer_delete(struct rpma_peer **peer_ptr) {
    if (peer_ptr == nullptr)
        return RPMA_E_INVAL;
    delete *peer_ptr;
    *peer_ptr = nullptr;
    return 0;
}
