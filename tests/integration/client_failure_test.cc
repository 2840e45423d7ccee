// What a replica marked failed may still do, against three real rpmads, one
// of them stopped (SIGSTOP) so that it lags for real. Marking it failed
// closes its data-plane connection at once: the staging slot a timed-out
// read from it used is free for the live replicas' writes from then on, and
// its late answer must not land there (the live replicas would store, and
// confirm, its bytes). Readd of a replica that was stopped with writes
// queued waits until its daemon has ended the old session, so that none of
// those writes lands over the resync's copy.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <future>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "rpma/client/region.h"
#include "tests/integration/process.h"
#include "tests/integration/rpmad_harness.h"

namespace rpma::testing {
namespace {

using client::OpenOptions;
using client::Region;
using client::ReplicaSet;
using client::ReplicaState;

constexpr size_t kSlot = size_t{1} << 20;  // a staging slot (region.h)
constexpr uint64_t kRegionSize = uint64_t{16} << 20;
constexpr size_t kLaggard = 2;
constexpr char kRegion[] = "failure";

// SIGSTOPs a daemon and SIGCONTs it when it goes out of scope, so that a
// failed assertion never leaves a stopped rpmad behind.
class Stopped {
  public:
    explicit Stopped(pid_t pid) : pid_(pid) {
        sent_ = kill(pid_, SIGSTOP) == 0;
        // The daemon is the test's child: wait until it has stopped.
        siginfo_t info{};
        stopped_ = sent_ && waitid(P_PID, static_cast<id_t>(pid_), &info, WSTOPPED | WNOWAIT) == 0;
    }
    ~Stopped() { Resume(); }
    bool stopped() const { return stopped_; }
    void Resume() {
        if (sent_)
            kill(pid_, SIGCONT);
        sent_ = stopped_ = false;
    }

