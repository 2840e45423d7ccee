#include "rpma_core/src/provider/tcp/tcp_completion_queue.h"

#include <algorithm>
#include <cerrno>
#include <utility>

#include "rpma_core/src/log.h"
#include "rpma_core/src/provider/tcp/tcp_completion_channel.h"
#include "rpma_core/src/provider/tcp/tcp_connection.h"

namespace rpma::provider::tcp {
namespace {

// The CQ whose Poll is driving progress in this thread.
thread_local const CompletionQueue *tls_polling = nullptr;

}  // namespace

CompletionQueue::CompletionQueue(int capacity, std::shared_ptr<CompletionChannel> channel)
    : channel_(std::move(channel)), ring_(static_cast<size_t>(capacity)) {
    if (channel_ != nullptr)
        channel_->AddQueue(this);
}

CompletionQueue::~CompletionQueue() {
    // First: a waiter on the channel may be looking at this CQ's feeders.
    if (channel_ != nullptr)
        channel_->RemoveQueue(this);
    feeders_generation.fetch_add(1);
    const uint64_t delivered = events_delivered_.load();
    const uint64_t acked = events_acked_.load();
    if (delivered != acked)
        RPMA_LOG_WARNING("completion queue destroyed with %llu of %llu events unacknowledged",
                         static_cast<unsigned long long>(delivered - acked),
                         static_cast<unsigned long long>(delivered));
}

int CompletionQueue::PollRing(int num_entries, ibv_wc *wc) {
    // A completion pushed just now may be missed; the next poll finds it.
    if (ready_.load(std::memory_order_acquire) == 0)
        return 0;
    std::lock_guard lock(mu_);
    const size_t n = std::min(static_cast<size_t>(num_entries), count_);
    for (size_t i = 0; i < n; ++i) {
        wc[i] = ring_[head_];
        head_ = (head_ + 1) % ring_.size();
    }
    count_ -= n;
    ready_.store(count_, std::memory_order_relaxed);
    return static_cast<int>(n);
}

int CompletionQueue::Poll(int num_entries, ibv_wc *wc) {
    if (num_entries < 0 || (num_entries > 0 && wc == nullptr))
        return -EINVAL;
    const int got = PollRing(num_entries, wc);
    if (got > 0 || num_entries == 0)
        return got;
    if (skip_drive_.load(std::memory_order_relaxed)) {
        skip_drive_.store(false, std::memory_order_relaxed);
        return 0;
    }
    // Empty: make the progress the completions depend on, without blocking.
    // A completion this makes for this CQ is returned right here, so it
    // does not fire the channel: the CQ stays armed for the next one (no
    // eventfd write now, no stale event for the next wait to swallow).
    thread_local FeedersCache cache;
    const FeedersCache::Feeders &feeders =
        cache.Get(this, [this](FeedersCache::Feeders *out) { CollectFeeders(out); });
    bool progressed = false;
    tls_polling = this;
    for (const auto &feeder : feeders) {
        if (std::shared_ptr<Connection> connection = feeder.lock())
            progressed |= connection->DriveInbound(/*try_only=*/true);
    }
    tls_polling = nullptr;
    if (!progressed)
        return 0;
    const int got_now = PollRing(num_entries, wc);
    FireIfLeftBehind();
    return got_now;
}

int CompletionQueue::RequestNotify() {
    // Racing a Push, either that completion fires the channel or it is in
    // the ring already for the caller's poll after arming (as with verbs).
    armed_.store(channel_ != nullptr);
    return 0;
}

bool CompletionQueue::Push(const ibv_wc &wc) {
    bool fire = false;
    {
        std::lock_guard lock(mu_);
        if (count_ == ring_.size()) {
            if (!overrun_)
                RPMA_LOG_ERROR(
                    "completion queue overrun: more than %zu completions are waiting to be "
                    "polled; completions are being lost and their connections break "
                    "(enlarge the CQ or poll it sooner)",
                    ring_.size());
            overrun_ = true;
            return false;
        }
        ring_[(head_ + count_) % ring_.size()] = wc;
        ++count_;
        ready_.store(count_, std::memory_order_release);
        if (tls_polling == this) {
            // This CQ's own busy poll will return it: the CQ stays armed.
            fire_deferred_ = fire_deferred_ || armed_.load();
        } else {
            fire = armed_.exchange(false);
        }
    }
    if (fire)
        channel_->Fire(this);
    return true;
}

void CompletionQueue::FireIfLeftBehind() {
    bool fire = false;
    {
        std::lock_guard lock(mu_);
        if (!std::exchange(fire_deferred_, false))
            return;
        fire = count_ > 0 && armed_.exchange(false);
    }
    if (fire)
        channel_->Fire(this);
}

bool CompletionQueue::Overrun() const {
    std::lock_guard lock(mu_);
    return overrun_;
}

void CompletionQueue::AddFeeder(const std::shared_ptr<Connection> &connection) {
    std::lock_guard lock(feeders_mu_);
    feeders_.push_back(Feeder{connection.get(), connection});
    sole_feeder_.store(feeders_.size() == 1);
    feeders_generation.fetch_add(1);
}

void CompletionQueue::RemoveFeeder(const Connection *connection) {
    std::lock_guard lock(feeders_mu_);
    std::erase_if(feeders_, [connection](const Feeder &f) { return f.key == connection; });
    sole_feeder_.store(feeders_.size() == 1);
    feeders_generation.fetch_add(1);
}

void CompletionQueue::CollectFeeders(std::vector<std::weak_ptr<Connection>> *out) const {
    std::lock_guard lock(feeders_mu_);
    for (const Feeder &feeder : feeders_) {
        const bool known = std::any_of(out->begin(), out->end(), [&](const auto &other) {
            return !other.owner_before(feeder.connection) && !feeder.connection.owner_before(other);
        });
        if (!known)  // a connection whose send and receive CQs share the channel
            out->push_back(feeder.connection);
    }
}

}  // namespace rpma::provider::tcp
