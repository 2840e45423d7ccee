// Posted receive buffers, consumed in posting order: the receive queue of a
// queue pair, or the body of a shared receive queue.
//
// A connection that finds the queue empty stops reading its socket (as an RNR
// NAK stops a verbs sender) and registers as a waiter; posting a receive wakes
// the waiters on the progress thread. Pop-or-wait is atomic so a receive
// posted concurrently is never missed.
#ifndef RPMA_CORE_SRC_PROVIDER_TCP_TCP_RECEIVE_QUEUE_H
#define RPMA_CORE_SRC_PROVIDER_TCP_TCP_RECEIVE_QUEUE_H

#include <infiniband/verbs.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "rpma_core/src/provider/tcp/tcp_memory_table.h"

namespace rpma::provider::tcp {

class ProgressEngine;

inline constexpr int kMaxSge = 16;

struct PostedReceive {
    uint64_t wr_id = 0;
    SegmentList segments;
    uint64_t capacity = 0;
    // False when an sge was not inside a LOCAL_WRITE registration of the
    // queue's protection domain: the receive completes with LOC_PROT_ERR.
    bool buffers_valid = true;
};

class ReceiveWaiter {
  public:
    virtual ~ReceiveWaiter() = default;
    // Called on the progress thread after a receive was posted.
    virtual void ResumeReceiving() = 0;
    virtual std::weak_ptr<ReceiveWaiter> WeakWaiter() = 0;
};

class ReceiveQueue {
  public:
    // `shared`: a shared receive queue, used by many connections. A private
    // one is only ever used under its connection's lock and takes no lock of
    // its own.
    ReceiveQueue(MemoryTable &memory, ProgressEngine &engine, uint64_t pd_id, uint32_t max_wr,
                 bool shared);

    // EINVAL for a malformed WR, ENOMEM when max_wr receives are posted.
    // `cache`: the caller's region cache, or null (shared receive queues).
    int Post(const ibv_recv_wr &wr, RegionCache *cache = nullptr);
    // Takes the oldest receive, or registers `waiter` to be resumed by the
    // next Post and returns false.
    bool PopOrWait(PostedReceive *receive, ReceiveWaiter &waiter);
    std::vector<PostedReceive> TakeAll();

  private:
    MemoryTable &memory_;
    ProgressEngine &engine_;
    const uint64_t pd_id_;
    const uint32_t max_wr_;
    const bool shared_;
    std::mutex mu_;  // shared queues only
    struct ReleaseReceive {
        void operator()(PostedReceive &receive) const { receive.segments.clear(); }
    };
    RingQueue<PostedReceive, ReleaseReceive> posted_;
    std::vector<std::weak_ptr<ReceiveWaiter>> waiters_;
};

}  // namespace rpma::provider::tcp

#endif  // RPMA_CORE_SRC_PROVIDER_TCP_TCP_RECEIVE_QUEUE_H
