// Device lookup on a host without RDMA: the answer "auto" falls back on.
#include <gtest/gtest.h>

#include <rdma/rdma_cma.h>

#include <cerrno>

#include "rpma_core/src/provider/verbs/verbs_device.h"
#include "tests/unit/log_capture.h"

namespace rpma::provider::verbs {
namespace {

bool HostHasRdmaDevices() {
    int count = 0;
    ibv_context **list = rdma_get_devices(&count);
    if (list != nullptr)
        rdma_free_devices(list);
    return list != nullptr && count > 0;
}

class LookupWithoutRdma : public ::testing::Test {
  protected:
    void SetUp() override {
        if (HostHasRdmaDevices())
            GTEST_SKIP() << "this host has RDMA devices; the VM test covers lookups there";
    }
};

TEST_F(LookupWithoutRdma, LocalAddressFailsWithEnodevAndNamesTheWayOut) {
    rpma_test::LogCapture log;
    ibv_context *ctx = nullptr;
    EXPECT_EQ(LookupDevice("127.0.0.1", /*local=*/true, &ctx), ENODEV);
    EXPECT_EQ(ctx, nullptr);
    EXPECT_NE(log.Text().find("no RDMA device"), std::string::npos) << log.Text();
    EXPECT_NE(log.Text().find("RPMA_PROVIDER=tcp"), std::string::npos) << log.Text();
}

TEST_F(LookupWithoutRdma, RemoteAddressFailsWithEnodev) {
    rpma_test::LogCapture log;
    ibv_context *ctx = nullptr;
    EXPECT_EQ(LookupDevice("192.0.2.1", /*local=*/false, &ctx), ENODEV);
    EXPECT_EQ(ctx, nullptr);
    EXPECT_NE(log.Text().find("192.0.2.1"), std::string::npos) << log.Text();
}

TEST(DeviceFor, NullContextHasNoDevice) {
    EXPECT_EQ(DeviceFor(nullptr), nullptr);
}

TEST(DeviceFor, ContextThatRdmaCmDoesNotListHasNoDevice) {
    // A context this provider did not get from rdma_cm (another provider's,
    // or garbage) must not be taken for a device.
    ibv_context foreign{};
    EXPECT_EQ(DeviceFor(&foreign), nullptr);
}

}  // namespace
}  // namespace rpma::provider::verbs
