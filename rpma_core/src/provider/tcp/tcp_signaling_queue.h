// A queue whose eventfd is readable exactly while the queue is non-empty, so
// applications can wait for it with poll/epoll. The eventfd counts in
// semaphore mode: one unit per element. Both the unit and the element move
// under the queue's lock (written with the push, read with the pop), so the
// counter always equals the queue's length and a pop never blocks on the fd.
// Waiting is the caller's business: poll the fd, then Pop.
#ifndef RPMA_CORE_SRC_PROVIDER_TCP_TCP_SIGNALING_QUEUE_H
#define RPMA_CORE_SRC_PROVIDER_TCP_TCP_SIGNALING_QUEUE_H

#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <deque>
#include <mutex>
#include <utility>

#include "rpma_core/src/provider/tcp/tcp_unique_fd.h"

namespace rpma::provider::tcp {

template <typename T>
class SignalingQueue {
  public:
    // The fd is created blocking: O_NONBLOCK is the application's to set.
    // Pop never blocks whatever the flag says.
    SignalingQueue() : fd_(eventfd(0, EFD_SEMAPHORE | EFD_CLOEXEC)) {}

    // Check after construction: eventfd can fail (EMFILE, ENOMEM).
    bool Valid() const { return fd_.Valid(); }
    int Fd() const { return fd_.Get(); }

    void Push(T value) {
        std::lock_guard lock(mu_);
        items_.push_back(std::move(value));
        size_.store(items_.size(), std::memory_order_relaxed);
        const uint64_t one = 1;
        // Cannot fail: the counter stays far below its limit.
        [[maybe_unused]] ssize_t written = write(fd_.Get(), &one, sizeof(one));
    }

    // 0, or EAGAIN when the queue is empty. Never blocks: the counter holds
    // at least one unit while an element is queued.
    int Pop(T *value) {
        if (size_.load(std::memory_order_relaxed) == 0)
            return EAGAIN;  // the common case of a waiter: no lock taken
        std::lock_guard lock(mu_);
        if (items_.empty())
            return EAGAIN;
        uint64_t unit;
        while (read(fd_.Get(), &unit, sizeof(unit)) < 0 && errno == EINTR) {
        }
        *value = std::move(items_.front());
        items_.pop_front();
        size_.store(items_.size(), std::memory_order_relaxed);
        return 0;
    }

    // Nothing queued. Exact under the lock that the pushers hold (a
    // connection's, for the events it fires).
    bool Empty() const { return size_.load(std::memory_order_relaxed) == 0; }

    // Takes everything without touching the counter; for owners that are
    // shutting down and will not read the fd again.
    std::deque<T> Drain() {
        std::lock_guard lock(mu_);
        size_.store(0, std::memory_order_relaxed);
        return std::exchange(items_, {});
    }

  private:
    UniqueFd fd_;
    std::mutex mu_;
    std::deque<T> items_;
    std::atomic<size_t> size_{0};  // items_.size(), readable without the lock
};

}  // namespace rpma::provider::tcp

#endif  // RPMA_CORE_SRC_PROVIDER_TCP_TCP_SIGNALING_QUEUE_H
