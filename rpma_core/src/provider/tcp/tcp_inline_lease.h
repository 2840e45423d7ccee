// The inline-progress lease of one connection (tcp_inline_progress.h, which
// owns it): how many application threads wait on it inline, the linger
// after the last of them (meanwhile the progress engine stays off the
// socket's EPOLLIN), and the doorbell: small posts in the linger wait for
// the application's next post, wait or poll to share its sendmsg. Used
// under the connection's lock (the Initiator borrows it for the doorbell);
// no syscalls.
#ifndef RPMA_CORE_SRC_PROVIDER_TCP_TCP_INLINE_LEASE_H
#define RPMA_CORE_SRC_PROVIDER_TCP_TCP_INLINE_LEASE_H

#include <chrono>
#include <cstddef>

namespace rpma::provider::tcp {

class InlineLease {
  public:
    using Clock = std::chrono::steady_clock;
    // Posts wait for the doorbell only while the queue holds at most this
    // much: a larger batch is worth its own sendmsg.
    static constexpr size_t kDoorbellBatchBytes = size_t{64} << 10;

    // --- waiters and the linger ---

    int Waiters() const { return waiters_; }
    void Join() { ++waiters_; }
    // A waiter left; true when it was the last.
    bool Leave() { return --waiters_ == 0; }
    // The progress engine leaves the socket's EPOLLIN to the waiters.
    bool Muted() const { return waiters_ > 0 || lease_; }
    // The linger after the last wait runs.
    bool Lingering() const { return lease_ && waiters_ == 0; }
    Clock::time_point Until() const { return until_; }
    // The last waiter left: the mute lingers `linger_us` (not at all when 0,
    // or when the socket cannot be read now: !`can_mute`). A wait that ends
    // while a lease runs and `deadline_pending` extends it when that
    // deadline passes (no clock read per wait). True when a deadline at
    // Until() must be asked for.
    bool StartLinger(int linger_us, bool can_mute, bool deadline_pending);
    // A deadline passed at `now`: a lease that ran out runs another linger
    // when a wait ended meanwhile, and ends otherwise.
    void Expire(Clock::time_point now, int linger_us);

    // --- the doorbell ---

    bool DoorbellPending() const { return doorbell_pending_; }
    // The latest time the waiting posts go out (the lease's end when the
    // first of them was posted).
    Clock::time_point DoorbellBy() const { return doorbell_by_; }
    bool DoorbellDue(Clock::time_point now) const {
        return doorbell_pending_ && doorbell_by_ <= now;
    }
    // What waited went out (any flush of the queue rings it).
    void DoorbellRung() { doorbell_pending_ = false; }
    // Whether a post just queued may wait for the doorbell, given the
    // queue's `messages` and `bytes`: only in the linger, and only while
    // the queue is a small batch that no sendmsg was tried for yet.
    bool MayWaitForDoorbell(size_t messages, size_t bytes);
    // A post the application said another follows (RPMA_EXT_F_MORE) was
    // queued: it waits for that post, or the next wait or poll, in or out
    // of the linger; a deadline that passes meanwhile sends it at once.
    void HoldForMore() {
        if (!doorbell_pending_) {
            doorbell_pending_ = true;
            doorbell_by_ = Clock::time_point{};
        }
    }

  private:
    int waiters_ = 0;
    bool lease_ = false;
    Clock::time_point until_;
    // A wait ended during the running lease: its deadline extends it.
    bool renewed_ = false;
    bool doorbell_pending_ = false;
    Clock::time_point doorbell_by_;
};

}  // namespace rpma::provider::tcp

#endif  // RPMA_CORE_SRC_PROVIDER_TCP_TCP_INLINE_LEASE_H
