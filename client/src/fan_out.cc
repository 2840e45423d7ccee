#include "fan_out.h"

#include <sys/eventfd.h>
#include <unistd.h>

namespace rpma::client {

FanOut::FanOut(Members &members, std::mutex &mu, std::chrono::milliseconds operation_timeout,
               Failures &failures)
    : members_(members),
      mu_(mu),
      operation_timeout_(operation_timeout),
      failures_(failures),
      wake_fd_(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {}

FanOut::~FanOut() {
    if (wake_fd_ >= 0)
        close(wake_fd_);
}

void FanOut::ProgressAll(const Op &op) {
    for (size_t i = 0; i < members_.size(); ++i)
        if (!Out(members_[i].state))
            if (!members_[i].replica->ProgressUnlessWaited())
                failures_.MarkFailed(i, members_[i].replica->failure(), op);
}

size_t FanOut::Likeliest() const {
    size_t pick = waiting_.front();
    for (size_t i : waiting_)
        if (members_[i].replica->completed() >= members_[pick].replica->completed())
            pick = i;
    return pick;
}

void FanOut::TakeReadable(const Op &op, const std::vector<pollfd> &fds,
                          const std::vector<size_t> &owners) {
    bool fired = false;
    for (size_t k = 0; k < fds.size(); ++k) {
        const size_t i = owners[k];
        if (fds[k].revents == 0 || i == members_.size() || Out(members_[i].state))
            continue;
        Replica &r = *members_[i].replica;
        if (!r.CheckConnection() || !r.Wait(std::chrono::milliseconds(0), &fired))
            failures_.MarkFailed(i, r.failure(), op);
    }
}

void FanOut::WaitForAny(const Op &op, std::chrono::milliseconds timeout) {
    const size_t pick = Likeliest();
    const bool alone = waiting_.size() == 1;
    bool fired = false;
    Replica &picked = *members_[pick].replica;
    const bool works = picked.Wait(alone ? timeout : std::min(timeout, kInlineSlice), &fired);
    if (!works)
        failures_.MarkFailed(pick, picked.failure(), op);
    if (alone || !works || fired)
        return;
    // Slow to answer: watch every replica waited for, and take whatever
    // made an fd readable (a queue's event, a connection's end).
    poll_fds_.clear();
    poll_owners_.clear();
    for (size_t i : waiting_)
        for (int fd : members_[i].replica->Fds()) {
            poll_fds_.push_back({fd, POLLIN, 0});
            poll_owners_.push_back(i);
        }
    // What the slice left of the timeout.
    (void)poll(poll_fds_.data(), poll_fds_.size(),
               static_cast<int>((timeout - std::min(timeout, kInlineSlice)).count()));
    TakeReadable(op, poll_fds_, poll_owners_);
}

std::chrono::nanoseconds FanOut::PollRound(const Op &op, std::chrono::milliseconds timeout) {
    std::chrono::nanoseconds relocking{0};
    const size_t pick = Likeliest();
    Replica *const picked = members_[pick].replica.get();
    // One replica to hear from: inline longer, as a wait inline that ends
    // leaves its socket muted in the provider's progress engine a while
    // (its linger), which poll(2) would sit out.
    const std::chrono::milliseconds slice = waiting_.size() == 1 ? kPollSlice : kInlineSlice;
    poller_ = true;
    mu_.unlock();
    const int waited = picked->AwaitEvent(std::min(timeout, slice));
    relocking += Relock();
    bool fired = false;
    // (Marked failed, or even replaced by a Readd, meanwhile: nothing to take.)
    if (members_[pick].replica.get() == picked && !Out(members_[pick].state) &&
        !picked->TakeEvent(waited, &fired))
        failures_.MarkFailed(pick, picked->failure(), op);
    if (!fired && timeout > slice) {
        // Slow to answer: watch every replica with work outstanding (any
        // waiter's), and the wake fd for waiters that post meanwhile.
        poller_fds_.clear();
        poller_owners_.clear();
        for (size_t i = 0; i < members_.size(); ++i)
            if (!Out(members_[i].state) && !members_[i].replica->Idle())
                for (int fd : members_[i].replica->Fds()) {
                    poller_fds_.push_back({fd, POLLIN, 0});
                    poller_owners_.push_back(i);
                }
        poller_fds_.push_back({wake_fd_, POLLIN, 0});
        poller_owners_.push_back(members_.size());
        poller_sleeping_ = true;
        mu_.unlock();
        (void)poll(poller_fds_.data(), poller_fds_.size(),
                   static_cast<int>(std::min(timeout - slice, kPollSlice).count()));
        relocking += Relock();
        poller_sleeping_ = false;
        uint64_t woken = 0;
        const ssize_t drained = read(wake_fd_, &woken, sizeof woken);
        (void)drained;  // nothing to drain is fine too
        TakeReadable(op, poller_fds_, poller_owners_);
    }
    poller_ = false;
    // Other waiters' completions may be on other replicas. Alone, the
    // round's own replica was collected; polling the others here would cost
    // the depth-1 path a read of each idle socket per round.
    if (waiters_ > 0) {
        ProgressAll(op);
        progress_cv_.notify_all();
    }
    return relocking;
}

std::chrono::nanoseconds FanOut::AwaitPoller(std::chrono::milliseconds timeout) {
    if (poller_sleeping_) {
        poller_sleeping_ = false;
        const uint64_t one = 1;
        const ssize_t written = write(wake_fd_, &one, sizeof one);
        (void)written;  // a full counter wakes it as well
    }
    ++waiters_;
    const std::chrono::nanoseconds before = CoarseNow();
    (void)progress_cv_.wait_for(mu_, timeout);
    --waiters_;
    return std::max(std::chrono::nanoseconds(0), CoarseNow() - before - timeout);
}

std::chrono::nanoseconds FanOut::JudgeSilent(const Op &op, std::chrono::nanoseconds now) {
    std::chrono::nanoseconds next = now + operation_timeout_;
    for (size_t i : waiting_) {
        Replica &r = *members_[i].replica;
        const std::chrono::nanoseconds due = r.silent_since() + operation_timeout_;
        if (due <= now)
            failures_.MarkFailed(i, Unresponsive(r), op);
        else
            next = std::min(next, due);
    }
    return next;
}

Status FanOut::Unresponsive(Replica &r) {
    // A connection that ended says more than the silence.
    if (!r.CheckConnection())
        return r.failure();
    return Status(StatusCode::kDeadlineExceeded,
                  "no completion within " + std::to_string(operation_timeout_.count()) +
                      " ms (the daemon hangs or the network is cut; " + r.Backlog() + ")");
}

}  // namespace rpma::client
