// InFlight, the asynchronous operations' queue and progress thread, against
// a completer of the test's own (the Region's waits are the integration
// tests'): completions in submission order, each callback once and without
// the mutex, later operations already done completed in the same round, a
// callback's submissions never waiting for room, submitters waiting at
// max_in_flight (or told at once that there is none), and Stop completing
// what is queued.
#include "in_flight.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace rpma::client {
namespace {

constexpr auto kBound = std::chrono::seconds(10);

// Completes an operation once the gate is open (waiting, as the Region's
// waits do, with the mutex released); an operation is done without a wait
// when its seq is at most done_up_to.
class Completer : public InFlight::Completer {
  public:
    explicit Completer(std::mutex &mu) : mu_(mu) {}

    Status Complete(Pending &pending) override {
        gate_cv_.wait(mu_, [this] { return open_; });
        completed.push_back(pending.posted.seq);
        return pending.status;
    }
    bool PostedDone(const Posted &posted) override { return posted.seq <= done_up_to; }
    void AfterCompletions() override { ++rounds; }

    // mu_ held (Close: or before the first submission).
    void Open() {
        open_ = true;
        gate_cv_.notify_all();
    }
    void Close() { open_ = false; }

    std::vector<uint64_t> completed;
    uint64_t done_up_to = 0;
    int rounds = 0;

  private:
    std::mutex &mu_;
    std::condition_variable_any gate_cv_;
    bool open_ = true;
};

// What the callbacks saw, with a wait for how many ran.
class Callbacks {
  public:
    std::function<void(Status)> For(uint64_t seq) {
        return [this, seq](Status s) {
            std::lock_guard lock(mu_);
            seqs_.push_back(seq);
            statuses_.push_back(std::move(s));
            cv_.notify_all();
        };
    }
    // False when fewer than `n` ran within kBound.
    bool AwaitCount(size_t n) {
        std::unique_lock lock(mu_);
        return cv_.wait_for(lock, kBound, [&] { return seqs_.size() >= n; });
    }
    std::vector<uint64_t> seqs() {
        std::lock_guard lock(mu_);
        return seqs_;
    }
    std::vector<Status> statuses() {
        std::lock_guard lock(mu_);
        return statuses_;
    }

  private:
    std::mutex mu_;
    std::condition_variable cv_;
    std::vector<uint64_t> seqs_;
    std::vector<Status> statuses_;
};

Pending Operation(uint64_t seq, std::function<void(Status)> done) {
    Pending p;
    p.op = {Op::Kind::kWrite, seq * 4096, 4096};
    p.posted.seq = seq;
    p.done = std::move(done);
    return p;
}

// A Region's share of InFlight: its mutex, its completer, the callbacks.
struct Harness {
    explicit Harness(size_t max_in_flight = 64) : in_flight(mu, max_in_flight, completer) {}
    // Submits seq first..last, each completing through callbacks, under
    // the mutex: all queued before the progress thread can take it.
    void Submit(uint64_t first, uint64_t last) {
        std::unique_lock lock(mu);
        for (uint64_t seq = first; seq <= last; ++seq)
            in_flight.Push(Operation(seq, callbacks.For(seq)));
    }
    // Every callback ran (within kBound), then the thread stopped: the
    // seqs the callbacks saw, in the order they ran.
    std::vector<uint64_t> Finish(size_t count) {
        EXPECT_TRUE(callbacks.AwaitCount(count));
        in_flight.Stop();
        return callbacks.seqs();
    }

