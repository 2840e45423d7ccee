// ibv_cq: a bounded ring of work completions. Completions are pushed by the
// progress thread and by posting threads (immediate local errors) and polled
// by the application.
//
// Notification follows ibverbs: RequestNotify arms the CQ, and the next
// completion pushed afterwards fires the channel once. Completions already
// queued when arming do not fire it; callers poll after arming, as with verbs.
#ifndef RPMA_CORE_SRC_PROVIDER_TCP_TCP_COMPLETION_QUEUE_H
#define RPMA_CORE_SRC_PROVIDER_TCP_TCP_COMPLETION_QUEUE_H

#include <atomic>
#include <mutex>
#include <vector>

#include "rpma_core/src/provider/provider.h"

namespace rpma::provider::tcp {

class CompletionChannel;

class CompletionQueue final : public provider::CompletionQueue {
  public:
    static constexpr int kMaxCapacity = 1 << 22;

    // `channel` may be null (then RequestNotify arms nothing).
    CompletionQueue(int capacity, CompletionChannel *channel);
    ~CompletionQueue() override;

    int Poll(int num_entries, ibv_wc *wc) override;
    int RequestNotify() override;
    int Capacity() const override { return static_cast<int>(ring_.size()); }

    // Never blocks and never grows: when the ring is full the completion is
    // dropped and the CQ marked overrun (ibverbs would raise IBV_EVENT_CQ_ERR).
    void Push(const ibv_wc &wc);
    bool Overrun() const;

    void NoteEventDelivered() { events_delivered_.fetch_add(1, std::memory_order_relaxed); }
    void NoteEventsAcked(unsigned int count) {
        events_acked_.fetch_add(count, std::memory_order_relaxed);
    }

  private:
    CompletionChannel *const channel_;
    mutable std::mutex mu_;
    std::vector<ibv_wc> ring_;
    size_t head_ = 0;
    size_t count_ = 0;
    bool armed_ = false;
    bool overrun_ = false;
    std::atomic<uint64_t> events_delivered_{0};
    std::atomic<uint64_t> events_acked_{0};
};

}  // namespace rpma::provider::tcp

#endif  // RPMA_CORE_SRC_PROVIDER_TCP_TCP_COMPLETION_QUEUE_H
