#include "util/constant_time.h"

#include <gtest/gtest.h>

#include <string>

namespace rpma::util {
namespace {

TEST(ConstantTimeEquals, ComparesEveryByteAndTheLength) {
    const std::string token = "0123456789abcdef";
    EXPECT_TRUE(ConstantTimeEquals(token, token));
    EXPECT_TRUE(ConstantTimeEquals("", ""));
    for (size_t i = 0; i < token.size(); ++i) {
        std::string other = token;
        other[i] ^= 1;
        EXPECT_FALSE(ConstantTimeEquals(token, other)) << i;
    }
    EXPECT_FALSE(ConstantTimeEquals(token, token.substr(0, 15)));
    EXPECT_FALSE(ConstantTimeEquals(token, token + '\0'));
    EXPECT_FALSE(ConstantTimeEquals("", std::string(1, '\0')));
}

}  // namespace
}  // namespace rpma::util