  private:
    pid_t pid_;
    bool sent_ = false;
    bool stopped_ = false;
};

class ClientFailureTest : public ::testing::Test {
  protected:
    void SetUp() override {
        for (size_t i = 0; i < daemons_.size(); ++i) {
            RpmadOptions options;
            options.pool_dir = TempPath("failure-pool" + std::to_string(i));
            std::string error;
            daemons_[i] = Rpmad::Start(options, &error);
            ASSERT_NE(daemons_[i], nullptr) << error;
        }
    }
    // Quorum 2 of the three; `timeout` is operation_timeout.
    std::unique_ptr<Region> Open(std::chrono::milliseconds timeout) {
        ReplicaSet set;
        for (const auto &d : daemons_)
            set.addresses.push_back(d->control());
        OpenOptions options;
        options.create_size = kRegionSize;
        options.quorum = 2;
        options.operation_timeout = timeout;
        auto region = Region::Open(set, kRegion, options);
        EXPECT_TRUE(region.ok()) << region.status().ToString();
        return region.ok() ? std::move(*region) : nullptr;
    }
    pid_t Pid(size_t i) { return daemons_[i]->process().pid(); }
    // The sessions daemon `i` has open on the region (-1: it did not answer).
    int Sessions(size_t i) {
        v1::ListSessionsRequest request;
        request.set_region(kRegion);
        v1::ListSessionsResponse list;
        if (!daemons_[i]->Sessions()->ListSessions(Rpmad::Context().get(), request, &list).ok())
            return -1;
        return list.sessions_size();
    }
    // Waits, up to 20 s, until daemon `i` has `count` sessions on the region.
    bool AwaitSessions(size_t i, int count) {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
        while (Sessions(i) != count) {
            if (std::chrono::steady_clock::now() >= deadline)
                return false;
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
        return true;
    }
    // Replica `r` holds `expected` at `offset` (read into a registered
    // buffer: the read does not go through the staging ring).
    static void ExpectHolds(Region &region, size_t r, uint64_t offset,
                            const std::vector<std::byte> &expected) {
        std::vector<std::byte> in(expected.size());
        ASSERT_TRUE(region.RegisterBuffer(in).ok());
        const client::Status s = region.Read(offset, in, r);
        ASSERT_TRUE(s.ok()) << "replica " << r << ": " << s.ToString();
        const auto diverged = std::mismatch(in.begin(), in.end(), expected.begin());
        EXPECT_TRUE(diverged.first == in.end())
            << "replica " << r << " holds other bytes than those written at " << offset
            << ", from byte " << (diverged.first - in.begin()) << " on";
        EXPECT_TRUE(region.UnregisterBuffer(in).ok());
    }

    std::array<std::unique_ptr<Rpmad>, 3> daemons_;
};

TEST_F(ClientFailureTest, LateReadAnswerOfAFailedReplicaNeverReachesTheReusedStagingSlot) {
    auto region = Open(std::chrono::seconds(3));
    ASSERT_NE(region, nullptr);
    const std::vector<std::byte> old_bytes = Pattern(kSlot, 1);
    ASSERT_TRUE(region->WritePersist(0, old_bytes).ok());
    ASSERT_EQ(Sessions(kLaggard), 1);

    // Sent from a registered buffer (the quorum is every replica left), so
    // that the staged write queued behind it waits in the client to be sent
    // from its slot while the live daemons are stopped.
    const std::vector<std::byte> ahead = Pattern(8 * kSlot, 2);
    std::vector<std::byte> ahead_buffer = ahead;
    ASSERT_TRUE(region->RegisterBuffer(ahead_buffer).ok());
    const std::vector<std::byte> new_bytes = Pattern(kSlot, 3);
    {
        Stopped laggard(Pid(kLaggard));
        ASSERT_TRUE(laggard.stopped());
        // Into an unregistered buffer: through a staging slot, which the
        // stopped daemon's answer would fill.
        std::vector<std::byte> in(kSlot);
        const client::Status read = region->Read(0, in, kLaggard);
        ASSERT_EQ(read.code(), client::StatusCode::kDeadlineExceeded) << read.ToString();
        ASSERT_EQ(region->replicas()[kLaggard].state, ReplicaState::kFailed);
        // A failed replica is not read from (its connection is gone).
        EXPECT_EQ(region->Read(0, in, kLaggard).code(), client::StatusCode::kFailedPrecondition);

        Stopped first(Pid(0)), second(Pid(1));
        ASSERT_TRUE(first.stopped() && second.stopped());
        client::Batch batch;
        batch.Write(kSlot, ahead_buffer);
        batch.Write(0, new_bytes);  // staged: the slot the read used
        std::future<client::Status> commit = region->CommitAsync(batch);
        // The laggard answers the read now, into a slot the live replicas
        // are (or are about to be) sending the new bytes from; it then sees
        // the client's disconnect and ends the session. A client that kept
        // the connection keeps the session too.
        laggard.Resume();
        EXPECT_TRUE(AwaitSessions(kLaggard, 0))
            << "the failed replica's daemon still has the session: its connection stayed open "
               "after it was marked failed, and its late answers still reach local memory";
        first.Resume();
        second.Resume();
        const client::Status committed = commit.get();
        ASSERT_TRUE(committed.ok()) << committed.ToString();
    }
    for (size_t r : {size_t{0}, size_t{1}}) {
        ASSERT_EQ(region->replicas()[r].state, ReplicaState::kLive);
        ExpectHolds(*region, r, 0, new_bytes);
        ExpectHolds(*region, r, kSlot, ahead);
    }
    EXPECT_TRUE(region->UnregisterBuffer(ahead_buffer).ok());

    // Writes through the ring go on, and the replica comes back in sync.
    const std::vector<std::byte> later = Pattern(2 * kSlot, 4);
    ASSERT_TRUE(region->WritePersist(0, later).ok());
    const client::Status readded = region->Readd(kLaggard);
    ASSERT_TRUE(readded.ok()) << readded.ToString();
    for (size_t r = 0; r < 3; ++r)
        ExpectHolds(*region, r, 0, later);
    EXPECT_EQ(Sessions(kLaggard), 1);
}

TEST_F(ClientFailureTest, ReaddWaitsForTheOldConnectionsQueuedWritesBeforeCopying) {
    auto region = Open(std::chrono::seconds(2));
    ASSERT_NE(region, nullptr);
    // 12 MiB staged: the stopped daemon's socket takes a few MiB of it, the
    // rest waits in the client, and the ninth piece waits for the laggard's
    // slot until it is marked failed.
    const std::vector<std::byte> stale = Pattern(12 * kSlot, 5);
    const std::vector<std::byte> fresh = Pattern(12 * kSlot, 6);
    {
        Stopped laggard(Pid(kLaggard));
        ASSERT_TRUE(laggard.stopped());
        client::Status s = region->WritePersist(0, stale);
        ASSERT_TRUE(s.ok()) << s.ToString();
        ASSERT_EQ(region->replicas()[kLaggard].state, ReplicaState::kFailed);
        s = region->WritePersist(0, fresh);
        ASSERT_TRUE(s.ok()) << s.ToString();
        laggard.Resume();
    }
    // At once: the daemon is still working through the stale writes.
    const client::Status readded = region->Readd(kLaggard);
    ASSERT_TRUE(readded.ok()) << readded.ToString();
    for (const auto &info : region->replicas())
        ASSERT_EQ(info.state, ReplicaState::kLive) << info.address << ": " << info.error.ToString();
    for (size_t r = 0; r < 3; ++r)
        ExpectHolds(*region, r, 0, fresh);
    EXPECT_EQ(Sessions(kLaggard), 1);
}

}  // namespace
}  // namespace rpma::testing
