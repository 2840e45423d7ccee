#include "rpma_core/src/provider/verbs/verbs_address.h"

#include <gtest/gtest.h>
#include <netdb.h>

#include <cerrno>

namespace rpma::provider::verbs {
namespace {

TEST(AddressInfoError, SuccessIsZero) {
    EXPECT_EQ(AddressInfoError(0, EINVAL), 0);
}

TEST(AddressInfoError, LibrdmacmsOwnFailuresKeepTheirErrno) {
    // No RDMA stack at all: librdmacm fails its initialization.
    EXPECT_EQ(AddressInfoError(-1, ENODEV), ENODEV);
    EXPECT_EQ(AddressInfoError(-1, ENOMEM), ENOMEM);
    EXPECT_EQ(AddressInfoError(-1, 0), EINVAL);
}

TEST(AddressInfoError, NamesThatDoNotResolveAreUnavailableAddresses) {
    EXPECT_EQ(AddressInfoError(EAI_NONAME, 0), EADDRNOTAVAIL);
    EXPECT_EQ(AddressInfoError(EAI_AGAIN, 0), EADDRNOTAVAIL);
    EXPECT_EQ(AddressInfoError(EAI_SERVICE, 0), EADDRNOTAVAIL);
}

TEST(AddressInfoError, ResolverResourceFailuresKeepTheirMeaning) {
    EXPECT_EQ(AddressInfoError(EAI_MEMORY, 0), ENOMEM);
    EXPECT_EQ(AddressInfoError(EAI_SYSTEM, EMFILE), EMFILE);
}

}  // namespace
}  // namespace rpma::provider::verbs
