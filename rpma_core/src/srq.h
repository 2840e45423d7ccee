// struct rpma_srq: a receive queue shared by connections of one peer,
// optionally with a receive CQ of its own.
#ifndef RPMA_CORE_SRC_SRQ_H
#define RPMA_CORE_SRC_SRQ_H

#include <memory>

#include "rpma_core/src/cq.h"
#include "rpma_core/src/provider/provider.h"

struct rpma_srq {
    std::unique_ptr<rpma::provider::CompletionChannel> rcq_channel;
    std::unique_ptr<rpma_cq> rcq;  // nullptr when the SRQ has no CQ of its own
    std::unique_ptr<rpma::provider::SharedReceiveQueue> queue;
};

#endif  // RPMA_CORE_SRC_SRQ_H
