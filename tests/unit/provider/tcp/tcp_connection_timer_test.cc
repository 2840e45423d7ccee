// ConnectionTimer (tcp_connection_timer.h) in a real progress engine: it
// fires once for the purpose it was armed for, re-arming replaces the
// purpose, disarming touches only its own, and a closed timer fires no more.
#include "rpma_core/src/provider/tcp/tcp_connection_timer.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <vector>

namespace rpma::provider::tcp {
namespace {

using Purpose = ConnectionTimer::Purpose;

// What the connection does: on the timer's fd, Fire under its lock.
class Owner : public EventHandler {
  public:
    void OnEvents(int fd, uint32_t) override {
        std::lock_guard lock(mu);
        if (timer.Owns(fd))
            fired.push_back(timer.Fire());
        changed.notify_all();
    }
    // Waits (bounded) until `count` firings were seen.
    bool WaitFired(size_t count) {
        std::unique_lock lock(mu);
        return changed.wait_for(lock, std::chrono::seconds(5),
                                [&] { return fired.size() >= count; });
    }

    std::mutex mu;
    std::condition_variable changed;
    ConnectionTimer timer;
    std::vector<Purpose> fired;
};

class ConnectionTimerTest : public ::testing::Test {
  protected:
    void SetUp() override {
        std::lock_guard lock(owner_->mu);
        ASSERT_EQ(owner_->timer.Ensure(engine_, owner_), 0);
        ASSERT_EQ(owner_->timer.Ensure(engine_, owner_), 0) << "once";
    }
    void TearDown() override {
        std::lock_guard lock(owner_->mu);
        owner_->timer.Close(engine_);
    }

    ProgressEngine engine_;
    std::shared_ptr<Owner> owner_ = std::make_shared<Owner>();
};

TEST_F(ConnectionTimerTest, FiresOnceForItsPurpose) {
    {
        std::lock_guard lock(owner_->mu);
        owner_->timer.Arm(Purpose::kHandshake, 0);
        EXPECT_EQ(owner_->timer.Armed(), Purpose::kHandshake);
    }
    ASSERT_TRUE(owner_->WaitFired(1));
    std::lock_guard lock(owner_->mu);
    EXPECT_EQ(owner_->fired[0], Purpose::kHandshake);
    EXPECT_EQ(owner_->timer.Armed(), Purpose::kNone);
}

TEST_F(ConnectionTimerTest, ArmingAgainReplacesThePurpose) {
    {
        std::lock_guard lock(owner_->mu);
        owner_->timer.Arm(Purpose::kConnect, 60000);
        owner_->timer.Arm(Purpose::kLinger, 0);
    }
    ASSERT_TRUE(owner_->WaitFired(1));
    std::lock_guard lock(owner_->mu);
    EXPECT_EQ(owner_->fired[0], Purpose::kLinger);
}

TEST_F(ConnectionTimerTest, DisarmingTouchesOnlyItsOwnPurpose) {
    std::unique_lock lock(owner_->mu);
    owner_->timer.Arm(Purpose::kReceiverNotReady, 60000);
    owner_->timer.Disarm(Purpose::kHandshake);
    EXPECT_EQ(owner_->timer.Armed(), Purpose::kReceiverNotReady);
    owner_->timer.Disarm(Purpose::kReceiverNotReady);
    EXPECT_EQ(owner_->timer.Armed(), Purpose::kNone);
    // Armed again, it fires for the new purpose only.
    owner_->timer.Arm(Purpose::kConnect, 0);
    lock.unlock();
    ASSERT_TRUE(owner_->WaitFired(1));
    lock.lock();
    ASSERT_EQ(owner_->fired.size(), 1u);
    EXPECT_EQ(owner_->fired[0], Purpose::kConnect);
}

TEST(ConnectionTimer, NothingBeforeEnsure) {
    ConnectionTimer timer;
    timer.Arm(Purpose::kConnect, 0);
    EXPECT_EQ(timer.Armed(), Purpose::kNone);
    EXPECT_FALSE(timer.Owns(0));
}

}  // namespace
}  // namespace rpma::provider::tcp
