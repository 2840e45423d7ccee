#include "util/sizes.h"

#include <gtest/gtest.h>

namespace rpma::util {
namespace {

std::optional<uint64_t> Parse(std::string_view text, std::string *error = nullptr) {
    std::string ignored;
    return ParseSize(text, error ? error : &ignored);
}

TEST(ParseSize, ReadsBytesAndBinaryUnitsInAnyCase) {
    EXPECT_EQ(Parse("0"), 0u);
    EXPECT_EQ(Parse("4096"), 4096u);
    EXPECT_EQ(Parse("12B"), 12u);
    EXPECT_EQ(Parse("64KiB"), 64u << 10);
    EXPECT_EQ(Parse("1mib"), 1u << 20);
    EXPECT_EQ(Parse("2 GiB"), 2ull << 30);
    EXPECT_EQ(Parse("1TiB"), 1ull << 40);
    EXPECT_EQ(Parse("1PiB"), 1ull << 50);
    EXPECT_EQ(Parse("18446744073709551615"), 18446744073709551615ull);
}

TEST(ParseSize, RefusesDecimalUnitsAndSaysWhichBinaryOneToWrite) {
    for (const auto &[text, binary] : {std::pair{"1G", "1GiB"},
                                       {"4k", "4KiB"},
                                       {"64MB", "64MiB"},
                                       {"2t", "2TiB"},
                                       {"1PB", "1PiB"}}) {
        std::string error;
        EXPECT_EQ(Parse(text, &error), std::nullopt) << text;
        EXPECT_EQ(error, "\"" + std::string(text) +
                             "\" is ambiguous (1000 or 1024 based?); write \"" + binary +
                             "\" or the number of bytes");
    }
}

TEST(ParseSize, RefusesGarbageNegativesFractionsAndOverflowSayingWhatToWrite) {
    for (const char *text : {"", "MiB", "-1", "1.5MiB", "4X", "18446744073709551616", "16777216TiB",
                             "0x10", "1 GiB extra"}) {
        std::string error;
        EXPECT_EQ(Parse(text, &error), std::nullopt) << text;
        EXPECT_NE(error.find("write"), std::string::npos) << text << ": " << error;
    }
}

TEST(FormatSize, IsExactAndReadsBack) {
    EXPECT_EQ(FormatSize(0), "0");
    EXPECT_EQ(FormatSize(4097), "4097");
    EXPECT_EQ(FormatSize(4096), "4KiB");
    EXPECT_EQ(FormatSize(64ull << 30), "64GiB");
    EXPECT_EQ(FormatSize(3ull << 29), "1536MiB");
    for (uint64_t bytes : {0ull, 1ull, 4097ull, 1ull << 20, 3ull << 29, ~0ull})
        EXPECT_EQ(Parse(FormatSize(bytes)), bytes) << bytes;
}

TEST(FormatSizeRounded, PicksTheLargestUnitBelow1024) {
    EXPECT_EQ(FormatSizeRounded(0), "0 B");
    EXPECT_EQ(FormatSizeRounded(1023), "1023 B");
    EXPECT_EQ(FormatSizeRounded(4096), "4.0 KiB");
    EXPECT_EQ(FormatSizeRounded(3ull << 29), "1.5 GiB");
}

}  // namespace
}  // namespace rpma::util
