#include "client/rpmactl/sizes.h"

#include <gtest/gtest.h>

namespace rpmactl {
namespace {

TEST(ParseSize, ReadsPlainCountsAndBinarySuffixesInAnyCase) {
    EXPECT_EQ(ParseSize("4096"), 4096u);
    EXPECT_EQ(ParseSize("4k"), 4096u);
    EXPECT_EQ(ParseSize("64KiB"), 64u << 10);
    EXPECT_EQ(ParseSize("1MiB"), 1u << 20);
    EXPECT_EQ(ParseSize("2g"), 2ull << 30);
    EXPECT_EQ(ParseSize("1TiB"), 1ull << 40);
    EXPECT_EQ(ParseSize("12B"), 12u);
}

TEST(ParseSize, RefusesGarbageNegativesAndOverflow) {
    EXPECT_EQ(ParseSize(""), std::nullopt);
    EXPECT_EQ(ParseSize("MiB"), std::nullopt);
    EXPECT_EQ(ParseSize("-1"), std::nullopt);
    EXPECT_EQ(ParseSize("1.5M"), std::nullopt);
    EXPECT_EQ(ParseSize("1 MiB"), std::nullopt);
    EXPECT_EQ(ParseSize("4X"), std::nullopt);
    EXPECT_EQ(ParseSize("18446744073709551615"), 18446744073709551615ull);
    EXPECT_EQ(ParseSize("18446744073709551616"), std::nullopt);
    EXPECT_EQ(ParseSize("16777216TiB"), std::nullopt);
}

TEST(FormatSize, PicksTheLargestUnitBelow1024) {
    EXPECT_EQ(FormatSize(0), "0 B");
    EXPECT_EQ(FormatSize(1023), "1023 B");
    EXPECT_EQ(FormatSize(4096), "4.0 KiB");
    EXPECT_EQ(FormatSize(3ull << 29), "1.5 GiB");
}

TEST(ParseRegionAddress, SplitsTheOffsetAfterTheLastColon) {
    std::string error;
    auto plain = ParseRegionAddress("logs", &error);
    ASSERT_TRUE(plain);
    EXPECT_EQ(plain->region, "logs");
    EXPECT_EQ(plain->offset, 0u);
    auto with_offset = ParseRegionAddress("logs:1MiB", &error);
    ASSERT_TRUE(with_offset);
    EXPECT_EQ(with_offset->region, "logs");
    EXPECT_EQ(with_offset->offset, 1u << 20);
}

TEST(ParseRegionAddress, SaysWhatIsWrong) {
    std::string error;
    EXPECT_FALSE(ParseRegionAddress(":4096", &error));
    EXPECT_NE(error.find("names no region"), std::string::npos) << error;
    EXPECT_FALSE(ParseRegionAddress("logs:abc", &error));
    EXPECT_NE(error.find("'abc' is not an offset"), std::string::npos) << error;
}

}  // namespace
}  // namespace rpmactl
