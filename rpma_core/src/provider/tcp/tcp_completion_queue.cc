#include "rpma_core/src/provider/tcp/tcp_completion_queue.h"

#include <algorithm>
#include <cerrno>
#include <utility>

#include "rpma_core/src/log.h"
#include "rpma_core/src/provider/tcp/tcp_completion_channel.h"

namespace rpma::provider::tcp {

CompletionQueue::CompletionQueue(int capacity, CompletionChannel *channel)
    : channel_(channel), ring_(static_cast<size_t>(capacity)) {}

CompletionQueue::~CompletionQueue() {
    const uint64_t delivered = events_delivered_.load();
    const uint64_t acked = events_acked_.load();
    if (delivered != acked)
        RPMA_LOG_WARNING("completion queue destroyed with %llu of %llu events unacknowledged",
                         static_cast<unsigned long long>(delivered - acked),
                         static_cast<unsigned long long>(delivered));
}

int CompletionQueue::Poll(int num_entries, ibv_wc *wc) {
    if (num_entries < 0 || (num_entries > 0 && wc == nullptr))
        return -EINVAL;
    std::lock_guard lock(mu_);
    const size_t n = std::min(static_cast<size_t>(num_entries), count_);
    for (size_t i = 0; i < n; ++i) {
        wc[i] = ring_[head_];
        head_ = (head_ + 1) % ring_.size();
    }
    count_ -= n;
    return static_cast<int>(n);
}

int CompletionQueue::RequestNotify() {
    std::lock_guard lock(mu_);
    armed_ = channel_ != nullptr;
    return 0;
}

void CompletionQueue::Push(const ibv_wc &wc) {
    bool fire = false;
    {
        std::lock_guard lock(mu_);
        if (count_ == ring_.size()) {
            if (!overrun_)
                RPMA_LOG_ERROR(
                    "completion queue overrun: more than %zu completions are waiting to be "
                    "polled; completions are being lost (enlarge the CQ or poll it sooner)",
                    ring_.size());
            overrun_ = true;
            return;
        }
        ring_[(head_ + count_) % ring_.size()] = wc;
        ++count_;
        fire = std::exchange(armed_, false);
    }
    if (fire)
        channel_->Fire(this);
}

bool CompletionQueue::Overrun() const {
    std::lock_guard lock(mu_);
    return overrun_;
}

}  // namespace rpma::provider::tcp
