// rpma_conn_req_*: connection requests.
#include "rpma_core/src/conn_req.h"

#include <cerrno>
#include <cstring>
#include <new>

#include "rpma_core/src/conn.h"
#include "rpma_core/src/conn_cfg.h"
#include "rpma_core/src/devices.h"
#include "rpma_core/src/log.h"
#include "rpma_core/src/mr.h"
#include "rpma_core/src/peer.h"
#include "rpma_core/src/srq.h"

namespace {

int NewChannel(rpma::provider::Device &device,
               std::unique_ptr<rpma::provider::CompletionChannel> *channel) {
    int err = device.CreateCompletionChannel(channel);
    if (err != 0) {
        RPMA_LOG_ERROR("creating a completion channel failed: %s", strerror(err));
        return err == ENOMEM ? RPMA_E_NOMEM : RPMA_E_PROVIDER;
    }
    return 0;
}

int NewQueues(rpma::provider::Device &device, const rpma_conn_cfg &cfg, rpma_cq *srq_rcq,
              rpma::ConnQueues *queues) {
    queues->shared_channel = cfg.shared_channel;
    int ret = NewChannel(device, &queues->channel);
    if (ret == 0)
        ret = rpma::NewCq(device, static_cast<int>(cfg.cq_size), *queues->channel,
                          queues->shared_channel, &queues->cq);
    if (ret != 0 || cfg.rcq_size == 0 || srq_rcq != nullptr)
        return ret;
    rpma::provider::CompletionChannel *rcq_channel = queues->channel.get();
    if (!queues->shared_channel) {
        ret = NewChannel(device, &queues->rcq_channel);
        if (ret != 0)
            return ret;
        rcq_channel = queues->rcq_channel.get();
    }
    return rpma::NewCq(device, static_cast<int>(cfg.rcq_size), *rcq_channel, queues->shared_channel,
                       &queues->rcq);
}

// The QP of `req` on `id` (req.id, or the CmId the request is about to
// own), in peer's protection domain.
int CreateQp(rpma_conn_req &req, rpma::provider::CmId &id, rpma_peer *peer) {
    int err = id.CreateQp(*peer->pd, req.qp_init);
    if (err != 0) {
        RPMA_LOG_ERROR("creating the queue pair failed: %s", strerror(err));
        return err == ENOMEM ? RPMA_E_NOMEM : RPMA_E_PROVIDER;
    }
    req.peer = peer;
    return 0;
}

// The queues and the QP of a new request; the caller adds the CmId.
int SetUpConnReq(rpma_peer *peer, rpma::provider::CmId &id, const rpma_conn_cfg &config,
                 rpma_conn_req **req_ptr) {
    rpma_srq *srq = config.srq;
    rpma_cq *srq_rcq = srq ? srq->rcq.get() : nullptr;
    if (config.shared_channel && srq_rcq != nullptr) {
        RPMA_LOG_ERROR(
            "a shared completion channel cannot be used with an SRQ that has its "
            "own receive CQ");
        return RPMA_E_INVAL;
    }

    auto req = std::unique_ptr<rpma_conn_req>(new (std::nothrow) rpma_conn_req);
    if (req == nullptr)
        return RPMA_E_NOMEM;
    int ret = NewQueues(*peer->device, config, srq_rcq, &req->queues);
    if (ret != 0)
        return ret;

    rpma::provider::QueuePairInit &init = req->qp_init;
    init.send_cq = req->queues.cq->queue.get();
    init.recv_cq = srq_rcq           ? srq_rcq->queue.get()
                   : req->queues.rcq ? req->queues.rcq->queue.get()
                                     : init.send_cq;
    init.srq = srq ? srq->queue.get() : nullptr;
    init.sq_size = config.sq_size;
    init.rq_size = config.rq_size;
    ret = CreateQp(*req, id, peer);
    if (ret != 0)
        return ret;
    req->timeout_ms = config.timeout_ms;
    *req_ptr = req.release();
    return 0;
}

}  // namespace

namespace rpma {

int CreateConnReqQp(rpma_conn_req &req, rpma_peer *peer) {
    return CreateQp(req, *req.id, peer);
}

int NewConnReq(rpma_peer *peer, std::unique_ptr<provider::CmId> id, const rpma_conn_cfg *cfg,
               bool incoming, rpma_conn_req **req_ptr) {
    int ret = SetUpConnReq(peer, *id, cfg ? *cfg : DefaultConnCfg(), req_ptr);
    if (ret != 0) {
        // Tell the other side now instead of leaving it waiting for a timeout.
        if (incoming)
            id->Reject();
        return ret;
    }
    (*req_ptr)->id = std::move(id);
    (*req_ptr)->incoming = incoming;
    return 0;
}

}  // namespace rpma

