// ibv_srq: receives shared by the queue pairs created with it. Completions go
// to the receive CQ of the queue pair that consumed the receive, as in verbs.
#ifndef RPMA_CORE_SRC_PROVIDER_TCP_TCP_SHARED_RECEIVE_QUEUE_H
#define RPMA_CORE_SRC_PROVIDER_TCP_TCP_SHARED_RECEIVE_QUEUE_H

#include <cstdint>

#include "rpma_core/src/provider/provider.h"
#include "rpma_core/src/provider/tcp/tcp_receive_queue.h"

namespace rpma::provider::tcp {

class SharedReceiveQueue final : public provider::SharedReceiveQueue {
  public:
    SharedReceiveQueue(MemoryTable &memory, ProgressEngine &engine, uint64_t pd_id, uint32_t max_wr)
        : queue_(memory, engine, pd_id, max_wr, /*shared=*/true) {}

    int PostRecv(const ibv_recv_wr &wr) override { return queue_.Post(wr); }
    ReceiveQueue &Queue() { return queue_; }

  private:
    ReceiveQueue queue_;
};

}  // namespace rpma::provider::tcp

#endif  // RPMA_CORE_SRC_PROVIDER_TCP_TCP_SHARED_RECEIVE_QUEUE_H
