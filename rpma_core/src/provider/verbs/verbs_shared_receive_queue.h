// ibv_srq.
#ifndef RPMA_CORE_SRC_PROVIDER_VERBS_VERBS_SHARED_RECEIVE_QUEUE_H
#define RPMA_CORE_SRC_PROVIDER_VERBS_VERBS_SHARED_RECEIVE_QUEUE_H

#include <infiniband/verbs.h>

#include "rpma_core/src/provider/provider.h"
#include "rpma_core/src/provider/verbs/verbs_owners.h"

namespace rpma::provider::verbs {

class SharedReceiveQueue final : public provider::SharedReceiveQueue {
  public:
    explicit SharedReceiveQueue(Owned<ibv_srq> srq) : srq_(std::move(srq)) {}

    // ibv_post_srq_recv of `wr` alone; ENOMEM when the queue is full.
    int PostRecv(const ibv_recv_wr &wr) override;

    ibv_srq *Raw() const { return srq_.get(); }

  private:
    Owned<ibv_srq> srq_;
};

}  // namespace rpma::provider::verbs

#endif  // RPMA_CORE_SRC_PROVIDER_VERBS_VERBS_SHARED_RECEIVE_QUEUE_H
