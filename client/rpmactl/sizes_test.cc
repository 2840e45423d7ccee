#include "client/rpmactl/sizes.h"

#include <gtest/gtest.h>

namespace rpmactl {
namespace {

// rpmactl reads sizes as rpmad does (rpma::util::ParseSize, tested in
// //tests/unit/util): what is pinned here is that an argument's errors name
// it and say what to write.
TEST(ParseSizeArgument, RefusesDecimalUnitsNamingTheArgumentAndTheBinaryUnit) {
    std::string error;
    EXPECT_EQ(ParseSizeArgument("SIZE", "1GiB", &error), 1ull << 30);
    EXPECT_EQ(ParseSizeArgument("SIZE", "1G", &error), std::nullopt);
    EXPECT_EQ(error,
              "SIZE: \"1G\" is ambiguous (1000 or 1024 based?); write \"1GiB\" or the "
              "number of bytes");
    EXPECT_EQ(ParseSizeArgument("--extent", "4k", &error), std::nullopt);
    EXPECT_NE(error.find("--extent: \"4k\" is ambiguous"), std::string::npos) << error;
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
    EXPECT_NE(error.find("the offset after the colon: \"abc\" is not a size"), std::string::npos)
        << error;
}

}  // namespace
}  // namespace rpmactl
