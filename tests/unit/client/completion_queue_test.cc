#include "completion_queue.h"

#include <gtest/gtest.h>
#include <poll.h>

#include <cstdint>
#include <thread>
#include <vector>

namespace rpma::client {
namespace {

bool Readable(int fd) {
    pollfd p{fd, POLLIN, 0};
    return poll(&p, 1, 0) == 1;
}

CompletionQueue::Entry Entry(uintptr_t i) {
    return {reinterpret_cast<void *>(i), 1, 0, ""};
}

TEST(CompletionQueueTest, FdIsReadableExactlyWhileEntriesWait) {
    CompletionQueue queue;
    // Entries queued before the fd was made: readable from the start.
    queue.Push(Entry(1));
    queue.Push(Entry(2));
    const int fd = queue.Fd();
    ASSERT_GE(fd, 0);
    EXPECT_EQ(queue.Fd(), fd) << "one fd per queue";
    EXPECT_TRUE(Readable(fd));
    std::vector<CompletionQueue::Entry> got;
    queue.Take(1, &got);
    EXPECT_TRUE(Readable(fd)) << "one still waits";
    queue.Take(0, &got);
    EXPECT_EQ(got.size(), 1u);
    queue.Take(8, &got);
    EXPECT_FALSE(Readable(fd));
    queue.Take(8, &got);
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(got[0].user_data, reinterpret_cast<void *>(1));
    EXPECT_EQ(got[1].user_data, reinterpret_cast<void *>(2));
    queue.Push(Entry(3));
    EXPECT_TRUE(Readable(fd));
    queue.Take(8, &got);
    EXPECT_FALSE(Readable(fd));
}

// A producer thread pushes while the consumer sleeps in poll(2): every
// wake-up finds something, nothing is lost, order is kept.
TEST(CompletionQueueTest, ConsumerWokenByTheFdGetsEveryEntryInOrder) {
    constexpr uintptr_t kCount = 20000;
    CompletionQueue queue;
    const int fd = queue.Fd();
    ASSERT_GE(fd, 0);
    std::thread producer([&] {
        for (uintptr_t i = 0; i < kCount; ++i)
            queue.Push(Entry(i));
    });
    std::vector<CompletionQueue::Entry> got;
    size_t empty_wakeups = 0;
    while (got.size() < kCount) {
        pollfd p{fd, POLLIN, 0};
        if (poll(&p, 1, 10000) != 1) {
            ADD_FAILURE() << "not woken with " << got.size() << " of " << kCount;
            break;
        }
        const size_t before = got.size();
        queue.Take(64, &got);
        empty_wakeups += got.size() == before;
    }
    producer.join();
    EXPECT_EQ(empty_wakeups, 0u) << "the fd was readable with nothing queued";
    ASSERT_EQ(got.size(), kCount);
    for (uintptr_t i = 0; i < kCount; ++i)
        ASSERT_EQ(got[i].user_data, reinterpret_cast<void *>(i));
    EXPECT_FALSE(Readable(fd));
}

}  // namespace
}  // namespace rpma::client
