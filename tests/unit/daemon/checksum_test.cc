// ChecksumRegion's arithmetic: which ranges are refused, and that each
// extent's XXH3-128 comes out high 64 bits first, big-endian.
#include "daemon/checksum.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace rpmad {
namespace {

using ::testing::HasSubstr;

std::string BigEndian128(XXH128_hash_t hash) {
    std::string out;
    for (uint64_t half : {hash.high64, hash.low64})
        for (int shift = 56; shift >= 0; shift -= 8)
            out.push_back(static_cast<char>((half >> shift) & 0xFF));
    return out;
}

TEST(ChecksumTest, EachExtentIsXxh3Of128BitsBigEndianAndTheLastMayBeShort) {
    std::vector<std::byte> bytes(5 * 4096 + 100);
    for (size_t i = 0; i < bytes.size(); ++i)
        bytes[i] = static_cast<std::byte>(i * 7 + (i >> 9));
    // From the second extent to the end: 4 whole extents and 100 bytes.
    const std::string sums = ChecksumExtents(bytes, 4096, bytes.size() - 4096, 4096);
    ASSERT_EQ(sums.size(), 5 * kChecksumBytes);
    for (size_t i = 0; i < 5; ++i) {
        const size_t size = i < 4 ? 4096 : 100;
        EXPECT_EQ(sums.substr(i * 16, 16),
                  BigEndian128(XXH3_128bits(bytes.data() + 4096 * (i + 1), size)))
            << "extent " << i;
    }
    // xxHash's published value for no bytes: 99aa06d3014798d8 6001c324468d497f.
    const std::string empty = BigEndian128(XXH3_128bits(nullptr, 0));
    EXPECT_EQ(static_cast<unsigned char>(empty[0]), 0x99);
    EXPECT_EQ(static_cast<unsigned char>(empty[15]), 0x7f);
}

TEST(ChecksumTest, BadRangesAreRefusedSayingWhichRule) {
    constexpr uint64_t kSize = 1 << 20;
    struct Case {
        uint64_t offset, length, extent;
        const char *message;
    };
    const Case cases[] = {
        {0, kSize, 0, "not a power of two"},
        {0, kSize, 2048, "not a power of two"},
        {0, kSize, 4096 * 3, "not a power of two"},
        {0, kSize, 2ull << 30, "not a power of two"},
        {4096, kSize - 4096, 8192, "not a multiple of extent_size"},
        {0, 0, 4096, "length is 0"},
        {0, kSize + 1, 4096, "outside the region"},
        {kSize, 4096, 4096, "outside the region"},
        {4096, UINT64_MAX, 4096, "outside the region"},
        {UINT64_MAX - 4095, 4096, 4096, "outside the region"},
    };
    for (const Case &c : cases) {
        Status status = ValidateChecksumRange(kSize, c.offset, c.length, c.extent);
        EXPECT_EQ(status.code(), StatusCode::kInvalidArgument)
            << c.offset << "+" << c.length << "/" << c.extent;
        EXPECT_THAT(status.message(), HasSubstr(c.message));
    }
    // 65536 extents pass, one more does not.
    const uint64_t big = 65537ull * 4096;
    EXPECT_TRUE(ValidateChecksumRange(big, 0, 65536ull * 4096, 4096).ok());
    EXPECT_THAT(ValidateChecksumRange(big, 0, big, 4096).message(), HasSubstr("65537 extents"));
    EXPECT_TRUE(ValidateChecksumRange(kSize, 0, kSize, 1ull << 30).ok());
    EXPECT_TRUE(ValidateChecksumRange(kSize, 0, 1, 4096).ok());
}

}  // namespace
}  // namespace rpmad
