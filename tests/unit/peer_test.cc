#include <gtest/gtest.h>
#include <stdlib.h>

#include "librpma.h"

namespace {

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

TEST(GetIbvContext, LoopbackIsServedByTheTcpDevice) {
    ibv_context *local = nullptr;
    ibv_context *remote = nullptr;
    ASSERT_EQ(rpma_utils_get_ibv_context("127.0.0.1", RPMA_UTIL_IBV_CONTEXT_LOCAL, &local), 0);
    ASSERT_EQ(rpma_utils_get_ibv_context("localhost", RPMA_UTIL_IBV_CONTEXT_REMOTE, &remote), 0);
    EXPECT_EQ(local, remote) << "one device serves every address";
    ASSERT_NE(local->device, nullptr);
    EXPECT_STREQ(local->device->name, "tcp0");
    int odp = -1;
    ASSERT_EQ(rpma_utils_ibv_context_is_odp_capable(local, &odp), 0);
    EXPECT_EQ(odp, 0);
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
    ibv_context *ctx = nullptr;
    setenv("RPMA_PROVIDER", "tcp", 1);
    EXPECT_EQ(rpma_utils_get_ibv_context("127.0.0.1", RPMA_UTIL_IBV_CONTEXT_LOCAL, &ctx), 0);
    setenv("RPMA_PROVIDER", "carrier-pigeon", 1);
    EXPECT_EQ(rpma_utils_get_ibv_context("127.0.0.1", RPMA_UTIL_IBV_CONTEXT_LOCAL, &ctx),
              RPMA_E_INVAL);
    unsetenv("RPMA_PROVIDER");
}

TEST(IsOdpCapable, NullArgumentsAreInvalid) {
    ibv_context *ctx = nullptr;
    ASSERT_EQ(rpma_utils_get_ibv_context("127.0.0.1", RPMA_UTIL_IBV_CONTEXT_LOCAL, &ctx), 0);
    int odp;
    EXPECT_EQ(rpma_utils_ibv_context_is_odp_capable(nullptr, &odp), RPMA_E_INVAL);
    EXPECT_EQ(rpma_utils_ibv_context_is_odp_capable(ctx, nullptr), RPMA_E_INVAL);
}

TEST(Peer, NewAndDeleteOnTheTcpDevice) {
    ibv_context *ctx = nullptr;
    ASSERT_EQ(rpma_utils_get_ibv_context("127.0.0.1", RPMA_UTIL_IBV_CONTEXT_LOCAL, &ctx), 0);
    rpma_peer *peer = nullptr;
    ASSERT_EQ(rpma_peer_new(ctx, &peer), 0);
    ASSERT_NE(peer, nullptr);
    ASSERT_EQ(rpma_peer_delete(&peer), 0);
    EXPECT_EQ(peer, nullptr);
    EXPECT_EQ(rpma_peer_delete(&peer), 0) << "deleting a NULL peer is a no-op";
}

TEST(Peer, InvalidArgumentsAreRejected) {
    ibv_context *ctx = nullptr;
    ASSERT_EQ(rpma_utils_get_ibv_context("127.0.0.1", RPMA_UTIL_IBV_CONTEXT_LOCAL, &ctx), 0);
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
