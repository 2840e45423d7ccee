// InlineLease (tcp_inline_lease.h): who mutes the socket, how the linger
// after the last inline wait starts, is extended and ends, and when a post
// may wait for the doorbell. Time is given by the test where the lease
// takes it.
#include "rpma_core/src/provider/tcp/tcp_inline_lease.h"

#include <gtest/gtest.h>

#include <chrono>

namespace rpma::provider::tcp {
namespace {

using std::chrono::microseconds;
constexpr int kLingerUs = 1000;

TEST(InlineLease, WaitersMuteTheSocketAndTheLastLeavesALinger) {
    InlineLease lease;
    EXPECT_FALSE(lease.Muted());
    lease.Join();
    lease.Join();
    EXPECT_TRUE(lease.Muted());
    EXPECT_FALSE(lease.Leave());
    EXPECT_TRUE(lease.Leave()) << "the last";
    const auto before = InlineLease::Clock::now();
    EXPECT_TRUE(lease.StartLinger(kLingerUs, true, false)) << "a new deadline";
    EXPECT_TRUE(lease.Lingering());
    EXPECT_TRUE(lease.Muted());
    EXPECT_GE(lease.Until(), before + microseconds(kLingerUs));
}

TEST(InlineLease, NoLingerWhenOffOrTheSocketCannotBeRead) {
    InlineLease lease;
    EXPECT_FALSE(lease.StartLinger(0, true, false));
    EXPECT_FALSE(lease.Muted());
    EXPECT_FALSE(lease.StartLinger(kLingerUs, false, false));
    EXPECT_FALSE(lease.Muted());
}

TEST(InlineLease, AWaitInTheLingerExtendsItByOneMore) {
    InlineLease lease;
    ASSERT_TRUE(lease.StartLinger(kLingerUs, true, false));
    const auto until = lease.Until();
    lease.Join();
    EXPECT_FALSE(lease.Lingering()) << "a waiter has it";
    ASSERT_TRUE(lease.Leave());
    EXPECT_FALSE(lease.StartLinger(kLingerUs, true, true)) << "the running deadline extends it";
    EXPECT_EQ(lease.Until(), until);
    lease.Expire(until, kLingerUs);
    EXPECT_TRUE(lease.Lingering());
    EXPECT_EQ(lease.Until(), until + microseconds(kLingerUs));
    lease.Expire(lease.Until(), kLingerUs);
    EXPECT_FALSE(lease.Muted()) << "nobody came back: the progress thread takes over";
}

TEST(InlineLease, ALingerEndsOnlyWhenItsTimeHasCome) {
    InlineLease lease;
    ASSERT_TRUE(lease.StartLinger(kLingerUs, true, false));
    lease.Expire(lease.Until() - microseconds(1), kLingerUs);
    EXPECT_TRUE(lease.Lingering());
    lease.Expire(lease.Until(), kLingerUs);
    EXPECT_FALSE(lease.Lingering());
}

TEST(InlineLease, PostsWaitForTheDoorbellOnlyInTheLinger) {
    InlineLease lease;
    EXPECT_FALSE(lease.MayWaitForDoorbell(1, 64)) << "no linger";
    lease.Join();
    EXPECT_FALSE(lease.MayWaitForDoorbell(1, 64)) << "a waiter: it sends itself";
    ASSERT_TRUE(lease.Leave());
    ASSERT_TRUE(lease.StartLinger(kLingerUs, true, false));
    EXPECT_TRUE(lease.MayWaitForDoorbell(1, 64));
    EXPECT_TRUE(lease.DoorbellPending());
    EXPECT_EQ(lease.DoorbellBy(), lease.Until()) << "rung by the lease's end at the latest";
    EXPECT_FALSE(lease.DoorbellDue(lease.Until() - microseconds(1)));
    EXPECT_TRUE(lease.DoorbellDue(lease.Until()));
    EXPECT_TRUE(lease.MayWaitForDoorbell(2, 128)) << "joins the waiting batch";
    EXPECT_FALSE(lease.MayWaitForDoorbell(3, InlineLease::kDoorbellBatchBytes + 1))
        << "a large batch goes at once";
    lease.DoorbellRung();
    EXPECT_FALSE(lease.DoorbellPending());
}

TEST(InlineLease, AQueueTheSocketDidNotTakeDoesNotWait) {
    InlineLease lease;
    ASSERT_TRUE(lease.StartLinger(kLingerUs, true, false));
    EXPECT_FALSE(lease.MayWaitForDoorbell(2, 128)) << "EPOLLOUT sends it";
    EXPECT_FALSE(lease.DoorbellPending());
}

}  // namespace
}  // namespace rpma::provider::tcp
