// ControlPlane::Connect's first connection (client/src/connect_channel.h):
// an attempt that fails at once is made again on a fresh channel, so a
// spurious local failure (gRPC 1.51 can report a connect still in progress
// as failed: grpc/grpc#35064) does not fail the first call; a daemon that
// is not there still fails the first call with the reason. A real rpmad,
// reached through a proxy that closes the connections it is told to.
#include <gtest/gtest.h>

#include "rpma/client/control_plane.h"
#include "tests/integration/cut_proxy.h"
#include "tests/integration/process.h"
#include "tests/integration/rpmad_harness.h"
#include "util/connect_channel.h"

namespace rpma::testing {
namespace {

using rpma::client::ControlPlane;
using rpma::util::kConnectAttempts;

class ControlPlaneTest : public ::testing::Test {
  protected:
    void SetUp() override {
        RpmadOptions options;
        options.pool_dir = TempPath("pool");
        std::string error;
        rpmad_ = Rpmad::Start(options, &error);
        ASSERT_NE(rpmad_, nullptr) << error;
    }

    // ListRegions through `control`, as rpmactl's first call would be.
    static grpc::Status List(ControlPlane &control) {
        ::rpmad::v1::ListRegionsResponse regions;
        return control.regions().ListRegions(control.Context().get(), {}, &regions);
    }

    std::unique_ptr<Rpmad> rpmad_;
};

TEST_F(ControlPlaneTest, AConnectionAttemptThatFailsAtOnceIsMadeAgain) {
    CutProxy proxy(rpmad_->control_port());
    ASSERT_NE(proxy.port(), 0);
    proxy.RefuseNext(kConnectAttempts - 1);
    auto control = ControlPlane::Connect(proxy.address(), {});
    ASSERT_TRUE(control.ok()) << control.status().ToString();
    EXPECT_EQ(proxy.accepted(), kConnectAttempts);
    const grpc::Status got = List(**control);
    EXPECT_TRUE(got.ok()) << got.error_message();
    // The call went over the connection Connect made.
    EXPECT_EQ(proxy.accepted(), kConnectAttempts);
}

TEST_F(ControlPlaneTest, AttemptsThatAllFailLeaveTheReasonToTheFirstCall) {
    CutProxy proxy(rpmad_->control_port());
    ASSERT_NE(proxy.port(), 0);
    proxy.RefuseNext(kConnectAttempts);
    auto control = ControlPlane::Connect(proxy.address(), {});
    ASSERT_TRUE(control.ok()) << control.status().ToString();
    EXPECT_EQ(proxy.accepted(), kConnectAttempts);
    const grpc::Status got = List(**control);
    EXPECT_EQ(got.error_code(), grpc::StatusCode::UNAVAILABLE) << got.error_message();
    // The last attempt's reason: "Socket closed", or a reset when the
    // proxy closed a connection whose preface it had not read.
    EXPECT_NE(got.error_message().find("failed to connect"), std::string::npos)
        << got.error_message();
}

TEST_F(ControlPlaneTest, ADaemonThatIsNotThereFailsTheFirstCallWithTheRefusal) {
    const std::string nobody = "127.0.0.1:" + std::to_string(FreePort());
    auto control = ControlPlane::Connect(nobody, {});
    ASSERT_TRUE(control.ok()) << control.status().ToString();
    const grpc::Status got = List(**control);
    EXPECT_EQ(got.error_code(), grpc::StatusCode::UNAVAILABLE) << got.error_message();
    EXPECT_NE(got.error_message().find("Connection refused"), std::string::npos)
        << got.error_message();
}

TEST_F(ControlPlaneTest, AConnectionNotMadeWithinTheWindowIsLeftToGrpc) {
    // The proxy accepts and holds: the HTTP/2 handshake never completes.
    CutProxy proxy(rpmad_->control_port());
    ASSERT_NE(proxy.port(), 0);
    proxy.Hold();
    const auto channel =
        rpma::util::ConnectChannel(proxy.address(), grpc::InsecureChannelCredentials(),
                                   grpc::ChannelArguments(), std::chrono::milliseconds(200));
    ASSERT_NE(channel, nullptr);
    EXPECT_EQ(channel->GetState(false), GRPC_CHANNEL_CONNECTING);
    // Released, the same connection (the only one) completes.
    proxy.Release();
    EXPECT_TRUE(
        channel->WaitForConnected(std::chrono::system_clock::now() + std::chrono::seconds(10)));
    EXPECT_EQ(proxy.accepted(), 1);
}

}  // namespace
}  // namespace rpma::testing
