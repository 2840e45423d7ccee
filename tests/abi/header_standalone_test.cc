// Our librpma.h must compile on its own as C++20 (-Wall -Wextra -pedantic
// -Werror), and C and C++ must agree on its one public struct. Included by its
// workspace path: the api_header target would put it behind -isystem, which
// silences its warnings.
#include "rpma_core/include/librpma.h"

#include <gtest/gtest.h>

extern "C" size_t rpma_header_c_sizeof_private_data(void);

TEST(HeaderStandaloneTest, CAndCxxAgreeOnPrivateDataSize) {
    EXPECT_EQ(rpma_header_c_sizeof_private_data(), sizeof(struct rpma_conn_private_data));
}
