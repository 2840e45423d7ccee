// PeerLiveness (tcp_liveness.h) on a loopback TCP pair, with time given by
// the test: when looks are due, what each concludes and asks the connection
// to do (an ACK_REQUEST, a heartbeat, break), and that the engine is asked
// for one deadline per look.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>

#include "rpma_core/src/provider/tcp/tcp_liveness.h"
#include "rpma_core/src/provider/tcp/tcp_unique_fd.h"

namespace rpma::provider::tcp {
namespace {

using std::chrono::milliseconds;
using Kind = PeerLiveness::Look::Kind;
using Waits = PeerLiveness::Waits;

// Our requests wait for answers; the peer waits for us; our bytes wait to
// be read.
constexpr Waits kAnswers{.live = true, .answers = true};
constexpr Waits kHolding{.live = true, .holding_message = true};
constexpr Waits kBacklog{.live = true, .backlog = true};
constexpr Waits kNothing{.live = true};

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
    // What a look at `ms` finds, in words.
    std::string Look(const Waits &waits, int ms) {
        const PeerLiveness::Look look = liveness_.Check(ours_.Get(), waits, At(ms));
        switch (look.kind) {
            case Kind::kStopped:
                return "stopped";
            case Kind::kDead:
                return "dead";
            case Kind::kAlive:
                break;
        }
        std::string found = "alive";
        if (look.ask_for_ack)
            found += ", ask for an ACK";
        if (look.heartbeat)
            found += ", heartbeat";
        return found;
    }

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
    EXPECT_EQ(Look(kAnswers, 100), "alive, ask for an ACK");
    EXPECT_FALSE(liveness_.Due(At(199)));
    EXPECT_TRUE(liveness_.Due(At(200)));
}

TEST_F(PeerLivenessTest, ASilentPeerIsProbedOnceThenGivenUpOn) {
    EXPECT_EQ(Look(kAnswers, 100), "alive, ask for an ACK");
    EXPECT_EQ(Look(kAnswers, 200), "alive") << "one probe per quiet stretch";
    EXPECT_EQ(Look(kAnswers, 400), "dead");
    EXPECT_FALSE(liveness_.Watching());
}

TEST_F(PeerLivenessTest, BytesFromThePeerAreProgress) {
    EXPECT_EQ(Look(kAnswers, 300), "alive, ask for an ACK");
    ASSERT_EQ(write(peer_.Get(), "x", 1), 1);
    char byte;
    ASSERT_EQ(read(ours_.Get(), &byte, 1), 1);
    EXPECT_EQ(Look(kAnswers, 400), "alive");
    EXPECT_EQ(Look(kAnswers, 700), "alive, ask for an ACK") << "quiet measured from the progress";
}

TEST_F(PeerLivenessTest, APeerWaitingForUsIsNeverGivenUpOn) {
    for (int ms = 100; ms <= 2000; ms += 100)
        ASSERT_EQ(Look(kHolding, ms), "alive, heartbeat") << ms;
    EXPECT_TRUE(liveness_.Watching());
}

TEST_F(PeerLivenessTest, LooksStopWhenNothingWaits) {
    EXPECT_EQ(Look(kNothing, 100), "stopped");
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
    Look(kAnswers, 100);
    ASSERT_TRUE(liveness_.NeedsDeadline(&at));
    EXPECT_EQ(at, At(200));
}

TEST_F(PeerLivenessTest, OnlyOurRequestsWaitingAskTheQuietPeerForAnAnswer) {
    EXPECT_EQ(Look(kBacklog, 100), "alive")
        << "our bytes waiting alone: the peer reading them is the answer";
    EXPECT_EQ(Look(kBacklog, 400), "dead") << "but it must read within the bound";
}

TEST_F(PeerLivenessTest, APeerWaitingForUsHearsAHeartbeatEvenWhileWeWaitForIt) {
    const Waits both{.live = true, .answers = true, .holding_message = true};
    EXPECT_EQ(Look(both, 100), "alive, ask for an ACK, heartbeat");
    EXPECT_EQ(Look(both, 200), "alive, heartbeat");
}

TEST_F(PeerLivenessTest, LooksStopOnAConnectionNoLongerLive) {
    EXPECT_EQ(Look(Waits{.answers = true}, 400), "stopped") << "never dead: it is over already";
    EXPECT_FALSE(liveness_.Watching());
}

}  // namespace
}  // namespace rpma::provider::tcp
