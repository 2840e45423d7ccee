#include "daemon/peer_log_limit.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

namespace rpmad {
namespace {

using std::chrono::seconds;
using Clock = PeerLogLimit::Clock;

// The lines a limiter wrote, and a clock the test moves by hand.
struct Written {
    std::vector<std::string> lines;
    PeerLogLimit::Writer writer() {
        return [this](const std::string &line) { lines.push_back(line); };
    }
    size_t Count(const std::string &line) const {
        return static_cast<size_t>(std::count(lines.begin(), lines.end(), line));
    }
};

const Clock::time_point kT0 = Clock::time_point() + seconds(1000);
const PeerLogLimits kLimits{3, seconds(5), 4};

TEST(PeerLogLimit, APeerGetsItsBurstThenItsSuppressedCountWhenTheWindowEnds) {
    Written out;
    PeerLogLimit limit(out.writer(), kLimits);
    for (int i = 0; i < 10; ++i)
        limit.Write("127.0.0.1:" + std::to_string(5000 + i), "rejected", kT0 + seconds(i % 2));
    EXPECT_EQ(out.lines, std::vector<std::string>(3, "rejected"));
    // Still within the window: nothing more.
    limit.Write("127.0.0.1:6000", "rejected", kT0 + seconds(4));
    EXPECT_EQ(out.lines.size(), 3u);
    // The window is over: the count of what was withheld, then the line.
    limit.Write("127.0.0.1:6001", "late", kT0 + seconds(5));
    ASSERT_EQ(out.lines.size(), 5u);
    EXPECT_EQ(out.lines[3], "suppressed 8 similar lines from 127.0.0.1");
    EXPECT_EQ(out.lines[4], "late");
}

TEST(PeerLogLimit, OnePeerUsingUpItsBurstDoesNotSilenceAnother) {
    Written out;
    PeerLogLimit limit(out.writer(), kLimits);
    for (int i = 0; i < 100; ++i)
        limit.Write("10.0.0.1:1", "noisy", kT0);
    limit.Write("[::1]:7", "quiet", kT0);
    limit.Write("ipv4:10.0.0.2:9", "quiet", kT0);
    EXPECT_EQ(out.Count("noisy"), 3u);
    EXPECT_EQ(out.Count("quiet"), 2u);
}

TEST(PeerLogLimit, AnEndedWindowIsReportedAtAnotherPeersLineAndWhenTheLimiterGoes) {
    Written out;
    {
        PeerLogLimit limit(out.writer(), kLimits);
        for (int i = 0; i < 5; ++i)
            limit.Write("10.0.0.1:1", "a", kT0);
        for (int i = 0; i < 4; ++i)
            limit.Write("10.0.0.2:1", "b", kT0 + seconds(3));
        limit.Write("10.0.0.3:1", "c", kT0 + seconds(6));
        EXPECT_EQ(out.Count("suppressed 2 similar lines from 10.0.0.1"), 1u);
        EXPECT_EQ(out.lines.back(), "c");
        EXPECT_EQ(limit.peers(), 2u);
    }
    EXPECT_EQ(out.lines.back(), "suppressed 1 similar line from 10.0.0.2");
}

TEST(PeerLogLimit, ManyPeersShareOneWindowBeyondTheBoundAndTheCountsAddUp) {
    Written out;
    constexpr int kPeers = 1000;
    {
        PeerLogLimit limit(out.writer(), kLimits);
        for (int i = 0; i < kPeers; ++i) {
            limit.Write("10.0." + std::to_string(i / 256) + "." + std::to_string(i % 256) + ":1",
                        "line", kT0);
            EXPECT_LE(limit.peers(), kLimits.max_peers + 1);
        }
        // 4 peers of their own, one line each, then 3 lines of "other peers".
        EXPECT_EQ(out.Count("line"), kLimits.max_peers + kLimits.burst);
    }
    const uint64_t withheld = kPeers - kLimits.max_peers - kLimits.burst;
    EXPECT_EQ(out.lines.back(), "suppressed " + std::to_string(withheld) + " similar lines from " +
                                    std::string(PeerLogLimit::kOtherPeers));
    // Once the windows end, the table empties and peers get their own again.
    PeerLogLimit limit(out.writer(), kLimits);
    for (int i = 0; i < 10; ++i)
        limit.Write("10.1.0." + std::to_string(i) + ":1", "x", kT0 + seconds(i * 5));
    EXPECT_EQ(limit.peers(), 1u);
    EXPECT_EQ(out.Count("x"), 10u);
}

TEST(PeerLogLimit, PeerHostDropsThePortAndGrpcsScheme) {
    EXPECT_EQ(PeerHost("127.0.0.1:5000"), "127.0.0.1");
    EXPECT_EQ(PeerHost("[::1]:5000"), "::1");
    EXPECT_EQ(PeerHost("ipv6:[::1]:5000"), "::1");
    EXPECT_EQ(PeerHost("ipv6:%5B::1%5D:5000"), "::1");
    EXPECT_EQ(PeerHost("ipv6:%5bfe80::1%5d:5000"), "fe80::1");
    EXPECT_EQ(PeerHost("ipv4:10.0.0.1:7"), "10.0.0.1");
    EXPECT_EQ(PeerHost("an unknown address"), "an unknown address");
}

}  // namespace
}  // namespace rpmad
