// The client's operation arithmetic: ranges, chunks, a batch's covering
// range, the quorum verdict.
#include "plan.h"

#include <gtest/gtest.h>

namespace rpma::client {
namespace {

TEST(InRange, AcceptsRangesInsideAndRefusesOverflowAndOverrun) {
    EXPECT_TRUE(InRange(0, 4096, 4096));
    EXPECT_TRUE(InRange(4096, 0, 4096));
    EXPECT_FALSE(InRange(4096, 1, 4096));
    EXPECT_FALSE(InRange(4097, 0, 4096));
    EXPECT_FALSE(InRange(1, UINT64_MAX, 4096));  // offset + length wraps
}

TEST(Chunks, CutsAtTheChunkSizeAndKeepsBufferOffsets) {
    const auto pieces = Chunks(100, 2500, 1000);
    ASSERT_EQ(pieces.size(), 3u);
    EXPECT_EQ(pieces[0].offset, 100u);
    EXPECT_EQ(pieces[1].offset, 1100u);
    EXPECT_EQ(pieces[1].skip, 1000u);
    EXPECT_EQ(pieces[2].length, 500u);
    EXPECT_TRUE(Chunks(0, 0, 1000).empty());
}

TEST(Covering, SpansEveryNonEmptyRange) {
    const Span c = Covering({{4096, 10}, {0, 0}, {100, 50}});
    EXPECT_EQ(c.offset, 100u);
    EXPECT_EQ(c.length, 4006u);
    EXPECT_EQ(Covering({}).length, 0u);
}

TEST(JoinsGroup, NeighboursJoinScatteredRangesDoNot) {
    constexpr uint64_t kSlack = 64 << 10;
    // A log's next append, before or after, overlapping or not.
    EXPECT_TRUE(JoinsGroup({0, 8192}, 8192, {8192, 4096}, kSlack));
    EXPECT_TRUE(JoinsGroup({8192, 8192}, 8192, {0, 4096}, kSlack));
    EXPECT_TRUE(JoinsGroup({0, 8192}, 8192, {4096, 4096}, kSlack));
    // A gap up to the slack.
    EXPECT_TRUE(JoinsGroup({0, 4096}, 4096, {4096 + kSlack, 4096}, kSlack));
    EXPECT_FALSE(JoinsGroup({0, 4096}, 4096, {4096 + kSlack + 1, 4096}, kSlack));
    // The slack counts once for the whole group: gaps add up.
    EXPECT_FALSE(JoinsGroup({0, 4096 + kSlack + 4096}, 8192, {2 * kSlack + 8192, 4096}, kSlack));
    // Far apart (a region's two ends).
    EXPECT_FALSE(JoinsGroup({0, 4096}, 4096, {uint64_t{1} << 30, 4096}, kSlack));
}

TEST(QuorumVerdict, DoneWaitingOrLost) {
    EXPECT_EQ(QuorumVerdict(2, 1, 2), Verdict::kDone);
    EXPECT_EQ(QuorumVerdict(1, 1, 2), Verdict::kWaiting);
    // One confirmed, the other two failed: two cannot be reached any more.
    EXPECT_EQ(QuorumVerdict(1, 0, 2), Verdict::kLost);
    EXPECT_EQ(QuorumVerdict(0, 3, 3), Verdict::kWaiting);
}

TEST(InSyncVerdict, WaitsForEveryInSyncMember) {
    // Two of three confirmed, a quorum of 2: the third still in sync is
    // waited for (until it confirms or is marked failed).
    EXPECT_EQ(InSyncVerdict(2, 1, 2), Verdict::kWaiting);
    EXPECT_EQ(InSyncVerdict(3, 0, 2), Verdict::kDone);
    // The third marked failed (out of both counts): two are enough.
    EXPECT_EQ(InSyncVerdict(2, 0, 2), Verdict::kDone);
    EXPECT_EQ(InSyncVerdict(1, 0, 2), Verdict::kLost);
    EXPECT_EQ(InSyncVerdict(0, 1, 2), Verdict::kLost);
    EXPECT_EQ(InSyncVerdict(0, 3, 3), Verdict::kWaiting);
}

TEST(InSyncVerdict, AsQuorumVerdictWhenTheQuorumIsEveryMember) {
    for (size_t members = 1; members <= 5; ++members)
        for (size_t confirmed = 0; confirmed <= members; ++confirmed)
            for (size_t undecided = 0; confirmed + undecided <= members; ++undecided)
                EXPECT_EQ(InSyncVerdict(confirmed, undecided, members),
                          QuorumVerdict(confirmed, undecided, members))
                    << members << " " << confirmed << " " << undecided;
}

}  // namespace
}  // namespace rpma::client
