// A Region's asynchronous operations outstanding: what each one's posts
// left to wait for (Posted), the operations in submission order, and the
// one progress thread that completes them, oldest first (started by the
// first submission). Private to the library; used under the Region's mutex.
#ifndef CLIENT_SRC_IN_FLIGHT_H
#define CLIENT_SRC_IN_FLIGHT_H

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <thread>

#include "op.h"
#include "plan.h"
#include "rpma/client/status.h"

namespace rpma::client {

// What an operation's posts left to wait for: `seq` completed
// (`persisted`: acknowledged durable) by the quorum, or on replica
// `replica` alone (a read). seq 0: nothing. `acknowledge`: remembered
// among the acknowledged operations once met (not with a Sole replica).
// Persists deferred together (group commit): one persist covering
// their ranges, posted by the progress thread; their operations wait
// for its sequence number.
struct Group {
    Span covering;
    uint64_t bytes = 0;  // the deferred persists' own lengths
    uint64_t seq = 0;    // the covering persist's, once posted
    Status status;       // why it could not be posted
};
struct Posted {
    uint64_t seq = 0;
    // Group commit: the persist this operation waits for (seq is its
    // write's until the group is posted).
    std::shared_ptr<Group> group;
    bool persisted = false;
    bool acknowledge = false;
    bool read = false;
    size_t replica = 0;
    // A staged read: where its bytes land in the ring (copied out to
    // `out` once complete); SIZE_MAX when not staged.
    size_t staged = SIZE_MAX;
    std::span<std::byte> out;

    // Completes when the group's persist does (group commit).
    void Join(std::shared_ptr<Group> g) {
        group = std::move(g);
        persisted = true;
    }
    static Posted ByQuorum(uint64_t seq, bool persisted, bool acknowledge) {
        Posted p;
        p.seq = seq;
        p.persisted = persisted;
        p.acknowledge = acknowledge;
        return p;
    }
};
// An asynchronous operation posted, or refused (status), and not yet
// completed.
struct Pending {
    Op op{Op::Kind::kWrite};
    Posted posted;
    Status status;
    // Through Finish (and Pinned: `pin`) as the synchronous calls' are:
    // not a refusal before anything was posted.
    bool finish = false;
    bool pin = false;
    // Region's Completion.
    std::function<void(Status)> done;
};

class InFlight {
  public:
    // What the progress thread asks of the Region, mu held.
    class Completer {
      public:
        // The oldest operation's outcome, once its replicas confirmed it
        // (mu released while the thread waits).
        virtual Status Complete(Pending &pending) = 0;
        // Whether what `posted` left is met now: Complete would not wait.
        virtual bool PostedDone(const Posted &posted) = 0;
        // After a round of completions, before their callbacks run.
        virtual void AfterCompletions() = 0;

      protected:
        ~Completer() = default;
    };

    // `mu` is the Region's mutex; `max_in_flight` operations may be
    // outstanding at once.
    InFlight(std::mutex &mu, size_t max_in_flight, Completer &completer)
        : mu_(mu), completer_(completer), max_in_flight_(max_in_flight) {}
    InFlight(const InFlight &) = delete;
    InFlight &operator=(const InFlight &) = delete;

    // Whether there is room for one more operation: waits for it, mu held
    // by `lock`, while max_in_flight operations are outstanding, or, with
    // `wait` false, answers false at once. On the progress thread there is
    // always room: a completion callback's submissions would wait for
    // itself.
    bool AwaitRoom(std::unique_lock<std::mutex> &lock, bool wait = true);
    // Queues `pending` (mu held); the progress thread starts on first use.
    void Push(Pending pending);
    bool empty() const { return queue_.empty(); }
    size_t max_in_flight() const { return max_in_flight_; }
    bool OnProgressThread() const { return std::this_thread::get_id() == progress_id_; }
    // Lets the progress thread complete what is queued, then joins it
    // (mu not held). Before the Region's members go.
    void Stop();

  private:
    // The progress thread: the oldest operation (which may wait), then
    // every later one already done; their callbacks run together, without
    // mu.
    void Loop();

    std::mutex &mu_;
    Completer &completer_;
    const size_t max_in_flight_;
    std::deque<Pending> queue_;               // oldest first
    std::condition_variable_any pending_cv_;  // the progress thread's
    std::condition_variable_any room_cv_;     // submitters' at max_in_flight
    bool stopping_ = false;
    std::thread progress_;
    std::thread::id progress_id_;
};

}  // namespace rpma::client

#endif  // CLIENT_SRC_IN_FLIGHT_H
