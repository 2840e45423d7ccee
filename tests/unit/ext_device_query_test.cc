// rpma_ext_device_query: what a device can do, asked of the provider that
// owns it rather than read off its name.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>

#include "librpma.h"
#include "rpma_ext.h"

namespace {

ibv_context *TcpContext() {
    ibv_context *ctx = nullptr;
    EXPECT_EQ(rpma_utils_get_ibv_context("127.0.0.1", RPMA_UTIL_IBV_CONTEXT_LOCAL, &ctx), 0);
    return ctx;
}

TEST(DeviceQuery, TcpPersistsEveryFlushAndPinsDaxPages) {
    rpma_ext_device_info info{};
    info.size = sizeof(info);
    ASSERT_EQ(rpma_ext_device_query(TcpContext(), &info), 0);
    EXPECT_STREQ(info.provider, "tcp");
    EXPECT_EQ(info.flush_persists, 1);
    EXPECT_EQ(info.pins_fsdax_pages, 1);
}

TEST(DeviceQuery, FieldsBeyondSizeAreNotWritten) {
    rpma_ext_device_info info;
    memset(&info, 0x5a, sizeof(info));
    info.size = offsetof(rpma_ext_device_info, provider) + sizeof(info.provider);
    ASSERT_EQ(rpma_ext_device_query(TcpContext(), &info), 0);
    EXPECT_STREQ(info.provider, "tcp");
    int untouched;
    memset(&untouched, 0x5a, sizeof(untouched));
    EXPECT_EQ(info.flush_persists, untouched);
    EXPECT_EQ(info.pins_fsdax_pages, untouched);
}

TEST(DeviceQuery, BadArgumentsAreInvalid) {
    rpma_ext_device_info info{};
    info.size = sizeof(info);
    EXPECT_EQ(rpma_ext_device_query(nullptr, &info), RPMA_E_INVAL);
    EXPECT_EQ(rpma_ext_device_query(TcpContext(), nullptr), RPMA_E_INVAL);
    info.size = offsetof(rpma_ext_device_info, provider);
    EXPECT_EQ(rpma_ext_device_query(TcpContext(), &info), RPMA_E_INVAL);
    EXPECT_EQ(info.provider, nullptr) << "nothing written on failure";
}

TEST(DeviceQuery, AContextOfNoProviderIsRefused) {
    ibv_device device{};
    ibv_context foreign{};
    foreign.device = &device;
    rpma_ext_device_info info{};
    info.size = sizeof(info);
    EXPECT_EQ(rpma_ext_device_query(&foreign, &info), RPMA_E_PROVIDER);
    EXPECT_EQ(info.provider, nullptr);
}

}  // namespace
