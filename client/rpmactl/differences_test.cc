#include "client/rpmactl/differences.h"

#include <gtest/gtest.h>

namespace rpmactl {
namespace {

std::vector<std::byte> Bytes(size_t n, uint8_t value) {
    return std::vector<std::byte>(n, std::byte{value});
}

TEST(DifferenceFinder, IdenticalReplicasHaveNoRanges) {
    const auto a = Bytes(10000, 7);
    DifferenceFinder finder;
    finder.Compare(0, {a, a, a});
    EXPECT_TRUE(finder.Ranges().empty());
}

TEST(DifferenceFinder, ReportsEachRunAndTheReplicasThatDiffer) {
    const auto reference = Bytes(10000, 0);
    auto one = reference;
    auto two = reference;
    for (size_t i = 100; i < 110; ++i)
        one[i] = std::byte{1};
    two[105] = std::byte{2};   // inside replica 1's run
    two[9000] = std::byte{2};  // a run of its own, in another block
    DifferenceFinder finder;
    finder.Compare(4096, {reference, one, two});
    const std::vector<DifferingRange> expected = {{4196, 10, {1, 2}}, {13096, 1, {2}}};
    EXPECT_EQ(finder.Ranges(), expected);
}

TEST(DifferenceFinder, JoinsARangeThatRunsAcrossChunks) {
    const auto reference = Bytes(100, 0);
    auto other = reference;
    other[98] = other[99] = std::byte{1};
    auto next = reference;
    next[0] = std::byte{1};
    DifferenceFinder finder;
    finder.Compare(0, {reference, other});
    finder.Compare(100, {reference, next});
    const std::vector<DifferingRange> expected = {{98, 3, {1}}};
    EXPECT_EQ(finder.Ranges(), expected);
}

}  // namespace
}  // namespace rpmactl
