#include <gtest/gtest.h>
#include <infiniband/verbs.h>
#include <stdlib.h>

#include <string>

#include "connected_pair.h"
#include "librpma.h"

namespace {

using rpma_test::TestAddr;

// librpma's definition: the device pages on demand, for RDMA WRITE and READ
// on RC queue pairs.
bool DeviceSaysOdp(ibv_context *ctx) {
    ibv_device_attr_ex attr{};
    if (ibv_query_device_ex(ctx, nullptr, &attr) != 0)
        return false;
    const uint32_t rc = attr.odp_caps.per_transport_caps.rc_odp_caps;
    return (attr.odp_caps.general_caps & IBV_ODP_SUPPORT) != 0 &&
           (rc & IBV_ODP_SUPPORT_WRITE) != 0 && (rc & IBV_ODP_SUPPORT_READ) != 0;
}

TEST(GetIbvContext, NullArgumentsAndUnknownTypeAreInvalid) {
    ibv_context *ctx = nullptr;
    EXPECT_EQ(rpma_utils_get_ibv_context(nullptr, RPMA_UTIL_IBV_CONTEXT_LOCAL, &ctx), RPMA_E_INVAL);
    EXPECT_EQ(rpma_utils_get_ibv_context("127.0.0.1", RPMA_UTIL_IBV_CONTEXT_LOCAL, nullptr),
              RPMA_E_INVAL);
    EXPECT_EQ(
        rpma_utils_get_ibv_context("127.0.0.1", static_cast<rpma_util_ibv_context_type>(7), &ctx),
        RPMA_E_INVAL);
    EXPECT_EQ(ctx, nullptr);
}

// tcp: one device, tcp0, serves every address. verbs: the RDMA device of
// the test address's interface ($RPMA_TEST_DEVICE when given, e.g. rxe0).
TEST(GetIbvContext, TheTestAddressIsServedByTheProvidersDevice) {
    ibv_context *local = nullptr;
    ibv_context *remote = nullptr;
    ASSERT_EQ(rpma_utils_get_ibv_context(TestAddr(), RPMA_UTIL_IBV_CONTEXT_LOCAL, &local), 0);
    ASSERT_EQ(rpma_utils_get_ibv_context(TestAddr(), RPMA_UTIL_IBV_CONTEXT_REMOTE, &remote), 0);
    EXPECT_EQ(local, remote) << "the local device also serves its own address as a target";
    ASSERT_NE(local->device, nullptr);
    if (rpma_test::OnVerbs()) {
        EXPECT_STRNE(local->device->name, "tcp0");
        const char *expected = getenv("RPMA_TEST_DEVICE");
        if (expected != nullptr) {
            EXPECT_STREQ(local->device->name, expected);
        }
    } else {
        EXPECT_STREQ(local->device->name, "tcp0");
        ibv_context *by_name = nullptr;
        ASSERT_EQ(rpma_utils_get_ibv_context("localhost", RPMA_UTIL_IBV_CONTEXT_REMOTE, &by_name),
                  0);
        EXPECT_EQ(by_name, local);
    }
}

// tcp: never (its memory is always resident). verbs: what the device says.
TEST(IsOdpCapable, SaysWhatTheDeviceCanDo) {
    ibv_context *ctx = nullptr;
    ASSERT_EQ(rpma_utils_get_ibv_context(TestAddr(), RPMA_UTIL_IBV_CONTEXT_LOCAL, &ctx), 0);
    int odp = -1;
    ASSERT_EQ(rpma_utils_ibv_context_is_odp_capable(ctx, &odp), 0);
    if (rpma_test::OnVerbs()) {
        EXPECT_EQ(odp, DeviceSaysOdp(ctx) ? 1 : 0);
    } else {
        EXPECT_EQ(odp, 0);
    }
    if (rpma_test::OnSoftRoce()) {
        EXPECT_EQ(odp, 0) << "rdma_rxe of Linux 6.1 has no on-demand paging";
    }
}

TEST(GetIbvContext, AddressesThatAreNotLocalOrUnresolvableFail) {
    ibv_context *ctx = nullptr;
    // TEST-NET-1 (RFC 5737) is never assigned to a host; nothing is sent to it.
    EXPECT_EQ(rpma_utils_get_ibv_context("192.0.2.1", RPMA_UTIL_IBV_CONTEXT_LOCAL, &ctx),
              RPMA_E_PROVIDER);
    EXPECT_EQ(
        rpma_utils_get_ibv_context("no-such-host.invalid", RPMA_UTIL_IBV_CONTEXT_REMOTE, &ctx),
        RPMA_E_PROVIDER);
    EXPECT_EQ(ctx, nullptr);
}

TEST(GetIbvContext, ProviderIsChosenByTheEnvironment) {
    const char *before = getenv("RPMA_PROVIDER");
    const std::string saved = before != nullptr ? before : "";
    ibv_context *ctx = nullptr;
    setenv("RPMA_PROVIDER", "tcp", 1);
    EXPECT_EQ(rpma_utils_get_ibv_context("127.0.0.1", RPMA_UTIL_IBV_CONTEXT_LOCAL, &ctx), 0);
    ASSERT_NE(ctx, nullptr);
    EXPECT_STREQ(ctx->device->name, "tcp0") << "tcp whatever devices this host has";
    setenv("RPMA_PROVIDER", "carrier-pigeon", 1);
    EXPECT_EQ(rpma_utils_get_ibv_context("127.0.0.1", RPMA_UTIL_IBV_CONTEXT_LOCAL, &ctx),
              RPMA_E_INVAL);
    if (before != nullptr)
        setenv("RPMA_PROVIDER", saved.c_str(), 1);
    else
        unsetenv("RPMA_PROVIDER");
}

TEST(IsOdpCapable, NullArgumentsAreInvalid) {
    ibv_context *ctx = nullptr;
    ASSERT_EQ(rpma_utils_get_ibv_context(TestAddr(), RPMA_UTIL_IBV_CONTEXT_LOCAL, &ctx), 0);
    int odp;
    EXPECT_EQ(rpma_utils_ibv_context_is_odp_capable(nullptr, &odp), RPMA_E_INVAL);
    EXPECT_EQ(rpma_utils_ibv_context_is_odp_capable(ctx, nullptr), RPMA_E_INVAL);
}

TEST(Peer, NewAndDeleteOnTheTestDevice) {
    ibv_context *ctx = nullptr;
    ASSERT_EQ(rpma_utils_get_ibv_context(TestAddr(), RPMA_UTIL_IBV_CONTEXT_LOCAL, &ctx), 0);
    rpma_peer *peer = nullptr;
    ASSERT_EQ(rpma_peer_new(ctx, &peer), 0);
    ASSERT_NE(peer, nullptr);
    ASSERT_EQ(rpma_peer_delete(&peer), 0);
    EXPECT_EQ(peer, nullptr);
    EXPECT_EQ(rpma_peer_delete(&peer), 0) << "deleting a NULL peer is a no-op";
}

TEST(Peer, InvalidArgumentsAreRejected) {
    ibv_context *ctx = nullptr;
    ASSERT_EQ(rpma_utils_get_ibv_context(TestAddr(), RPMA_UTIL_IBV_CONTEXT_LOCAL, &ctx), 0);
    rpma_peer *peer = nullptr;
    EXPECT_EQ(rpma_peer_new(nullptr, &peer), RPMA_E_INVAL);
    EXPECT_EQ(rpma_peer_new(ctx, nullptr), RPMA_E_INVAL);
    EXPECT_EQ(rpma_peer_delete(nullptr), RPMA_E_INVAL);
    EXPECT_EQ(peer, nullptr);
}

TEST(Peer, ContextOfNoProviderIsRejected) {
    ibv_context foreign{};
    rpma_peer *peer = nullptr;
    EXPECT_EQ(rpma_peer_new(&foreign, &peer), RPMA_E_PROVIDER);
    EXPECT_EQ(peer, nullptr);
}

}  // namespace
