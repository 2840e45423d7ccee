// PeerLiveness (tcp_liveness.h) on a loopback TCP pair, with time given by
// the test: when looks are due, what each concludes, and that the engine is
// asked for one deadline per look.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>

#include "rpma_core/src/provider/tcp/tcp_liveness.h"
#include "rpma_core/src/provider/tcp/tcp_unique_fd.h"

namespace rpma::provider::tcp {
namespace {

using std::chrono::milliseconds;
using Look = PeerLiveness::Look;

constexpr int kBoundMs = 400;  // looks every 100 ms

class PeerLivenessTest : public ::testing::Test {
  protected:
    void SetUp() override {
        UniqueFd listener(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t length = sizeof(address);
        ASSERT_EQ(bind(listener.Get(), reinterpret_cast<sockaddr *>(&address), length), 0);
        ASSERT_EQ(listen(listener.Get(), 1), 0);
        ASSERT_EQ(getsockname(listener.Get(), reinterpret_cast<sockaddr *>(&address), &length), 0);
        ours_ = UniqueFd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
        ASSERT_EQ(connect(ours_.Get(), reinterpret_cast<sockaddr *>(&address), length), 0);
        peer_ = UniqueFd(accept(listener.Get(), nullptr, nullptr));
        ASSERT_TRUE(peer_.Valid());
        start_ = PeerLiveness::Clock::now();
        liveness_.Start(ours_.Get(), kBoundMs, start_);
    }

    PeerLiveness::Clock::time_point At(int ms) const { return start_ + milliseconds(ms); }

    UniqueFd ours_;
    UniqueFd peer_;
    PeerLiveness::Clock::time_point start_;
    PeerLiveness liveness_;
};

TEST_F(PeerLivenessTest, LooksAreDueEveryQuarterOfTheBound) {
    EXPECT_TRUE(liveness_.Watching());
    EXPECT_EQ(liveness_.TimeoutMs(), kBoundMs);
    EXPECT_FALSE(liveness_.Due(At(99)));
    EXPECT_TRUE(liveness_.Due(At(100)));
    EXPECT_EQ(liveness_.Check(ours_.Get(), true, false, false, At(100)), Look::kProbe);
    EXPECT_FALSE(liveness_.Due(At(199)));
    EXPECT_TRUE(liveness_.Due(At(200)));
}

TEST_F(PeerLivenessTest, ASilentPeerIsProbedOnceThenGivenUpOn) {
    EXPECT_EQ(liveness_.Check(ours_.Get(), true, false, false, At(100)), Look::kProbe);
    EXPECT_EQ(liveness_.Check(ours_.Get(), true, false, false, At(200)), Look::kAlive)
        << "one probe per quiet stretch";
    EXPECT_EQ(liveness_.Check(ours_.Get(), true, false, false, At(400)), Look::kDead);
    EXPECT_FALSE(liveness_.Watching());
}

TEST_F(PeerLivenessTest, BytesFromThePeerAreProgress) {
    EXPECT_EQ(liveness_.Check(ours_.Get(), true, false, false, At(300)), Look::kProbe);
    ASSERT_EQ(write(peer_.Get(), "x", 1), 1);
    char byte;
    ASSERT_EQ(read(ours_.Get(), &byte, 1), 1);
    EXPECT_EQ(liveness_.Check(ours_.Get(), true, false, false, At(400)), Look::kAlive);
    EXPECT_EQ(liveness_.Check(ours_.Get(), true, false, false, At(700)), Look::kProbe)
        << "quiet measured from the progress";
}

TEST_F(PeerLivenessTest, APeerWaitingForUsIsNeverGivenUpOn) {
    for (int ms = 100; ms <= 2000; ms += 100)
        ASSERT_EQ(liveness_.Check(ours_.Get(), false, false, true, At(ms)), Look::kAlive) << ms;
    EXPECT_TRUE(liveness_.Watching());
}

TEST_F(PeerLivenessTest, LooksStopWhenNothingWaits) {
    EXPECT_EQ(liveness_.Check(ours_.Get(), false, false, false, At(100)), Look::kStopped);
    EXPECT_FALSE(liveness_.Watching());
    EXPECT_FALSE(liveness_.Due(At(1000)));
}

TEST_F(PeerLivenessTest, OneDeadlinePerLook) {
    PeerLiveness::Clock::time_point at;
    ASSERT_TRUE(liveness_.NeedsDeadline(&at));
    EXPECT_EQ(at, At(100));
    EXPECT_FALSE(liveness_.NeedsDeadline(&at)) << "the engine holds it already";
    liveness_.DeadlinePassed(At(99));
    EXPECT_FALSE(liveness_.NeedsDeadline(&at)) << "not passed yet";
    liveness_.DeadlinePassed(At(100));
    liveness_.Check(ours_.Get(), true, false, false, At(100));
    ASSERT_TRUE(liveness_.NeedsDeadline(&at));
    EXPECT_EQ(at, At(200));
}

}  // namespace
}  // namespace rpma::provider::tcp
