#include "rpma_core/src/provider/verbs/verbs_shared_receive_queue.h"

#include "rpma_core/src/provider/verbs/verbs_work_requests.h"

namespace rpma::provider::verbs {

int SharedReceiveQueue::PostRecv(const ibv_recv_wr &wr) {
    ibv_recv_wr one = wr;
    one.next = nullptr;
    ibv_recv_wr *bad = nullptr;
    return ReportPostFailure(ibv_post_srq_recv(srq_.get(), &one, &bad), "a shared receive");
}

}  // namespace rpma::provider::verbs
