// `rpmad` with no arguments on a fresh machine, as the README's main job
// starts it: the embedded default listens on loopback (control 7300, data
// 7301), the provider auto picks (tcp without an RNIC), and root's pool is
// /var/lib/rpmad. A fresh machine is made for the test: a network namespace
// of its own (the fixed ports are free there, whatever else runs on the
// host) and a mount namespace with an empty tmpfs over /var/lib (the host's
// is not touched). Needs root, as CI runs.
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <gtest/gtest.h>

#include "tests/integration/rpmad_harness.h"
#include "util/connect_channel.h"

namespace rpma::testing {
namespace {

// What a fresh machine has: a loopback interface that is up, an empty
// /var/lib. "" when done, else what failed.
std::string BecomeAFreshMachine() {
    if (geteuid() != 0)
        return "the test needs root (namespaces and a tmpfs over /var/lib)";
    if (unshare(CLONE_NEWNET | CLONE_NEWNS) != 0)
        return std::string("unshare(CLONE_NEWNET | CLONE_NEWNS): ") + strerror(errno);
    const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    ifreq loopback{};
    std::strncpy(loopback.ifr_name, "lo", IFNAMSIZ - 1);
    const bool up = fd >= 0 && ioctl(fd, SIOCGIFFLAGS, &loopback) == 0 &&
                    (loopback.ifr_flags |= IFF_UP, ioctl(fd, SIOCSIFFLAGS, &loopback) == 0);
    const int err = errno;
    if (fd >= 0)
        close(fd);
    if (!up)
        return std::string("bringing up lo: ") + strerror(err);
    // Mounts made here must not propagate back to the host.
    if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
        return std::string("making / private: ") + strerror(errno);
    if (mount("tmpfs", "/var/lib", "tmpfs", 0, "size=64m,mode=0755") != 0)
        return std::string("mount -t tmpfs on /var/lib: ") + strerror(errno);
    return "";
}

TEST(RpmadDefaultTest, NoArgumentsServesOnLoopbackWithThePoolInVarLibRpmad) {
    ASSERT_EQ(BecomeAFreshMachine(), "");
    std::string error;
    // Nothing but the binary: not one argument.
    auto rpmad = Process::Start({Runfile("daemon/rpmad")}, {}, &error);
    ASSERT_NE(rpmad, nullptr) << error;
    ASSERT_TRUE(
        rpmad->WaitForLine("rpmad: ready: control 127.0.0.1:7300 data 127.0.0.1:7301 "
                           "provider tcp",
                           std::chrono::seconds(20)))
        << rpmad->Describe();

    auto channel = rpma::util::ConnectChannel("127.0.0.1:7300", grpc::InsecureChannelCredentials(),
                                              grpc::ChannelArguments(), std::chrono::seconds(10));
    v1::EffectiveConfig config;
    ASSERT_TRUE(
        v1::DaemonService::NewStub(channel)->GetConfig(Rpmad::Context().get(), {}, &config).ok());
    EXPECT_EQ(config.origin(), "embedded default");
    EXPECT_NE(config.yaml().find("pool_dir: \"/var/lib/rpmad\""), std::string::npos)
        << config.yaml();

    // The main job's path: a region, a session, a durable write.
    v1::CreateRegionRequest create;
    create.set_name("notes");
    create.set_size(1 << 20);
    v1::Region region;
    const grpc::Status created =
        v1::RegionService::NewStub(channel)->CreateRegion(Rpmad::Context().get(), create, &region);
    ASSERT_TRUE(created.ok()) << created.error_message();
    v1::OpenSessionRequest open;
    open.set_region("notes");
    v1::OpenSessionResponse session;
    ASSERT_TRUE(v1::SessionService::NewStub(channel)
                    ->OpenSession(Rpmad::Context().get(), open, &session)
                    .ok());
    EXPECT_EQ(session.data_address(), "127.0.0.1");
    EXPECT_EQ(session.data_port(), "7301");
    rpma_conn_event event;
    auto client = SessionClient::Connect(session, &event);
    ASSERT_NE(client, nullptr) << rpma_utils_conn_event_2str(event);
    ASSERT_EQ(client->Write(0, Pattern(4096, 1)), IBV_WC_SUCCESS);
    ASSERT_EQ(client->Flush(0, 4096), IBV_WC_SUCCESS);
    EXPECT_TRUE(client->Disconnect());

    EXPECT_TRUE(std::filesystem::exists("/var/lib/rpmad/catalog"));
    EXPECT_TRUE(std::filesystem::exists("/var/lib/rpmad/regions/notes.pmem"));
    ASSERT_EQ(kill(rpmad->pid(), SIGTERM), 0);
    const auto status = rpmad->Wait(std::chrono::seconds(10));
    ASSERT_TRUE(status.has_value());
    EXPECT_TRUE(status->Success()) << rpmad->Describe();
    // It said where it listens and where its pool is.
    const std::string &log = rpmad->Stderr();
    EXPECT_NE(log.find("configuration from embedded default; pool directory /var/lib/rpmad"),
              std::string::npos)
        << log;
    EXPECT_NE(log.find("control plane on 127.0.0.1:7300, data plane on 127.0.0.1:7301"),
              std::string::npos)
        << log;
}

}  // namespace
}  // namespace rpma::testing
