// rpma_srq_*: shared receive queues.
#include "rpma_core/src/srq.h"

#include <cerrno>
#include <cstring>
#include <new>

#include "librpma.h"
#include "rpma_core/src/log.h"
#include "rpma_core/src/mr.h"
#include "rpma_core/src/peer.h"
#include "rpma_core/src/srq_cfg.h"

int rpma_srq_new(struct rpma_peer *peer, struct rpma_srq_cfg *cfg, struct rpma_srq **srq_ptr) {
    if (peer == nullptr || srq_ptr == nullptr)
        return RPMA_E_INVAL;
    const rpma_srq_cfg &config = cfg ? *cfg : rpma::DefaultSrqCfg();

    auto srq = std::unique_ptr<rpma_srq>(new (std::nothrow) rpma_srq);
    if (srq == nullptr)
        return RPMA_E_NOMEM;
    int err = peer->pd->CreateSrq(config.rq_size, &srq->queue);
    if (err != 0) {
        RPMA_LOG_ERROR("creating a shared receive queue of %u entries failed: %s",
                       config.rq_size.load(), strerror(err));
        return err == ENOMEM ? RPMA_E_NOMEM : RPMA_E_PROVIDER;
    }
    if (config.rcq_size > 0) {
        err = peer->device->CreateCompletionChannel(&srq->rcq_channel);
        if (err != 0) {
            RPMA_LOG_ERROR("creating a completion channel failed: %s", strerror(err));
            return RPMA_E_PROVIDER;
        }
        int ret = rpma::NewCq(*peer->device, static_cast<int>(config.rcq_size), *srq->rcq_channel,
                              false, &srq->rcq);
        if (ret != 0)
            return ret;
    }
    *srq_ptr = srq.release();
    return 0;
}

int rpma_srq_delete(struct rpma_srq **srq_ptr) {
    if (srq_ptr == nullptr)
        return RPMA_E_INVAL;
    delete *srq_ptr;
    *srq_ptr = nullptr;
    return 0;
}

int rpma_srq_recv(struct rpma_srq *srq, struct rpma_mr_local *dst, size_t offset, size_t len,
                  const void *op_context) {
    if (srq == nullptr || (dst == nullptr && (offset != 0 || len != 0)))
        return RPMA_E_INVAL;
    ibv_sge sge;
    int err = srq->queue->PostRecv(rpma::MakeRecvWr(dst, offset, len, op_context, &sge));
    if (err != 0) {
        RPMA_LOG_ERROR("posting a shared receive failed: %s", strerror(err));
        return RPMA_E_PROVIDER;
    }
    return 0;
}

int rpma_srq_get_rcq(const struct rpma_srq *srq, struct rpma_cq **rcq_ptr) {
    if (srq == nullptr || rcq_ptr == nullptr)
        return RPMA_E_INVAL;
    *rcq_ptr = srq->rcq.get();
    return 0;
}
