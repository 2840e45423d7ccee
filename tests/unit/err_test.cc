#include <gtest/gtest.h>

#include <string>

#include "librpma.h"

namespace {

TEST(Err2Str, EveryErrorCodeHasItsOwnMessage) {
    EXPECT_STREQ(rpma_err_2str(0), "Success");
    EXPECT_STREQ(rpma_err_2str(RPMA_E_UNKNOWN), "Unknown error");
    EXPECT_STREQ(rpma_err_2str(RPMA_E_NOSUPP), "Not supported");
    EXPECT_STREQ(rpma_err_2str(RPMA_E_PROVIDER), "Provider error occurred");
    EXPECT_STREQ(rpma_err_2str(RPMA_E_NOMEM), "Out of memory");
    EXPECT_STREQ(rpma_err_2str(RPMA_E_INVAL), "Invalid argument");
    EXPECT_STREQ(rpma_err_2str(RPMA_E_NO_COMPLETION), "No next completion available");
    EXPECT_STREQ(rpma_err_2str(RPMA_E_NO_EVENT), "No next event available");
    EXPECT_STREQ(rpma_err_2str(RPMA_E_AGAIN), "Temporary error, try again");
    EXPECT_STREQ(rpma_err_2str(RPMA_E_SHARED_CHANNEL), "Completion channel is shared");
    EXPECT_STREQ(rpma_err_2str(RPMA_E_NOT_SHARED_CHNL), "Completion channel is not shared");
}

TEST(Err2Str, CodesOutsideTheApiAreUnknown) {
    for (int code : {1, -1, -99999, -100010, -2147483647 - 1, 2147483647})
        EXPECT_STREQ(rpma_err_2str(code), "Unknown error") << code;
}

}  // namespace
