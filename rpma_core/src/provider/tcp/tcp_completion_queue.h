// ibv_cq: a bounded ring of work completions. Completions are pushed by the
// progress thread, by application threads driving progress inline (see
// tcp_completion_channel.h) and by posting threads (immediate local errors),
// and polled by the application.
//
// Notification follows ibverbs: RequestNotify arms the CQ, and the next
// completion pushed afterwards fires the channel once. Completions already
// queued when arming do not fire it; callers poll after arming, as with verbs.
//
// Inline progress on Poll: a poll that finds the ring empty reads the sockets
// of the connections feeding this CQ itself, without blocking (a try-lock
// and a non-blocking read), so a busy-polling application completes its
// work in its own thread instead of waiting for the progress thread's turn.
#ifndef RPMA_CORE_SRC_PROVIDER_TCP_TCP_COMPLETION_QUEUE_H
#define RPMA_CORE_SRC_PROVIDER_TCP_TCP_COMPLETION_QUEUE_H

#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include "rpma_core/src/provider/provider.h"
#include "rpma_core/src/provider/tcp/tcp_lock.h"

namespace rpma::provider::tcp {

class CompletionChannel;
class Connection;

// Bumped by every change of which connections feed which CQs of which
// channel, so waiters may cache that (per thread) between changes.
inline std::atomic<uint64_t> feeders_generation{1};

// A thread's copy of the connections feeding one CQ or channel (`owner`),
// collected again whenever the owner or feeders_generation changed. Each
// inline poll or wait keeps one per thread, so a warm one takes no lock.
class FeedersCache {
  public:
    using Feeders = std::vector<std::weak_ptr<Connection>>;

    // `collect(&feeders)` appends the owner's feeders when they are stale.
    template <typename Collect>
    const Feeders &Get(const void *owner, Collect collect) {
        const uint64_t generation = feeders_generation.load();
        if (owner != owner_ || generation != generation_) {
            feeders_.clear();
            collect(&feeders_);
            owner_ = owner;
            generation_ = generation;
        }
        return feeders_;
    }

  private:
    const void *owner_ = nullptr;
    uint64_t generation_ = 0;
    Feeders feeders_;
};

class CompletionQueue final : public provider::CompletionQueue {
  public:
    static constexpr int kMaxCapacity = 1 << 22;

    // `channel` may be null (then RequestNotify arms nothing). The CQ keeps
    // it alive (the application may drop its handle first, see
    // tcp_completion_channel_handle.h).
    CompletionQueue(int capacity, std::shared_ptr<CompletionChannel> channel);
    ~CompletionQueue() override;

    int Poll(int num_entries, ibv_wc *wc) override;
    int RequestNotify() override;
    int Capacity() const override { return static_cast<int>(ring_.size()); }

    // Never blocks and never grows: when the ring is full the completion is
    // dropped, the CQ marked overrun (ibverbs would raise IBV_EVENT_CQ_ERR)
    // and false returned: the connection that lost it then enters the error
    // state, as the QPs of an overrun verbs CQ do.
    bool Push(const ibv_wc &wc);
    bool Overrun() const;

    void NoteEventDelivered() { events_delivered_.fetch_add(1, std::memory_order_relaxed); }
    void NoteEventsAcked(unsigned int count) {
        events_acked_.fetch_add(count, std::memory_order_relaxed);
    }

    // The sole connection feeding this CQ just sent the only request in
    // flight: the next poll that finds the CQ empty need not drive it (its
    // read could only come back empty, the answer being a round trip away).
    // False when the CQ has other feeders; the caller then keeps that in
    // mind itself.
    bool SkipNextDrive() {
        if (!sole_feeder_.load(std::memory_order_relaxed))
            return false;
        skip_drive_.store(true, std::memory_order_relaxed);
        return true;
    }
    // Something waits for a poll to drive it after all (a doorbell).
    void CancelSkip() { skip_drive_.store(false, std::memory_order_relaxed); }

    // The connections whose queue pair completes into this CQ (send or
    // receive side), for inline progress. Called by the connection under
    // its lock (lock order: connection -> CQ).
    void AddFeeder(const std::shared_ptr<Connection> &connection);
    void RemoveFeeder(const Connection *connection);
    // Appends the feeders not yet in *out.
    void CollectFeeders(std::vector<std::weak_ptr<Connection>> *out) const;

  private:
    struct Feeder {
        const Connection *key;
        std::weak_ptr<Connection> connection;
    };

    int PollRing(int num_entries, ibv_wc *wc);
    // After a busy poll: fires the channel if a completion that deferred
    // firing is still in the ring.
    void FireIfLeftBehind();

    const std::shared_ptr<CompletionChannel> channel_;
    mutable Lock mu_;
    std::vector<ibv_wc> ring_;
    size_t head_ = 0;
    size_t count_ = 0;
    // count_, readable without the lock: an empty poll takes no lock.
    std::atomic<size_t> ready_{0};
    // Set by RequestNotify without the lock; taken under it by Push.
    std::atomic<bool> armed_{false};
    // A completion pushed by this CQ's own busy poll did not fire the armed
    // channel (the poll returns it); if the poll leaves any in the ring, it
    // fires then.
    bool fire_deferred_ = false;
    bool overrun_ = false;
    std::atomic<uint64_t> events_delivered_{0};
    std::atomic<uint64_t> events_acked_{0};

    mutable std::mutex feeders_mu_;
    std::vector<Feeder> feeders_;
    // feeders_.size() == 1, readable without the lock.
    std::atomic<bool> sole_feeder_{false};
    // SkipNextDrive. Plain loads and stores: a race costs one read or one
    // empty poll, never a completion.
    std::atomic<bool> skip_drive_{false};
};

}  // namespace rpma::provider::tcp

#endif  // RPMA_CORE_SRC_PROVIDER_TCP_TCP_COMPLETION_QUEUE_H
