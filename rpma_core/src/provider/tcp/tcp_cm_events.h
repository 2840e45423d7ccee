// One connection's rdma_cm events (what librpma's rpma_conn_next_event
// reads), with rdma_cm's promise about how a connection ends: at most one
// final event (REJECTED, UNREACHABLE, CONNECT_ERROR or DISCONNECTED), and
// DISCONNECTED at most once, whichever path notices the end first. Called
// under the connection's lock; the queue has its own for the reader.
#ifndef RPMA_CORE_SRC_PROVIDER_TCP_TCP_CM_EVENTS_H
#define RPMA_CORE_SRC_PROVIDER_TCP_TCP_CM_EVENTS_H

#include <cstdint>
#include <vector>

#include "rpma_core/src/provider/provider.h"
#include "rpma_core/src/provider/tcp/tcp_signaling_queue.h"

namespace rpma::provider::tcp {

class CmEvents {
  public:
    // Check after construction: the eventfd can fail (EMFILE, ENOMEM).
    bool Valid() const { return queue_.Valid(); }
    // Readable while an event waits.
    int Fd() const { return queue_.Fd(); }
    // 0, or EAGAIN when none waits.
    int Pop(CmEvent *event) { return queue_.Pop(event); }

    // Queues `type` unless it would end the connection again: of REJECTED,
    // UNREACHABLE and CONNECT_ERROR only the first before any DISCONNECTED;
    // DISCONNECTED once, even after one of those; ESTABLISHED always. True
    // when queued.
    bool Emit(CmEventType type, std::vector<uint8_t> private_data = {});

  private:
    SignalingQueue<CmEvent> queue_;
    bool final_sent_ = false;
    bool disconnected_sent_ = false;
};

}  // namespace rpma::provider::tcp

#endif  // RPMA_CORE_SRC_PROVIDER_TCP_TCP_CM_EVENTS_H
