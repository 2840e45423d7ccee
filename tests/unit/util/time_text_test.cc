#include "util/time_text.h"

#include <gtest/gtest.h>

namespace rpma::util {
namespace {

TEST(FormatUnixTime, IsUtcAndDashForZero) {
    EXPECT_EQ(FormatUnixTime(0), "-");
    EXPECT_EQ(FormatUnixTime(86400), "1970-01-02 00:00:00 UTC");
}

}  // namespace
}  // namespace rpma::util
