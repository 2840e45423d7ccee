#include "client/rpmactl/differences.h"

#include <gtest/gtest.h>

namespace rpmactl {
namespace {

constexpr uint64_t kMiB = 1 << 20;

// 16-byte checksums, one per character of `pattern` ('a' -> 16 x 'a').
std::string Sums(const std::string &pattern) {
    std::string sums;
    for (char c : pattern)
        sums.append(16, c);
    return sums;
}

std::vector<std::string_view> Views(const std::vector<std::string> &sums) {
    return std::vector<std::string_view>(sums.begin(), sums.end());
}

TEST(ExtentComparer, IdenticalReplicasHaveNoRanges) {
    ExtentComparer comparer(8 * kMiB, kMiB, {true, true, true}, {true, true, true});
    const std::vector<std::string> sums = {Sums("abcdefgh"), Sums("abcdefgh"), Sums("abcdefgh")};
    comparer.Add(0, Views(sums));
    EXPECT_TRUE(comparer.Ranges().empty());
    EXPECT_EQ(comparer.differing_extents(), 0u);
    EXPECT_EQ(comparer.compared_bytes(), 8 * kMiB);
}

// A replica that missed writes from extent 2 on: one range, whatever its
// length, naming the replicas that hold the in-sync majority's bytes.
TEST(ExtentComparer, CoalescesAdjacentExtentsOfTheSameReplicas) {
    ExtentComparer comparer(8 * kMiB, kMiB, {true, true, false}, {true, true, true});
    const std::vector<std::string> sums = {Sums("abcdefgh"), Sums("abcdefgh"), Sums("abXYZWgh")};
    comparer.Add(0, Views(sums));
    ASSERT_EQ(comparer.Ranges().size(), 1u);
    const DifferingRange &range = comparer.Ranges()[0];
    EXPECT_EQ(range.offset, 2 * kMiB);
    EXPECT_EQ(range.length, 4 * kMiB);
    EXPECT_EQ(range.differing, std::vector<size_t>({2}));
    EXPECT_EQ(range.agreeing, std::vector<size_t>({0, 1}));
    EXPECT_FALSE(range.no_majority);
    EXPECT_EQ(range.differing_bytes.size(), 1u);
    EXPECT_EQ(comparer.differing_extents(), 4u);
}

// Where another replica differs too, or a gap of identical extents comes,
// a new range starts; ranges run on across calls.
TEST(ExtentComparer, SplitsWhereTheDifferingReplicasChangeAndJoinsAcrossCalls) {
    ExtentComparer comparer(10 * kMiB, kMiB, {true, true, true}, {true, true, true});
    const std::vector<std::string> first = {Sums("aaaaa"), Sums("aaXXX"), Sums("aaaYY")};
    comparer.Add(0, Views(first));
    const std::vector<std::string> second = {Sums("aaaaa"), Sums("Xaaaa"), Sums("aaaaa")};
    comparer.Add(5 * kMiB, Views(second));
    const auto &ranges = comparer.Ranges();
    ASSERT_EQ(ranges.size(), 3u);
    EXPECT_EQ(ranges[0].offset, 2 * kMiB);
    EXPECT_EQ(ranges[0].length, kMiB);
    EXPECT_EQ(ranges[0].differing, std::vector<size_t>({1}));
    EXPECT_EQ(ranges[1].offset, 3 * kMiB);
    EXPECT_EQ(ranges[1].length, 2 * kMiB);
    EXPECT_EQ(ranges[1].differing, std::vector<size_t>({1, 2}));
    EXPECT_EQ(ranges[1].agreeing, std::vector<size_t>({0}));
    // Extent 5, the second call's first: replica 1 alone differs there, a
    // set of replicas other than the range before it's.
    EXPECT_EQ(ranges[2].offset, 5 * kMiB);
    EXPECT_EQ(ranges[2].length, kMiB);
    EXPECT_EQ(ranges[2].differing, std::vector<size_t>({1}));
}

TEST(ExtentComparer, JoinsARangeThatRunsAcrossCalls) {
    ExtentComparer comparer(4 * kMiB, kMiB, {true, true}, {true, true});
    const std::vector<std::string> first = {Sums("aa"), Sums("aX")};
    const std::vector<std::string> second = {Sums("aa"), Sums("XX")};
    comparer.Add(0, Views(first));
    comparer.Add(2 * kMiB, Views(second));
    ASSERT_EQ(comparer.Ranges().size(), 1u);
    EXPECT_EQ(comparer.Ranges()[0].offset, kMiB);
    EXPECT_EQ(comparer.Ranges()[0].length, 3 * kMiB);
}

// The stale replica's checksums never decide, even when it is in the
// majority of all replicas; without an in-sync majority the range says so.
TEST(ExtentComparer, OnlyInSyncReplicasDecideTheReference) {
    ExtentComparer comparer(2 * kMiB, kMiB, {true, false, false}, {true, true, true});
    const std::vector<std::string> sums = {Sums("ab"), Sums("aX"), Sums("aX")};
    comparer.Add(0, Views(sums));
    ASSERT_EQ(comparer.Ranges().size(), 1u);
    EXPECT_EQ(comparer.Ranges()[0].differing, std::vector<size_t>({1, 2}));
    EXPECT_EQ(comparer.Ranges()[0].agreeing, std::vector<size_t>({0}));

    ExtentComparer split(kMiB, kMiB, {true, true, false}, {true, true, true});
    const std::vector<std::string> disagree = {Sums("a"), Sums("b"), Sums("b")};
    split.Add(0, Views(disagree));
    ASSERT_EQ(split.Ranges().size(), 1u);
    EXPECT_TRUE(split.Ranges()[0].no_majority);
    EXPECT_EQ(split.Ranges()[0].differing, std::vector<size_t>({1, 2}));
}

// A replica not reached is neither differing nor agreeing; the last extent
// is only as long as the region.
TEST(ExtentComparer, SkipsReplicasNotComparedAndEndsAtTheRegionsEnd) {
    ExtentComparer comparer(kMiB + 4096, kMiB, {true, true, true}, {true, false, true});
    const std::vector<std::string> sums = {Sums("aa"), "", Sums("aX")};
    comparer.Add(0, Views(sums));
    ASSERT_EQ(comparer.Ranges().size(), 1u);
    EXPECT_EQ(comparer.Ranges()[0].offset, kMiB);
    EXPECT_EQ(comparer.Ranges()[0].length, 4096u);
    EXPECT_EQ(comparer.Ranges()[0].agreeing, std::vector<size_t>({0}));
    EXPECT_EQ(comparer.compared_bytes(), kMiB + 4096);
}

TEST(Differences, CountsDifferingBytes) {
    std::string a(100, 'a'), b(100, 'a');
    EXPECT_EQ(CountDifferingBytes(a, b), 0u);
    b[0] = b[50] = b[99] = 'b';
    EXPECT_EQ(CountDifferingBytes(a, b), 3u);
}

TEST(Differences, FormatsOffsetsAndRangesAsPeopleReadThem) {
    EXPECT_EQ(FormatOffset(0), "0");
    EXPECT_EQ(FormatOffset(80 * kMiB), "80 MiB");
    EXPECT_EQ(FormatOffset(3ull << 30), "3 GiB");
    EXPECT_EQ(FormatOffset(12288), "12 KiB");
    EXPECT_EQ(FormatOffset(12345), "12345");
    EXPECT_EQ(FormatRange(80 * kMiB, 110 * kMiB), "[80 MiB, 190 MiB)");
}

}  // namespace
}  // namespace rpmactl
