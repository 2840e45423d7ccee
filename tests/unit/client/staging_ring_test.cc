// The staging ring's allocator: extents are handed out oldest first, never
// overlap one still in use, and come back only once their work request
// completed.
#include "staging_ring.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <random>

namespace rpma::client {
namespace {

constexpr size_t kPage = StagingRing::kPage;

TEST(StagingRing, OneAtATimeReusesTheSamePages) {
    StagingRing ring;
    uint64_t completed = 0;
    auto done = [&](uint64_t seq) { return seq <= completed; };
    for (uint64_t seq = 1; seq <= 100; ++seq) {
        auto at = ring.Take(4096, seq, done);
        ASSERT_TRUE(at.has_value());
        EXPECT_EQ(*at, 0u);
        completed = seq;
    }
}

TEST(StagingRing, ManyInFlightGetDistinctPages) {
    StagingRing ring;
    auto never = [](uint64_t) { return false; };
    // A 4 KiB write holds one page: the whole ring's worth fit at once.
    for (uint64_t seq = 1; seq <= StagingRing::kBytes / kPage; ++seq) {
        auto at = ring.Take(100, seq, never);
        ASSERT_TRUE(at.has_value()) << seq;
        EXPECT_EQ(*at, (seq - 1) * kPage);
    }
    EXPECT_FALSE(ring.Take(1, 9999, never).has_value());
    EXPECT_EQ(ring.Oldest(), 1u);
}

TEST(StagingRing, RefusesWhatNoExtentHolds) {
    StagingRing ring;
    auto never = [](uint64_t) { return false; };
    EXPECT_FALSE(ring.Take(0, 1, never).has_value());
    EXPECT_FALSE(ring.Take(StagingRing::kMaxExtent + 1, 1, never).has_value());
    EXPECT_TRUE(ring.Take(StagingRing::kMaxExtent, 1, never).has_value());
}

TEST(StagingRing, WrapsPastTheEndOnlyIntoReclaimedSpace) {
    StagingRing ring;
    uint64_t completed = 0;
    auto done = [&](uint64_t seq) { return seq <= completed; };
    const size_t big = StagingRing::kMaxExtent;
    // Seven 1 MiB extents and most of the eighth: 4 KiB left at the end.
    for (uint64_t seq = 1; seq <= 7; ++seq)
        ASSERT_TRUE(ring.Take(big, seq, done).has_value());
    ASSERT_EQ(ring.Take(big - kPage, 8, done), 7 * big);
    // Nothing before the oldest is free: 8 KiB fits nowhere.
    EXPECT_FALSE(ring.Take(2 * kPage, 9, done).has_value());
    // The first extent completes: the next one wraps to the start.
    completed = 1;
    EXPECT_EQ(ring.Take(2 * kPage, 9, done), 0u);
    // 4 KiB at the end is skipped, not used, after a wrap: the free space
    // is now [8 KiB, 1 MiB).
    EXPECT_EQ(ring.Take(big - 2 * kPage, 10, done), 2 * kPage);
    EXPECT_FALSE(ring.Take(1, 11, done).has_value());
}

// Random sizes and completions: no extent handed out overlaps one in use,
// and each lies inside the ring.
TEST(StagingRing, NeverOverlapsAnExtentInUse) {
    StagingRing ring;
    std::mt19937 random(7);
    uint64_t completed = 0, seq = 0;
    auto done = [&](uint64_t s) { return s <= completed; };
    std::map<uint64_t, std::pair<size_t, size_t>> in_use;  // seq -> [begin, end)
    for (int round = 0; round < 20000; ++round) {
        if (random() % 3 == 0 && completed < seq)
            completed += 1 + random() % (seq - completed);
        while (!in_use.empty() && in_use.begin()->first <= completed)
            in_use.erase(in_use.begin());
        const size_t length =
            1 + random() % (random() % 4 == 0 ? StagingRing::kMaxExtent : 3 * kPage);
        auto at = ring.Take(length, seq + 1, done);
        if (!at)
            continue;
        ++seq;
        const size_t end = *at + length;
        ASSERT_LE(end, StagingRing::kBytes);
        ASSERT_EQ(*at % kPage, 0u);
        for (const auto &[s, extent] : in_use)
            ASSERT_TRUE(end <= extent.first || extent.second <= *at)
                << "extent of seq " << seq << " overlaps seq " << s;
        in_use[seq] = {*at, end};
    }
    EXPECT_GT(seq, 1000u);
}

}  // namespace
}  // namespace rpma::client