    std::mutex mu;
    Completer completer{mu};
    Callbacks callbacks;
    InFlight in_flight;
};

std::vector<uint64_t> Seqs(uint64_t first, uint64_t last) {
    std::vector<uint64_t> seqs;
    for (uint64_t seq = first; seq <= last; ++seq)
        seqs.push_back(seq);
    return seqs;
}

TEST(InFlightTest, CompletesInSubmissionOrderEachCallbackOnceWithoutTheMutex) {
    Harness h;
    bool mutex_free_in_callback = true;
    h.Submit(1, 20);
    {
        std::unique_lock lock(h.mu);
        h.in_flight.Push(Operation(21, [&](Status s) {
            // The mutex is free while callbacks run.
            std::unique_lock held(h.mu, std::try_to_lock);
            mutex_free_in_callback = held.owns_lock();
            h.callbacks.For(21)(std::move(s));
        }));
    }
    EXPECT_EQ(h.Finish(21), Seqs(1, 21));
    EXPECT_EQ(h.completer.completed, Seqs(1, 21));
    EXPECT_TRUE(mutex_free_in_callback);
    for (const Status &s : h.callbacks.statuses())
        EXPECT_TRUE(s.ok()) << s.ToString();
}

TEST(InFlightTest, LaterOperationsAlreadyDoneCompleteInTheSameRound) {
    for (const uint64_t done_up_to : {uint64_t{0}, uint64_t{3}}) {
        Harness h;
        h.completer.done_up_to = done_up_to;
        h.Submit(1, 3);
        EXPECT_EQ(h.Finish(3), Seqs(1, 3));
        // Done already: one round; else one wait, and one round, each.
        EXPECT_EQ(h.completer.rounds, done_up_to == 3 ? 1 : 3) << "done_up_to " << done_up_to;
    }
}

TEST(InFlightTest, ARefusedSubmissionCompletesInItsTurnWithItsError) {
    Harness h;
    {
        std::unique_lock lock(h.mu);
        h.in_flight.Push(Operation(1, h.callbacks.For(1)));
        Pending refused = Operation(0, h.callbacks.For(2));
        refused.status = Status(StatusCode::kInvalidArgument, "beyond the region");
        h.in_flight.Push(std::move(refused));
        h.in_flight.Push(Operation(3, h.callbacks.For(3)));
    }
    EXPECT_EQ(h.Finish(3), Seqs(1, 3));
    const std::vector<Status> statuses = h.callbacks.statuses();
    EXPECT_TRUE(statuses[0].ok());
    EXPECT_EQ(statuses[1].code(), StatusCode::kInvalidArgument);
    EXPECT_TRUE(statuses[2].ok());
}

TEST(InFlightTest, ACallbacksSubmissionsDoNotWaitForRoom) {
    // max_in_flight 1: a callback's second submission finds the queue full.
    // Waiting for room on the progress thread would wait for itself.
    Harness h(1);
    {
        std::unique_lock lock(h.mu);
        h.in_flight.Push(Operation(1, [&](Status s) {
            h.callbacks.For(1)(std::move(s));
            std::unique_lock again(h.mu);
            for (uint64_t seq = 2; seq <= 3; ++seq) {
                h.in_flight.AwaitRoom(again);
                h.in_flight.Push(Operation(seq, h.callbacks.For(seq)));
            }
        }));
    }
    EXPECT_EQ(h.Finish(3), Seqs(1, 3));
}

TEST(InFlightTest, SubmittersWaitForRoomAtMaxInFlight) {
    Harness h(2);
    h.completer.Close();
    h.Submit(1, 2);
    std::condition_variable_any pushed_cv;
    bool third_pushed = false;
    std::thread submitter([&] {
        std::unique_lock lock(h.mu);
        h.in_flight.AwaitRoom(lock);
        h.in_flight.Push(Operation(3, h.callbacks.For(3)));
        third_pushed = true;
        pushed_cv.notify_all();
    });
    {
        std::unique_lock lock(h.mu);
        // Two outstanding, none can complete: the third waits for room.
        EXPECT_FALSE(
            pushed_cv.wait_for(lock, std::chrono::milliseconds(200), [&] { return third_pushed; }));
        h.completer.Open();
        EXPECT_TRUE(pushed_cv.wait_for(lock, kBound, [&] { return third_pushed; }));
    }
    submitter.join();
    EXPECT_EQ(h.Finish(3), Seqs(1, 3));
}

TEST(InFlightTest, WithoutWaitingASubmitterIsToldAtOnceThatThereIsNoRoom) {
    Harness h(2);
    h.completer.Close();
    {
        std::unique_lock lock(h.mu);
        EXPECT_TRUE(h.in_flight.AwaitRoom(lock, /*wait=*/false));
        h.in_flight.Push(Operation(1, h.callbacks.For(1)));
        EXPECT_TRUE(h.in_flight.AwaitRoom(lock, /*wait=*/false));
        h.in_flight.Push(Operation(2, h.callbacks.For(2)));
        // Two outstanding, none can complete: no room, and no wait for it.
        EXPECT_FALSE(h.in_flight.AwaitRoom(lock, /*wait=*/false));
        h.completer.Open();
    }
    EXPECT_TRUE(h.callbacks.AwaitCount(1));
    {
        std::unique_lock lock(h.mu);
        // Completed: room again.
        EXPECT_TRUE(h.in_flight.AwaitRoom(lock, /*wait=*/false));
    }
    EXPECT_EQ(h.Finish(2), Seqs(1, 2));
}

TEST(InFlightTest, ACallbacksSubmissionsAreNeverToldThereIsNoRoom) {
    Harness h(1);
    bool room = false;
    {
        std::unique_lock lock(h.mu);
        h.in_flight.Push(Operation(1, [&](Status s) {
            h.callbacks.For(1)(std::move(s));
            std::unique_lock again(h.mu);
            h.in_flight.Push(Operation(2, h.callbacks.For(2)));
            // Full (operation 2 outstanding), but on the progress thread.
            room = h.in_flight.AwaitRoom(again, /*wait=*/false);
            h.in_flight.Push(Operation(3, h.callbacks.For(3)));
        }));
    }
    EXPECT_EQ(h.Finish(3), Seqs(1, 3));
    EXPECT_TRUE(room);
}

TEST(InFlightTest, StopCompletesEveryOperationQueued) {
    Harness h;
    h.Submit(1, 8);
    h.in_flight.Stop();
    // No wait: every callback ran before Stop returned.
    EXPECT_EQ(h.callbacks.seqs(), Seqs(1, 8));
}

}  // namespace
}  // namespace rpma::client
