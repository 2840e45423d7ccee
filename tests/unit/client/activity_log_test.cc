// The activity log's rules: recorded only when a new extent becomes hot,
// the least recently used unpinned extent dropped beyond the capacity,
// pinned extents kept.
#include "client/src/activity_log.h"

#include <gtest/gtest.h>

namespace rpma::client {
namespace {

using Extents = std::vector<uint64_t>;

TEST(ActivityLogTest, OnlyANewExtentNeedsRecording) {
    ActivityLog log(100, 4);
    EXPECT_FALSE(log.Hot(0, 10));
    EXPECT_EQ(log.With(0, 10), Extents({0}));
    log.Set(log.With(0, 10));
    // Every write inside extent 0, however many, is hot now.
    for (uint64_t at = 0; at < 100; at += 7)
        EXPECT_TRUE(log.Hot(at, 1)) << at;
    // A write across a boundary touches both extents.
    EXPECT_FALSE(log.Hot(95, 10));
    EXPECT_EQ(log.With(95, 10), Extents({0, 1}));
}

TEST(ActivityLogTest, TheLeastRecentlyUsedExtentIsDroppedBeyondTheCapacity) {
    ActivityLog log(100, 3);
    log.Set({0, 1, 2});
    ASSERT_TRUE(log.Hot(0, 1));  // 0 used last: 1 is the coldest now
    ASSERT_TRUE(log.Hot(200, 1));
    EXPECT_EQ(log.With(300, 1), Extents({0, 2, 3}));
    log.Set(log.With(300, 1));
    EXPECT_EQ(log.Extents(), Extents({0, 2, 3}));
    EXPECT_FALSE(log.Hot(100, 1));
}

TEST(ActivityLogTest, APinnedExtentIsNeverDropped) {
    ActivityLog log(100, 2);
    log.Set({0, 1});
    log.Pin(0, 1);
    ASSERT_TRUE(log.Hot(0, 1));
    ASSERT_TRUE(log.Hot(100, 1));
    ASSERT_TRUE(log.Hot(0, 1));  // 1 is the most recently used, 0 pinned
    EXPECT_EQ(log.With(500, 1), Extents({0, 5}));
    // Every extent pinned: the log grows past its capacity instead.
    log.Set({0, 1});
    log.Pin(100, 1);
    EXPECT_EQ(log.With(500, 1), Extents({0, 1, 5}));
}

TEST(ActivityLogTest, AWriteLargerThanTheCapacityKeepsAllItsExtents) {
    ActivityLog log(100, 2);
    log.Set({7});
    EXPECT_EQ(log.With(0, 400), Extents({0, 1, 2, 3}));
    EXPECT_EQ(log.With(0, 0), Extents({0, 7}));  // an empty range touches its offset's extent
}

}  // namespace
}  // namespace rpma::client
