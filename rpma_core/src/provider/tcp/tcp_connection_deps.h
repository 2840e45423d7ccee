// What a Connection is made with: the device's shared parts and settings
// (ConnectionDeps), the queue pair it serves (QueuePairBinding), and the
// waiting thread's watch list it hands its socket to (InlineWatcher).
#ifndef RPMA_CORE_SRC_PROVIDER_TCP_TCP_CONNECTION_DEPS_H
#define RPMA_CORE_SRC_PROVIDER_TCP_TCP_CONNECTION_DEPS_H

#include <atomic>
#include <cstdint>

#include "rpma_core/src/provider/provider.h"
#include "rpma_core/src/provider/tcp/tcp_liveness.h"
#include "rpma_core/src/provider/tcp/tcp_memory_table.h"
#include "rpma_core/src/provider/tcp/tcp_persist_workers.h"
#include "rpma_core/src/provider/tcp/tcp_progress_engine.h"
#include "rpma_core/src/provider/tcp/tcp_receive_queue.h"

namespace rpma::provider::tcp {

class CompletionQueue;

// A waiting thread's set of watched sockets (tcp_completion_channel.cc).
// Watch is called under the connection's lock, where the socket is open.
class InlineWatcher {
  public:
    virtual ~InlineWatcher() = default;
    virtual bool Watching(uint64_t token) const = 0;
    virtual void Watch(int fd, uint64_t token) = 0;
};

// What every connection shares with the device.
struct ConnectionDeps {
    ProgressEngine *engine;
    MemoryTable *memory;
    // How long a target holds a SEND that found no posted receive before it
    // fails the sender with IBV_WC_RNR_RETRY_EXC_ERR.
    const std::atomic<int> *rnr_timeout_ms;
    // How long an outgoing request that reached its peer waits for ACCEPT or
    // REJECT before kUnreachable.
    const std::atomic<int> *reply_timeout_ms;
    // Device::SetInlineLinger.
    const std::atomic<int> *inline_linger_us;
    // How long a connection waiting for its peer bears its silence before
    // it breaks (tcp_liveness.h); 0: forever.
    const std::atomic<int> *request_timeout_ms = &RequestTimeoutMs();
    // Where large persistent flushes run (tcp_persist_workers.h); null: on
    // the thread that executes the flush.
    PersistWorkers *persist_workers = nullptr;
};

struct QueuePairBinding {
    provider::QueuePair *handle = nullptr;
    uint32_t qp_num = 0;
    uint64_t pd_id = 0;
    CompletionQueue *send_cq = nullptr;
    CompletionQueue *recv_cq = nullptr;
    ReceiveQueue *srq = nullptr;  // the SRQ's queue, or null for a private RQ
    uint32_t sq_size = 0;
    uint32_t rq_size = 0;
};

}  // namespace rpma::provider::tcp

#endif  // RPMA_CORE_SRC_PROVIDER_TCP_TCP_CONNECTION_DEPS_H