int rpma_conn_req_new(struct rpma_peer *peer, const char *addr, const char *port,
                      const struct rpma_conn_cfg *cfg, struct rpma_conn_req **req_ptr) {
    if (peer == nullptr || addr == nullptr || port == nullptr || req_ptr == nullptr)
        return RPMA_E_INVAL;
    const rpma_conn_cfg &config = cfg ? *cfg : rpma::DefaultConnCfg();
    std::unique_ptr<rpma::provider::CmId> id;
    int err = peer->device->Resolve(addr, port, config.timeout_ms, &id);
    if (err != 0) {
        RPMA_LOG_ERROR("resolving %s:%s failed: %s", addr, port, strerror(err));
        return err == ENOMEM ? RPMA_E_NOMEM : RPMA_E_PROVIDER;
    }
    return rpma::NewConnReq(peer, std::move(id), cfg, false, req_ptr);
}

int rpma_conn_req_delete(struct rpma_conn_req **req_ptr) {
    if (req_ptr == nullptr)
        return RPMA_E_INVAL;
    rpma_conn_req *req = *req_ptr;
    if (req == nullptr)
        return 0;
    int ret = 0;
    if (req->incoming) {
        int err = req->id->Reject();
        if (err != 0) {
            RPMA_LOG_ERROR("rejecting the connection request failed: %s", strerror(err));
            ret = RPMA_E_PROVIDER;
        }
    }
    delete req;
    *req_ptr = nullptr;
    return ret;
}

int rpma_conn_req_connect(struct rpma_conn_req **req_ptr,
                          const struct rpma_conn_private_data *pdata, struct rpma_conn **conn_ptr) {
    if (req_ptr == nullptr || *req_ptr == nullptr)
        return RPMA_E_INVAL;
    // From here on the request is consumed, whatever happens.
    std::unique_ptr<rpma_conn_req> req(*req_ptr);
    *req_ptr = nullptr;
    if (conn_ptr == nullptr || (pdata != nullptr && (pdata->ptr == nullptr || pdata->len == 0))) {
        if (req->incoming)
            req->id->Reject();
        return RPMA_E_INVAL;
    }

    if (req->id->Qp() == nullptr) {
        // rpma_ext_conn_req_move_to_peer failed and could not restore the QP.
        RPMA_LOG_ERROR("this connection request lost its queue pair; delete it");
        if (req->incoming)
            req->id->Reject();
        return RPMA_E_INVAL;
    }
    const void *data = pdata ? pdata->ptr : nullptr;
    uint8_t len = pdata ? pdata->len : 0;
    int err =
        req->incoming ? req->id->Accept(data, len) : req->id->Connect(data, len, req->timeout_ms);
    if (err != 0) {
        RPMA_LOG_ERROR("%s failed: %s", req->incoming ? "accepting" : "connecting", strerror(err));
        return err == ENOMEM ? RPMA_E_NOMEM : RPMA_E_PROVIDER;
    }
    return rpma::NewConn(std::move(*req), conn_ptr);
}

int rpma_conn_req_get_private_data(const struct rpma_conn_req *req,
                                   struct rpma_conn_private_data *pdata) {
    if (req == nullptr || pdata == nullptr)
        return RPMA_E_INVAL;
    const std::vector<uint8_t> &data = req->id->RequestPrivateData();
    pdata->ptr = data.empty() ? nullptr : const_cast<uint8_t *>(data.data());
    pdata->len = static_cast<uint8_t>(data.size());
    return 0;
}

int rpma_conn_req_recv(struct rpma_conn_req *req, struct rpma_mr_local *dst, size_t offset,
                       size_t len, const void *op_context) {
    if (req == nullptr || dst == nullptr || req->id->Qp() == nullptr)
        return RPMA_E_INVAL;
    ibv_sge sge;
    int err = req->id->Qp()->PostRecv(rpma::MakeRecvWr(dst, offset, len, op_context, &sge));
    if (err != 0) {
        RPMA_LOG_ERROR("posting a receive failed: %s", strerror(err));
        return RPMA_E_PROVIDER;
    }
    req->recv_posted = true;
    return 0;
}
