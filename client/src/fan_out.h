// The fan-out's waits: an operation posted to every replica not left out
// waits here until the replicas it needs confirmed it (or can no longer),
// and a replica that errs or stays silent for operation_timeout is handed
// to the Region to be marked failed. Private to the library; every call is
// made with the Region's mutex held (AwaitReleasing and AwaitPoller release
// it while they block).
#ifndef CLIENT_SRC_FAN_OUT_H
#define CLIENT_SRC_FAN_OUT_H

#include <poll.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <vector>

#include "coarse_clock.h"
#include "members.h"
#include "op.h"
#include "replica.h"

namespace rpma::client {

// How long a wait for several replicas reads the likeliest one's connection
// inline before it watches all of them at once (poll(2) on their fds):
// replicas that answer within it are collected without a hand-off between
// threads; past it, whichever answers or fails first is seen at once.
constexpr std::chrono::milliseconds kInlineSlice{1};
// The data path's poller waits (inline on its one replica, or on the
// replicas' fds in poll(2)) for at most this at a time, then collects and
// looks again: a completion's event may have been taken by a thread that
// holds the mutex to the end (a read), and the poller must not sleep
// through it until its deadline; nor may a thread that closes a replica
// wait long for the poller's inline wait on it.
constexpr std::chrono::milliseconds kPollSlice{10};

class FanOut {
  public:
    // Where the waits report a replica that failed (its work request
    // erred, its connection ended, or it was silent for operation_timeout):
    // the Region marks it failed, and from then on it is Out.
    class Failures {
      public:
        virtual void MarkFailed(size_t i, Status why, const Op &op) = 0;

      protected:
        ~Failures() = default;
    };
    // A wait's notion of done: the quorum (with records: every in-sync
    // member, at least the quorum; legacy: the quorum of live replicas),
    // every replica not failed, or one replica.
    enum class Need { kQuorum, kAll, kOne };
    // A wait's verdict now. kWaiting leaves the replicas still to be heard
    // from in waiting_.
    enum class Outcome { kMet, kWaiting, kQuorumLost, kReplicaFailed };

    // `mu` is the Region's mutex, which guards `members` too.
    FanOut(Members &members, std::mutex &mu, std::chrono::milliseconds operation_timeout,
           Failures &failures);
    ~FanOut();
    FanOut(const FanOut &) = delete;
    FanOut &operator=(const FanOut &) = delete;

    // Whether `need` is met by `done` now (`only`: kOne's replica), after
    // nothing more than a look at what was collected.
    template <typename Done>
    Outcome Decide(Need need, const Done &done, size_t only);
    // Returns once `need` is met by `done` (or can no longer be), marking
    // replicas that take longer than operation_timeout failed. Returns at
    // once when it is met already; otherwise it first collects everything
    // ready (laggards included), then waits, mu held throughout.
    // `done(Replica &)` says whether a replica did what is waited for (a
    // template: no std::function on the hot path).
    template <typename Done>
    Status Await(const Op &op, Need need, const Done &done, size_t only = 0) {
        return Wait<false>(op, need, done, only);
    }
    // Await for the data path (writes, persists, batches, reads): the same
    // verdicts and timeouts, but mu is released while the thread waits, so
    // other threads post meanwhile. One thread at a time (the poller) waits
    // on the replicas' queues and collects every completion, whoever's it
    // is; the others wait for its rounds (AwaitPoller). Callers must hold
    // nothing across it that another operation could take (a staging slot
    // is chosen and posted to without a wait in between).
    template <typename Done>
    Status AwaitReleasing(const Op &op, Need need, const Done &done, size_t only = 0) {
        return Wait<true>(op, need, done, only);
    }
    // A non-poller's wait, up to `timeout`, for the poller's next round (or
    // for WakeWaiters). Returns how much longer than `timeout` it took (mu
    // held elsewhere).
    std::chrono::nanoseconds AwaitPoller(std::chrono::milliseconds timeout);
    // Wakes the threads in AwaitPoller: something they may wait for, that
    // no completion announces, happened (a read's bytes copied out).
    void WakeWaiters() {
        if (waiters_ > 0)
            progress_cv_.notify_all();
    }
    // Collects what every replica not left out completed, without waiting.
    void ProgressAll(const Op &op);

