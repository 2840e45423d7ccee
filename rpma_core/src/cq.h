// struct rpma_cq: a completion queue and the channel that signals it.
#ifndef RPMA_CORE_SRC_CQ_H
#define RPMA_CORE_SRC_CQ_H

#include <memory>

#include "rpma_core/src/provider/provider.h"

struct rpma_cq {
    std::unique_ptr<rpma::provider::CompletionQueue> queue;
    rpma::provider::CompletionChannel *channel = nullptr;  // owned by the CQ's owner
    bool shared_channel = false;
};

namespace rpma {

// Creates a CQ of `capacity` entries signalled through `channel`, armed so
// that the first completion wakes the channel. Returns 0 or RPMA_E_*.
int NewCq(provider::Device &device, int capacity, provider::CompletionChannel &channel,
          bool shared_channel, std::unique_ptr<rpma_cq> *cq);

// Takes one event off the channel, acknowledges it and re-arms the CQ that
// fired. Returns 0 and sets *fired, or RPMA_E_NO_COMPLETION / RPMA_E_PROVIDER.
// A negative timeout_ms waits as ibv_get_cq_event does (unless the fd is
// O_NONBLOCK); otherwise the wait ends after timeout_ms, with
// RPMA_E_NO_COMPLETION when nothing fired.
int WaitForCqEvent(provider::CompletionChannel &channel, int timeout_ms,
                   provider::CompletionQueue **fired);
inline int WaitForCqEvent(provider::CompletionChannel &channel, provider::CompletionQueue **fired) {
    return WaitForCqEvent(channel, /*timeout_ms=*/-1, fired);
}

// rpma_cq_wait and rpma_ext_cq_wait_timeout: the event of a CQ that has its
// own channel. Returns 0 or RPMA_E_SHARED_CHANNEL, RPMA_E_NO_COMPLETION,
// RPMA_E_PROVIDER, RPMA_E_UNKNOWN.
int WaitForOwnCqEvent(rpma_cq &cq, int timeout_ms);

}  // namespace rpma

#endif  // RPMA_CORE_SRC_CQ_H
