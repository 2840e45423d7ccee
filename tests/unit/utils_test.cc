#include <gtest/gtest.h>

#include "librpma.h"

namespace {

TEST(ConnEvent2Str, NamesEveryEvent) {
    EXPECT_STREQ(rpma_utils_conn_event_2str(RPMA_CONN_UNDEFINED), "Undefined connection event");
    EXPECT_STREQ(rpma_utils_conn_event_2str(RPMA_CONN_ESTABLISHED), "Connection established");
    EXPECT_STREQ(rpma_utils_conn_event_2str(RPMA_CONN_CLOSED), "Connection closed");
    EXPECT_STREQ(rpma_utils_conn_event_2str(RPMA_CONN_LOST), "Connection lost");
    EXPECT_STREQ(rpma_utils_conn_event_2str(RPMA_CONN_REJECTED), "Connection rejected");
    EXPECT_STREQ(rpma_utils_conn_event_2str(RPMA_CONN_UNREACHABLE), "Connection unreachable");
}

TEST(ConnEvent2Str, ValuesOutsideTheEnumAreUnsupported) {
    for (int value : {-2, 5, 100})
        EXPECT_STREQ(rpma_utils_conn_event_2str(static_cast<enum rpma_conn_event>(value)),
                     "Unsupported connection event")
            << value;
}

}  // namespace
