// The scenario suite's history checker on small histories made by hand:
// each check both passes and fails.
#include "tests/integration/cluster_history.h"

#include <gtest/gtest.h>

namespace rpma::testing {
namespace {

std::vector<Op> Parse(const std::string &log) {
    std::vector<Op> history;
    std::string error;
    EXPECT_TRUE(ParseHistory(log, &history, &error)) << error;
    return history;
}

// Slots 0 and 1 holding `v0` and `v1` (0: zeros).
std::vector<std::byte> Image(uint64_t v0, uint64_t v1, uint64_t seed = 7) {
    std::vector<std::byte> image;
    for (uint64_t slot = 0; slot < 2; ++slot) {
        const uint64_t v = slot == 0 ? v0 : v1;
        const auto block = v ? Block(slot, v, seed) : std::vector<std::byte>(kBlock);
        image.insert(image.end(), block.begin(), block.end());
    }
    return image;
}

TEST(ClusterHistoryTest, ABlockTellsItsVersionAndNothingElseParses) {
    EXPECT_EQ(VersionIn(Block(3, 9, 7), 3, 7), 9u);
    EXPECT_EQ(VersionIn(std::vector<std::byte>(kBlock), 3, 7), 0u);
    EXPECT_EQ(VersionIn(Block(3, 9, 7), 4, 7), std::nullopt);  // another slot's
    EXPECT_EQ(VersionIn(Block(3, 9, 8), 3, 7), std::nullopt);  // another seed's
    auto torn = Block(3, 9, 7);
    torn[2000] ^= std::byte{1};
    EXPECT_EQ(VersionIn(torn, 3, 7), std::nullopt);
}

TEST(ClusterHistoryTest, ParsingSkipsNotesAndRefusesABrokenOperation) {
    EXPECT_EQ(Parse("open epoch 2\ninvoke w 0 1\nack w 0 1\ninvoke r 0\nread r 0 1\n").size(), 4u);
    std::vector<Op> history;
    std::string error;
    EXPECT_FALSE(ParseHistory("invoke w 0\n", &history, &error));
    EXPECT_NE(error.find("line 1"), std::string::npos) << error;
}

TEST(ClusterHistoryTest, AReadOlderThanAnAcknowledgedWriteIsCaught) {
    // Read invoked after the ack of version 2: seeing 1 is stale.
    EXPECT_NE(CheckReads(Parse("invoke w 0 1\nack w 0 1\ninvoke w 0 2\nack w 0 2\n"
                               "invoke r 0\nread r 0 1\n")),
              "");
    // Read invoked before the ack of 2 (concurrent): 1 is fine, and so is 2.
    EXPECT_EQ(CheckReads(Parse("invoke w 0 1\nack w 0 1\ninvoke w 0 2\ninvoke r 0\n"
                               "ack w 0 2\nread r 0 1\ninvoke r 0\nread r 0 2\n")),
              "");
    // Another slot's ack does not count.
    EXPECT_EQ(CheckReads(Parse("invoke w 1 5\nack w 1 5\ninvoke r 0\nread r 0 0\n")), "");
    EXPECT_NE(CheckReads(Parse("invoke r 0\nread r 0 bad\n")), "");
}

TEST(ClusterHistoryTest, TheReplicasMustHoldTheLatestAcknowledgedOrALaterInvokedWrite) {
    const auto history = Parse(
        "invoke w 0 1\nack w 0 1\ninvoke w 0 2\nack w 0 2\n"
        "invoke w 1 3\n");  // 3 unacknowledged
    // 3 landed or not: both fine, if every replica agrees.
    EXPECT_EQ(CheckFinal(history, 2, 7, {Image(2, 3), Image(2, 3)}), "");
    EXPECT_EQ(CheckFinal(history, 2, 7, {Image(2, 0), Image(2, 0)}), "");
    // Replicas that differ on the unacknowledged write.
    EXPECT_NE(CheckFinal(history, 2, 7, {Image(2, 3), Image(2, 0)}), "");
    // An acknowledged write lost.
    EXPECT_NE(CheckFinal(history, 2, 7, {Image(1, 0), Image(1, 0)}), "");
    // A version never invoked, bytes of another seed.
    EXPECT_NE(CheckFinal(history, 2, 7, {Image(4, 0)}), "");
    EXPECT_NE(CheckFinal(history, 2, 7, {Image(2, 0, 8)}), "");
    EXPECT_NE(CheckFinal(history, 2, 7, {}), "");
}

}  // namespace
}  // namespace rpma::testing
