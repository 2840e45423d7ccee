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
int WaitForCqEvent(provider::CompletionChannel &channel, provider::CompletionQueue **fired);

}  // namespace rpma

#endif  // RPMA_CORE_SRC_CQ_H