  private:
    // Await (kReleasing false: one thread, mu held, reads its replicas
    // itself) and AwaitReleasing: the same verdicts and deadlines, waits
    // of their own kinds.
    template <bool kReleasing, typename Done>
    Status Wait(const Op &op, Need need, const Done &done, size_t only);
    // A wait's Status for an outcome that is not kWaiting.
    Status Verdict(const Op &op, Outcome outcome, size_t only) const {
        if (outcome == Outcome::kQuorumLost)
            return members_.QuorumLost(op);
        if (outcome == Outcome::kReplicaFailed)
            return members_[only].error;
        return Status();
    }
    // One wait, of at most `timeout`, for any of waiting_ to make progress
    // (Await: mu held).
    void WaitForAny(const Op &op, std::chrono::milliseconds timeout);
    // One round of the poller (mu held on entry and on return, released
    // in between): the likeliest of waiting_ read inline for kInlineSlice
    // (kPollSlice when it is the only one), then, if nothing came, every
    // replica with work outstanding watched (poll(2)) up to `timeout`
    // (kPollSlice at most); then everything collected, the waiters woken.
    // Returns how long it waited to take mu back (see Relock).
    std::chrono::nanoseconds PollRound(const Op &op, std::chrono::milliseconds timeout);
    // The replica of waiting_ to read inline: of those not behind on
    // earlier work (laggards), the one posted to last. When it answered,
    // the others most likely have too, and their waits, next, find the
    // answers in their sockets; each replica waited for this way keeps its
    // connection to this thread (rpma_core's inline linger) for the
    // operations that follow.
    size_t Likeliest() const;
    // Collects from the replicas of `fds` whose fds poll(2) found readable
    // (owners: their members; size() for none), marking failed those whose
    // connection ended or whose queue erred.
    void TakeReadable(const Op &op, const std::vector<pollfd> &fds,
                      const std::vector<size_t> &owners);
    // Takes mu back; returns how long that took. A data-path wait does not
    // count that time against its replicas' operation_timeout: meanwhile
    // another thread held mu (recording a failure on the control plane,
    // copying a repair's extent) and nobody could collect their
    // completions, so their silence says nothing of them.
    std::chrono::nanoseconds Relock() {
        const std::chrono::nanoseconds before = CoarseNow();
        mu_.lock();
        return CoarseNow() - before;
    }
    // An operation's deadline passed at `now`: marks failed each replica it
    // still waits for (waiting_) that has been silent for operation_timeout
    // (Replica::silent_since), and returns when the next of the others will
    // have been. Their silence may have begun later than the operation's
    // wait: it waited behind another replica (one cut, since marked failed)
    // while they answered everything else.
    std::chrono::nanoseconds JudgeSilent(const Op &op, std::chrono::nanoseconds now);
    // Why replica `r` did not complete within operation_timeout: its
    // connection's end when it ended, else the silence.
    Status Unresponsive(Replica &r);

    Members &members_;
    std::mutex &mu_;
    const std::chrono::milliseconds operation_timeout_;
    Failures &failures_;

    // A wait's replicas still to be heard from (Decide), kept to spare an
    // allocation per wait, as are WaitForAny's poll(2) sets.
    std::vector<size_t> waiting_;
    std::vector<pollfd> poll_fds_;
    std::vector<size_t> poll_owners_;
    // AwaitReleasing's waits: a poller at a time; the others wait on
    // progress_cv_, which the poller signals after each round.
    std::condition_variable_any progress_cv_;
    bool poller_ = false;
    size_t waiters_ = 0;  // threads in AwaitPoller
    // The poller sleeps in poll(2): a new waiter wakes it through wake_fd_
    // (its replicas may not be among those watched).
    bool poller_sleeping_ = false;
    const int wake_fd_;
    std::vector<pollfd> poller_fds_;
    std::vector<size_t> poller_owners_;
};

// The waits are templates over their predicates (no std::function on the
// hot path), so they are defined here.

template <typename Done>
FanOut::Outcome FanOut::Decide(Need need, const Done &done, size_t only) {
    size_t confirmed = 0, undecided = 0;
    waiting_.clear();
    for (size_t i = 0; i < members_.size(); ++i) {
        Member &m = members_[i];
        if (Out(m.state) || (need == Need::kOne && i != only))
            continue;
        const bool ok = done(*m.replica);
        if (m.state == ReplicaState::kLive) {
            confirmed += ok;
            undecided += !ok;
        }
        if (!ok)
            waiting_.push_back(i);
    }
    if (need == Need::kOne && Out(members_[only].state))
        return Outcome::kReplicaFailed;
    if (need == Need::kQuorum) {
        switch (members_.Count(confirmed, undecided)) {
            case ::rpma::client::Verdict::kDone:
                return Outcome::kMet;
            case ::rpma::client::Verdict::kLost:
                return Outcome::kQuorumLost;
            case ::rpma::client::Verdict::kWaiting:
                return Outcome::kWaiting;
        }
    }
    // kAll waits for resources (slots, queue room), which reads need even
    // without a quorum; operations check it themselves.
    return waiting_.empty() ? Outcome::kMet : Outcome::kWaiting;
}

template <bool kReleasing, typename Done>
Status FanOut::Wait(const Op &op, Need need, const Done &done, size_t only) {
    auto finish = [&](Outcome outcome) { return Verdict(op, outcome, only); };
    if (const Outcome outcome = Decide(need, done, only); outcome != Outcome::kWaiting)
        return finish(outcome);
    std::chrono::nanoseconds now = CoarseNow();
    std::chrono::nanoseconds deadline = now + operation_timeout_;
    // What submissions behind others held for the doorbell goes before
    // this thread waits for it (Replica::HoldPosts).
    members_.RingAll();
    ProgressAll(op);
    bool collected = false;
    // One clock read per wait: a wait that ends the operation needs no other.
    for (bool first = true;; first = false) {
        if (const Outcome outcome = Decide(need, done, only); outcome != Outcome::kWaiting)
            return finish(outcome);
        if (!first)
            now = CoarseNow();
        if (now >= deadline) {
            // A thread that waited for the poller may find completions no
            // one collected yet: collect before judging.
            if (!collected) {
                collected = true;
                for (size_t i : waiting_)
                    if (!members_[i].replica->Progress())
                        failures_.MarkFailed(i, members_[i].replica->failure(), op);
                continue;
            }
            collected = false;
            deadline = JudgeSilent(op, now);
            continue;
        }
        const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - now);
        if constexpr (kReleasing)
            deadline += poller_ ? AwaitPoller(left) : PollRound(op, left);
        else
            WaitForAny(op, left);
    }
}

}  // namespace rpma::client

#endif  // CLIENT_SRC_FAN_OUT_H
