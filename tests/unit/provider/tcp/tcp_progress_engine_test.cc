// The progress engine's deadlines: every live handler's deadline fires, in
// any order of scheduling, and a gone handler's is dropped quietly.
#include "rpma_core/src/provider/tcp/tcp_progress_engine.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <vector>

namespace rpma::provider::tcp {
namespace {

using namespace std::chrono_literals;

// Counts its OnDeadline calls; a test waits for the count it expects.
class Counter final : public DeadlineHandler {
  public:
    void OnDeadline() override {
        std::lock_guard lock(mu_);
        ++fired_;
        cv_.notify_all();
    }
    bool WaitFor(int count, std::chrono::milliseconds limit) {
        std::unique_lock lock(mu_);
        return cv_.wait_for(lock, limit, [&] { return fired_ >= count; });
    }
    int Fired() {
        std::lock_guard lock(mu_);
        return fired_;
    }

  private:
    std::mutex mu_;
    std::condition_variable cv_;
    int fired_ = 0;
};

TEST(ProgressEngineDeadlines, EveryLiveHandlerFiresWhateverTheOrder) {
    ProgressEngine engine;
    const auto now = ProgressEngine::Clock::now();
    // Later deadlines scheduled first, then the earliest, then later ones
    // again: the engine keeps the ones before and after the due one while it
    // takes that one out.
    std::vector<std::shared_ptr<Counter>> handlers;
    for (int i = 0; i < 6; ++i)
        handlers.push_back(std::make_shared<Counter>());
    for (int i = 1; i < 6; ++i) {
        if (i == 3)
            engine.ScheduleDeadline(now + 1ms, handlers[0]);
        engine.ScheduleDeadline(now + 20ms + i * 5ms, handlers[i]);
    }
    for (auto &handler : handlers)
        EXPECT_TRUE(handler->WaitFor(1, 5s)) << "a deadline of a live handler was lost";
}

TEST(ProgressEngineDeadlines, AnEarlierDeadlineRearmsTheTimer) {
    ProgressEngine engine;
    auto late = std::make_shared<Counter>();
    auto early = std::make_shared<Counter>();
    engine.ScheduleDeadline(ProgressEngine::Clock::now() + 1h, late);
    engine.ScheduleDeadline(ProgressEngine::Clock::now() + 1ms, early);
    EXPECT_TRUE(early->WaitFor(1, 5s));
    EXPECT_EQ(late->Fired(), 0);
}

TEST(ProgressEngineDeadlines, AGoneHandlerIsDroppedAndOthersStillFire) {
    ProgressEngine engine;
    auto gone = std::make_shared<Counter>();
    auto kept = std::make_shared<Counter>();
    const auto now = ProgressEngine::Clock::now();
    engine.ScheduleDeadline(now + 1ms, gone);
    engine.ScheduleDeadline(now + 10ms, kept);
    gone.reset();
    EXPECT_TRUE(kept->WaitFor(1, 5s));
}

// A handler asks the engine only for a deadline earlier than the one it
// holds; once that passes, any deadline is asked again.
TEST(PendingDeadline, AsksOnlyForAnEarlierOneUntilItPasses) {
    const PendingDeadline::Clock::time_point t0{};
    PendingDeadline deadline;
    EXPECT_FALSE(deadline.Pending());
    EXPECT_TRUE(deadline.Ask(t0 + 10ms));
    EXPECT_TRUE(deadline.Pending());
    EXPECT_FALSE(deadline.Ask(t0 + 10ms)) << "the same one is pending";
    EXPECT_FALSE(deadline.Ask(t0 + 20ms)) << "the pending one runs first";
    EXPECT_TRUE(deadline.Ask(t0 + 5ms)) << "earlier";
    deadline.Passed(t0 + 4ms);
    EXPECT_TRUE(deadline.Pending()) << "not due yet";
    deadline.Passed(t0 + 5ms);
    EXPECT_FALSE(deadline.Pending());
    EXPECT_TRUE(deadline.Ask(t0 + 20ms));
}

}  // namespace
}  // namespace rpma::provider::tcp
