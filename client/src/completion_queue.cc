#include "completion_queue.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cstdint>

namespace rpma::client {

CompletionQueue::~CompletionQueue() {
    if (fd_ >= 0)
        close(fd_);
}

// The counter is non-zero exactly while ready_ is not empty: set by the
// push that fills an empty queue, reset by the take that empties it, both
// under mu_.
void CompletionQueue::Signal() {
    const uint64_t one = 1;
    if (fd_ >= 0)
        (void)!write(fd_, &one, sizeof one);
}

void CompletionQueue::Push(Entry entry) {
    std::lock_guard lock(mu_);
    ready_.push_back(std::move(entry));
    if (ready_.size() == 1)
        Signal();
}

void CompletionQueue::Take(size_t max, std::vector<Entry> *out) {
    std::lock_guard lock(mu_);
    if (ready_.empty() || max == 0)
        return;
    for (; max > 0 && !ready_.empty(); --max) {
        out->push_back(std::move(ready_.front()));
        ready_.pop_front();
    }
    uint64_t count = 0;
    if (ready_.empty() && fd_ >= 0)
        (void)!read(fd_, &count, sizeof count);
}

int CompletionQueue::Fd() {
    std::lock_guard lock(mu_);
    if (fd_ < 0) {
        fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (fd_ >= 0 && !ready_.empty())
            Signal();
    }
    return fd_;
}

}  // namespace rpma::client
