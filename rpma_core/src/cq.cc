// rpma_cq_*: completion queues.
#include "rpma_core/src/cq.h"

#include <cerrno>
#include <climits>
#include <cstring>
#include <new>

#include "librpma.h"
#include "rpma_core/src/log.h"

namespace rpma {

int NewCq(provider::Device &device, int capacity, provider::CompletionChannel &channel,
          bool shared_channel, std::unique_ptr<rpma_cq> *cq) {
    auto created = std::unique_ptr<rpma_cq>(new (std::nothrow) rpma_cq);
    if (created == nullptr)
        return RPMA_E_NOMEM;
    int err = device.CreateCq(capacity, &channel, &created->queue);
    if (err != 0) {
        RPMA_LOG_ERROR("creating a completion queue of %d entries failed: %s", capacity,
                       strerror(err));
        return err == ENOMEM ? RPMA_E_NOMEM : RPMA_E_PROVIDER;
    }
    err = created->queue->RequestNotify();
    if (err != 0) {
        RPMA_LOG_ERROR("arming a completion queue failed: %s", strerror(err));
        return RPMA_E_PROVIDER;
    }
    created->channel = &channel;
    created->shared_channel = shared_channel;
    *cq = std::move(created);
    return 0;
}

int WaitForCqEvent(provider::CompletionChannel &channel, int timeout_ms,
                   provider::CompletionQueue **fired) {
    int err = timeout_ms < 0 ? channel.GetAckedEvent(fired)
                             : channel.GetAckedEventWithin(fired, timeout_ms);
    if (err != 0) {
        // Nothing fired (non-blocking fd, the time is up, a signal): not a
        // failure.
        if (err != EAGAIN && err != ETIMEDOUT && err != EINTR)
            RPMA_LOG_ERROR("waiting for a completion event failed: %s", strerror(err));
        return RPMA_E_NO_COMPLETION;
    }
    err = (*fired)->RequestNotify();
    if (err != 0) {
        RPMA_LOG_ERROR("re-arming a completion queue failed: %s", strerror(err));
        return RPMA_E_PROVIDER;
    }
    return 0;
}

}  // namespace rpma

int rpma_cq_get_fd(const struct rpma_cq *cq, int *fd) {
    if (cq == nullptr || fd == nullptr)
        return RPMA_E_INVAL;
    *fd = cq->channel->Fd();
    return 0;
}

namespace rpma {

int WaitForOwnCqEvent(rpma_cq &cq, int timeout_ms) {
    if (cq.shared_channel)
        return RPMA_E_SHARED_CHANNEL;
    provider::CompletionQueue *fired = nullptr;
    int ret = WaitForCqEvent(*cq.channel, timeout_ms, &fired);
    if (ret != 0)
        return ret;
    // The channel is this CQ's own, so nothing else can have fired.
    return fired == cq.queue.get() ? 0 : RPMA_E_UNKNOWN;
}

}  // namespace rpma

int rpma_cq_wait(struct rpma_cq *cq) {
    if (cq == nullptr)
        return RPMA_E_INVAL;
    return rpma::WaitForOwnCqEvent(*cq, /*timeout_ms=*/-1);
}

int rpma_cq_get_wc(struct rpma_cq *cq, int num_entries, struct ibv_wc *wc, int *num_entries_got) {
    if (cq == nullptr || wc == nullptr || num_entries < 1 ||
        (num_entries > 1 && num_entries_got == nullptr))
        return RPMA_E_INVAL;
    int got = cq->queue->Poll(num_entries, wc);
    if (got == 0)
        return RPMA_E_NO_COMPLETION;
    if (got < 0) {
        RPMA_LOG_ERROR("polling the completion queue failed: %s", strerror(-got));
        return RPMA_E_PROVIDER;
    }
    if (num_entries_got != nullptr)
        *num_entries_got = got;
    return 0;
}
