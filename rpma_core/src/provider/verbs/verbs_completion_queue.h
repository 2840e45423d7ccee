// ibv_cq, created with its owner as the CQ context so that a completion
// channel event leads back to the provider object.
#ifndef RPMA_CORE_SRC_PROVIDER_VERBS_VERBS_COMPLETION_QUEUE_H
#define RPMA_CORE_SRC_PROVIDER_VERBS_VERBS_COMPLETION_QUEUE_H

#include <infiniband/verbs.h>

#include <memory>

#include "rpma_core/src/provider/provider.h"
#include "rpma_core/src/provider/verbs/verbs_owners.h"

namespace rpma::provider::verbs {

class CompletionQueue final : public provider::CompletionQueue {
  public:
    // `channel` must belong to this provider (or be null: no channel).
    static int Create(ibv_context *context, int capacity, provider::CompletionChannel *channel,
                      std::unique_ptr<provider::CompletionQueue> *cq);

    int Poll(int num_entries, ibv_wc *wc) override {
        return ibv_poll_cq(cq_.get(), num_entries, wc);
    }
    int RequestNotify() override { return ibv_req_notify_cq(cq_.get(), 0); }
    // What the device made, which may be more than was asked for.
    int Capacity() const override { return cq_->cqe; }

    ibv_cq *Raw() const { return cq_.get(); }

  private:
    Owned<ibv_cq> cq_;
};

}  // namespace rpma::provider::verbs

#endif  // RPMA_CORE_SRC_PROVIDER_VERBS_VERBS_COMPLETION_QUEUE_H
