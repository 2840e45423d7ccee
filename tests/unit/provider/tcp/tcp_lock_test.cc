// The data path's lock: mutual exclusion under contention (threads that
// sleep on the futex and are woken), and try_lock.
#include "rpma_core/src/provider/tcp/tcp_lock.h"

#include <gtest/gtest.h>

#include <mutex>
#include <thread>
#include <vector>

namespace rpma::provider::tcp {
namespace {

TEST(Lock, KeepsContendingThreadsOut) {
    Lock lock;
    // Not atomic: only the lock keeps the increments from being lost.
    long counter = 0;
    constexpr int kThreads = 4;
    constexpr int kIncrements = 200000;
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&] {
            for (int i = 0; i < kIncrements; ++i) {
                std::lock_guard guard(lock);
                ++counter;
            }
        });
    }
    for (std::thread &thread : threads)
        thread.join();
    EXPECT_EQ(counter, long{kThreads} * kIncrements);
}

TEST(Lock, SleeperIsWokenWhenTheHolderUnlocks) {
    Lock lock;
    lock.lock();
    bool entered = false;
    std::thread waiter([&] {
        std::lock_guard guard(lock);  // sleeps on the futex
        entered = true;
    });
    // The waiter cannot get in while the lock is held; whether it is asleep
    // yet or not, unlocking lets it in.
    EXPECT_FALSE(lock.try_lock());
    lock.unlock();
    waiter.join();
    EXPECT_TRUE(entered);
    EXPECT_TRUE(lock.try_lock());
    EXPECT_FALSE(lock.try_lock());
    lock.unlock();
}

}  // namespace
}  // namespace rpma::provider::tcp
