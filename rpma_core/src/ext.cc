// rpma_ext_*: rpma_core's extensions of the librpma API (rpma_ext.h).
#include "rpma_ext.h"

#include <cerrno>
#include <cstddef>
#include <cstring>

#include "rpma_core/src/conn.h"
#include "rpma_core/src/conn_req.h"
#include "rpma_core/src/cq.h"
#include "rpma_core/src/devices.h"
#include "rpma_core/src/log.h"
#include "rpma_core/src/mr.h"
#include "rpma_core/src/peer.h"

int rpma_ext_conn_req_move_to_peer(struct rpma_conn_req *req, struct rpma_peer *peer) {
    if (req == nullptr || peer == nullptr)
        return RPMA_E_INVAL;
    if (!req->incoming) {
        RPMA_LOG_ERROR(
            "only an incoming connection request (from rpma_ep_next_conn_req) can move "
            "to another peer; make an outgoing one with the peer it should use");
        return RPMA_E_INVAL;
    }
    if (peer->device->Context() != req->id->Context()) {
        RPMA_LOG_ERROR(
            "the connection request arrived on another device than the peer's (make "
            "the peer from the ibv_context of the endpoint's address)");
        return RPMA_E_INVAL;
    }
    if (req->qp_init.srq != nullptr) {
        RPMA_LOG_ERROR(
            "a connection request using a shared receive queue cannot move: the SRQ "
            "belongs to its peer's protection domain (configure no SRQ)");
        return RPMA_E_INVAL;
    }
    if (req->recv_posted) {
        RPMA_LOG_ERROR(
            "receives were posted on this connection request and would be lost; move "
            "it before rpma_conn_req_recv");
        return RPMA_E_INVAL;
    }
    if (peer == req->peer)
        return 0;

    // A CmId holds one QP: the old one must go before the new one is made.
    rpma_peer *old_peer = req->peer;
    req->id->DestroyQp();
    int ret = rpma::CreateConnReqQp(*req, peer);
    if (ret != 0 && rpma::CreateConnReqQp(*req, old_peer) != 0)
        RPMA_LOG_ERROR("the connection request lost its queue pair; delete it");
    return ret;
}

int rpma_ext_conn_req_get_peer_addr(const struct rpma_conn_req *req,
                                    struct sockaddr_storage *addr) {
    if (req == nullptr || addr == nullptr)
        return RPMA_E_INVAL;
    sockaddr_storage address;
    const int err = req->id->PeerAddress(&address);
    if (err != 0) {
        RPMA_LOG_ERROR("the connection request has no peer address: %s", strerror(err));
        errno = err;
        return RPMA_E_PROVIDER;
    }
    *addr = address;
    return 0;
}

int rpma_ext_cq_wait_timeout(struct rpma_cq *cq, int timeout_ms) {
    if (cq == nullptr)
        return RPMA_E_INVAL;
    return rpma::WaitForOwnCqEvent(*cq, timeout_ms < 0 ? -1 : timeout_ms);
}

int rpma_ext_mr_get_remote_stats(const struct rpma_mr_local *mr,
                                 struct rpma_ext_mr_remote_stats *stats) {
    if (mr == nullptr || stats == nullptr)
        return RPMA_E_INVAL;
    rpma::provider::RemoteAccessCounts counts;
    if (mr->region->RemoteCounts(&counts) != 0) {
        RPMA_LOG_INFO(
            "the provider cannot count the peers' operations on a memory region (its NIC "
            "applies them without the CPU); report them as unknown");
        return RPMA_E_NOSUPP;
    }
    stats->bytes_written = counts.bytes_written;
    stats->bytes_read = counts.bytes_read;
    stats->flushes = counts.persistent_flushes;
    stats->bytes_persisted = counts.bytes_persisted;
    return 0;
}

int rpma_ext_device_query(struct ibv_context *ibv_ctx, struct rpma_ext_device_info *info) {
    constexpr size_t kMinSize = offsetof(rpma_ext_device_info, provider) + sizeof(info->provider);
    if (ibv_ctx == nullptr || info == nullptr || info->size < kMinSize)
        return RPMA_E_INVAL;
    rpma::provider::Device *device = nullptr;
    const rpma::provider::Ops *ops = rpma::OwnerOf(ibv_ctx, &device);
    if (ops == nullptr) {
        RPMA_LOG_ERROR(
            "this ibv_context belongs to no provider of this library "
            "(get it from rpma_utils_get_ibv_context())");
        return RPMA_E_PROVIDER;
    }
    // Each field only when the caller's struct holds it.
    info->provider = ops->name;
    if (offsetof(rpma_ext_device_info, flush_persists) + sizeof(int) <= info->size)
        info->flush_persists = ops->flush_persists ? 1 : 0;
    if (offsetof(rpma_ext_device_info, pins_fsdax_pages) + sizeof(int) <= info->size)
        info->pins_fsdax_pages = ops->pins_fsdax_pages ? 1 : 0;
    return 0;
}

int rpma_ext_conn_ring_doorbell(struct rpma_conn *conn) {
    if (conn == nullptr)
        return RPMA_E_INVAL;
    conn->id->Qp()->RingDoorbell();
    return 0;
}
