// A queue whose eventfd is readable exactly while the queue is non-empty, so
// applications can wait for it with poll/epoll. The eventfd counts in
// semaphore mode: one unit per element, written after the push and read
// before the pop, so a reader that got a unit always finds an element.
#ifndef RPMA_CORE_SRC_PROVIDER_TCP_TCP_SIGNALING_QUEUE_H
#define RPMA_CORE_SRC_PROVIDER_TCP_TCP_SIGNALING_QUEUE_H

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

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
    // `nonblocking`: Pop returns EAGAIN when empty, whatever the fd's flags.
    // Otherwise Pop blocks unless the application made the fd non-blocking
    // (ibv_comp_channel).
    explicit SignalingQueue(bool nonblocking)
        : fd_(eventfd(0, EFD_SEMAPHORE | EFD_CLOEXEC)), nonblocking_(nonblocking) {}

    // Check after construction: eventfd can fail (EMFILE, ENOMEM).
    bool Valid() const { return fd_.Valid(); }
    int Fd() const { return fd_.Get(); }

    void Push(T value) {
        std::lock_guard lock(mu_);
        items_.push_back(std::move(value));
        const uint64_t one = 1;
        // Cannot fail: the counter stays far below its limit.
        [[maybe_unused]] ssize_t written = write(fd_.Get(), &one, sizeof(one));
    }

    // 0, EAGAIN, or the errno of the failed read.
    int Pop(T *value) {
        if (nonblocking_) {
            pollfd ready{fd_.Get(), POLLIN, 0};
            if (poll(&ready, 1, 0) == 0)
                return EAGAIN;
        }
        uint64_t unit;
        while (read(fd_.Get(), &unit, sizeof(unit)) < 0) {
            if (errno != EINTR)
                return errno;
        }
        std::lock_guard lock(mu_);
        if (items_.empty())
            return EAGAIN;  // drained by a closing owner
        *value = std::move(items_.front());
        items_.pop_front();
        return 0;
    }

    // Takes everything without touching the counter; for owners that are
    // shutting down and will not read the fd again.
    std::deque<T> Drain() {
        std::lock_guard lock(mu_);
        return std::exchange(items_, {});
    }

  private:
    UniqueFd fd_;
    const bool nonblocking_;
    std::mutex mu_;
    std::deque<T> items_;
};

}  // namespace rpma::provider::tcp

#endif  // RPMA_CORE_SRC_PROVIDER_TCP_TCP_SIGNALING_QUEUE_H
