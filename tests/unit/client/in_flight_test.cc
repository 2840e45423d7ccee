// InFlight, the asynchronous operations' queue and progress thread, against
// a completer of the test's own (the Region's waits are the integration
// tests'): completions in submission order, each callback once and without
// the mutex, later operations already done completed in the same round, a
// callback's submissions never waiting for room, submitters waiting at
// max_in_flight, and Stop completing what is queued.
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

TEST(InFlightTest, CompletesInSubmissionOrderEachCallbackOnceWithoutTheMutex) {
    std::mutex mu;
    Completer completer(mu);
    InFlight in_flight(mu, 64, completer);
    Callbacks callbacks;
    bool mutex_free_in_callback = true;
    {
        std::unique_lock lock(mu);
        for (uint64_t seq = 1; seq <= 20; ++seq)
            in_flight.Push(Operation(seq, callbacks.For(seq)));
        in_flight.Push(Operation(21, [&](Status s) {
            // The mutex is free while callbacks run.
            std::unique_lock held(mu, std::try_to_lock);
            mutex_free_in_callback = held.owns_lock();
            callbacks.For(21)(std::move(s));
        }));
    }
    ASSERT_TRUE(callbacks.AwaitCount(21));
    in_flight.Stop();
    std::vector<uint64_t> expected;
    for (uint64_t seq = 1; seq <= 21; ++seq)
        expected.push_back(seq);
    EXPECT_EQ(callbacks.seqs(), expected);
    EXPECT_EQ(completer.completed, expected);
    EXPECT_TRUE(mutex_free_in_callback);
    for (const Status &s : callbacks.statuses())
        EXPECT_TRUE(s.ok()) << s.ToString();
}

TEST(InFlightTest, LaterOperationsAlreadyDoneCompleteInTheSameRound) {
    for (const uint64_t done_up_to : {uint64_t{0}, uint64_t{3}}) {
        std::mutex mu;
        Completer completer(mu);
        completer.done_up_to = done_up_to;
        InFlight in_flight(mu, 64, completer);
        Callbacks callbacks;
        {
            // All three queued before the progress thread can take the mutex.
            std::unique_lock lock(mu);
            for (uint64_t seq = 1; seq <= 3; ++seq)
                in_flight.Push(Operation(seq, callbacks.For(seq)));
        }
        ASSERT_TRUE(callbacks.AwaitCount(3));
        in_flight.Stop();
        // Done already: one round; else one wait, and one round, each.
        EXPECT_EQ(completer.rounds, done_up_to == 3 ? 1 : 3) << "done_up_to " << done_up_to;
    }
}

TEST(InFlightTest, ARefusedSubmissionCompletesInItsTurnWithItsError) {
    std::mutex mu;
    Completer completer(mu);
    InFlight in_flight(mu, 64, completer);
    Callbacks callbacks;
    {
        std::unique_lock lock(mu);
        in_flight.Push(Operation(1, callbacks.For(1)));
        Pending refused = Operation(0, callbacks.For(2));
        refused.status = Status(StatusCode::kInvalidArgument, "beyond the region");
        in_flight.Push(std::move(refused));
        in_flight.Push(Operation(3, callbacks.For(3)));
    }
    ASSERT_TRUE(callbacks.AwaitCount(3));
    in_flight.Stop();
    EXPECT_EQ(callbacks.seqs(), (std::vector<uint64_t>{1, 2, 3}));
    const std::vector<Status> statuses = callbacks.statuses();
    EXPECT_TRUE(statuses[0].ok());
    EXPECT_EQ(statuses[1].code(), StatusCode::kInvalidArgument);
    EXPECT_TRUE(statuses[2].ok());
}

TEST(InFlightTest, ACallbacksSubmissionsDoNotWaitForRoom) {
    // max_in_flight 1: a callback's second submission finds the queue full.
    // Waiting for room on the progress thread would wait for itself.
    std::mutex mu;
    Completer completer(mu);
    InFlight in_flight(mu, 1, completer);
    Callbacks callbacks;
    {
        std::unique_lock lock(mu);
        in_flight.Push(Operation(1, [&](Status s) {
            callbacks.For(1)(std::move(s));
            std::unique_lock again(mu);
            for (uint64_t seq = 2; seq <= 3; ++seq) {
                in_flight.AwaitRoom(again);
                in_flight.Push(Operation(seq, callbacks.For(seq)));
            }
        }));
    }
    ASSERT_TRUE(callbacks.AwaitCount(3));
    in_flight.Stop();
    EXPECT_EQ(callbacks.seqs(), (std::vector<uint64_t>{1, 2, 3}));
}

TEST(InFlightTest, SubmittersWaitForRoomAtMaxInFlight) {
    std::mutex mu;
    Completer completer(mu);
    completer.Close();
    InFlight in_flight(mu, 2, completer);
    Callbacks callbacks;
    std::condition_variable_any pushed_cv;
    bool third_pushed = false;
    {
        std::unique_lock lock(mu);
        in_flight.Push(Operation(1, callbacks.For(1)));
        in_flight.Push(Operation(2, callbacks.For(2)));
    }
    std::thread submitter([&] {
        std::unique_lock lock(mu);
        in_flight.AwaitRoom(lock);
        in_flight.Push(Operation(3, callbacks.For(3)));
        third_pushed = true;
        pushed_cv.notify_all();
    });
    {
        std::unique_lock lock(mu);
        // Two outstanding, none can complete: the third waits for room.
        EXPECT_FALSE(
            pushed_cv.wait_for(lock, std::chrono::milliseconds(200), [&] { return third_pushed; }));
        completer.Open();
        EXPECT_TRUE(pushed_cv.wait_for(lock, kBound, [&] { return third_pushed; }));
    }
    submitter.join();
    ASSERT_TRUE(callbacks.AwaitCount(3));
    in_flight.Stop();
    EXPECT_EQ(callbacks.seqs(), (std::vector<uint64_t>{1, 2, 3}));
}

TEST(InFlightTest, StopCompletesEveryOperationQueued) {
    std::mutex mu;
    Completer completer(mu);
    InFlight in_flight(mu, 64, completer);
    Callbacks callbacks;
    {
        std::unique_lock lock(mu);
        for (uint64_t seq = 1; seq <= 8; ++seq)
            in_flight.Push(Operation(seq, callbacks.For(seq)));
    }
    in_flight.Stop();
    // No wait: every callback ran before Stop returned.
    EXPECT_EQ(callbacks.seqs().size(), 8u);
}

}  // namespace
}  // namespace rpma::client
