// Replica sets that remember who is in sync (client/REPLICA_SETS.md), with
// real rpmads on real sockets, when a replica fails: one killed, stopped
// past the operation timeout, or cut off on its data path is recorded STALE
// before anything else is acknowledged, the next opener sees it stale
// (never reads it), and a repair copies only the extents it missed; a set
// of two cannot drop a member; a replica stopped at open is recorded stale.
// A quorum smaller than the set waits for every member in sync: a stopped
// one is recorded stale before the write is acknowledged, a slow one is
// waited for and stays in sync with every acknowledged write. Writers
// racing, writers dying and repairs are replica_set_writers_test's.
// The history each case keeps: replica_set_fixture.h.
//
// Long mode: RPMA_REPLICA_SET_TEST_ITERATIONS=N runs the kill, stop and cut
// cycles N times each (default 1, seconds per case), e.g.
//   bazel test //tests/integration:replica_set_test
//     --test_env=RPMA_REPLICA_SET_TEST_ITERATIONS=50 --test_timeout=3600
#include "tests/integration/replica_set_fixture.h"

namespace rpma::testing {
namespace {
// (a) Killed mid-stream, restarted: stale for the next opener, never read,
// repaired by copying only the extents it missed.
TEST_F(ReplicaSetTest, KilledReplicaIsStaleUntilARepairCopiesWhatItMissed) {
    ASSERT_NO_FATAL_FAILURE(StartDaemons(3));
    size_t next = 0;
    for (int round = 0; round < Iterations(); ++round) {
        auto region = OpenWriter(2);
        ASSERT_NE(region, nullptr);
        const uint64_t opened = region->generation();
        EXPECT_GT(opened, 0u);
        ASSERT_NO_FATAL_FAILURE(WriteRecords(*region, next, 100));
        next += 100;
        daemons_[2]->process().Kill();
        // Three MiB and more missed by replica 2.
        ASSERT_NO_FATAL_FAILURE(WriteUntilFailed(*region, 2, &next, 800));
        EXPECT_EQ(region->generation(), opened + 1);
        EXPECT_EQ(region->replicas()[2].stale_since, opened + 1);
        region.reset();

        daemons_[2] = Start(2, true);
        ASSERT_NE(daemons_[2], nullptr);
        region = OpenWriter(2);
        ASSERT_NE(region, nullptr);
        const auto infos = region->replicas();
        EXPECT_EQ(infos[2].state, ReplicaState::kStale);
        EXPECT_EQ(infos[2].stale_since, opened + 1);
        EXPECT_FALSE(infos[2].daemon_id.empty());
        std::vector<std::byte> in(kRecord);
        const client::Status read = region->Read(0, in, 2);
        EXPECT_EQ(read.code(), StatusCode::kFailedPrecondition) << read.ToString();
        EXPECT_NE(read.message().find("replica 2 is stale (missed writes since generation " +
                                      std::to_string(opened + 1) + "): read another or repair it"),
                  std::string::npos)
            << read.ToString();
        ASSERT_NO_FATAL_FAILURE(ExpectHistory({0, 1}));

        const uint64_t copied = Repair(*region, 2);
        // What it missed: ~3.5 MiB of records, in at most 5 extents.
        EXPECT_GT(copied, 0u);
        EXPECT_LE(copied, 6 * kExtent) << "the repair copied more than the extents it missed";
        ASSERT_NO_FATAL_FAILURE(WriteRecords(*region, next, 50));
        next += 50;
        region.reset();
        ASSERT_NO_FATAL_FAILURE(ExpectHistory({0, 1, 2}));
    }
}

// (b) Stopped past the operation timeout, then resumed: the same.
TEST_F(ReplicaSetTest, ReplicaStoppedPastTheTimeoutIsStaleThenRepaired) {
    ASSERT_NO_FATAL_FAILURE(StartDaemons(3));
    auto region = OpenWriter(2);
    ASSERT_NE(region, nullptr);
    size_t next = 0;
    for (int round = 0; round < Iterations(); ++round) {
        ASSERT_NO_FATAL_FAILURE(WriteRecords(*region, next, 50));
        next += 50;
        const uint64_t before = region->generation();
        {
            Stopped stopped(daemons_[1]->process().pid());
            ASSERT_TRUE(stopped.stopped());
            ASSERT_NO_FATAL_FAILURE(WriteUntilFailed(*region, 1, &next, 300));
            EXPECT_EQ(region->generation(), before + 1);
        }
        ASSERT_NO_FATAL_FAILURE(ExpectHistory({0, 2}));
        const uint64_t copied = Repair(*region, 1);
        EXPECT_LE(copied, 4 * kExtent);
        EXPECT_EQ(region->generation(), before + 3);  // REPAIRING, then IN_SYNC
        ASSERT_NO_FATAL_FAILURE(WriteRecords(*region, next, 20));
        next += 20;
        ASSERT_NO_FATAL_FAILURE(ExpectHistory({0, 1, 2}));
    }
}

// (b) A data path cut (the proxy drops everything, no end seen), then
// healed: the same.
TEST_F(ReplicaSetTest, ReplicaWhoseDataPathIsCutIsStaleThenRepaired) {
    ASSERT_NO_FATAL_FAILURE(StartDaemons(3));
    CutProxy proxy(daemons_[2]->data_port());
    ASSERT_NE(proxy.port(), 0);
    auto region = OpenWriter(2, {"", "", proxy.address()});
    ASSERT_NE(region, nullptr);
    size_t next = 0;
    for (int round = 0; round < Iterations(); ++round) {
        ASSERT_NO_FATAL_FAILURE(WriteRecords(*region, next, 50));
        next += 50;
        proxy.Cut();
        ASSERT_NO_FATAL_FAILURE(WriteUntilFailed(*region, 2, &next, 300));
        ASSERT_NO_FATAL_FAILURE(ExpectHistory({0, 1}));
        proxy.Heal();
        const uint64_t copied = Repair(*region, 2);
        EXPECT_LE(copied, 4 * kExtent);
        ASSERT_NO_FATAL_FAILURE(WriteRecords(*region, next, 20));
        next += 20;
        ASSERT_NO_FATAL_FAILURE(ExpectHistory({0, 1, 2}));
    }
}

// (c) Two writers on one set, each of which sees another replica fail (its
// own proxy cut): the compare-and-set lets one record its change; the
// other is fenced. Neither acknowledges an operation without a recorded
// set. (Quorum: all, so that each writer is left short of its quorum once
// it drops a replica; whatever the quorum, an acknowledged write is on
// every member in sync: REPLICA_SETS.md, rule 2.)
TEST_F(ReplicaSetTest, ASetOfTwoLosingOneAcknowledgesNothingMore) {
    ASSERT_NO_FATAL_FAILURE(StartDaemons(2));
    auto region = OpenWriter(1);
    ASSERT_NE(region, nullptr);
    ASSERT_NO_FATAL_FAILURE(WriteRecords(*region, 0, 20));
    const uint64_t generation = region->generation();
    daemons_[1]->process().Kill();
    client::Status s;
    size_t i = 20;
    for (; s.ok(); ++i) {
        ASSERT_LT(i, 2000u) << "the killed replica was never noticed";
        s = WriteRecord(*region, i);
    }
    EXPECT_EQ(s.code(), StatusCode::kQuorumLost) << s.ToString();
    EXPECT_NE(s.message().find("1 of 2 needed accepted"), std::string::npos) << s.ToString();
    EXPECT_EQ(region->generation(), generation);
    EXPECT_EQ(WriteRecord(*region, i).code(), StatusCode::kQuorumLost);
    EXPECT_EQ(region->Persist(0, kRecord).code(), StatusCode::kQuorumLost);
    region.reset();
    // Nothing was recorded: replica 0 alone is no majority of the two.
    OpenOptions options;
    options.quorum = 1;
    auto alone = Open(options, Set());
    ASSERT_FALSE(alone.ok());
    EXPECT_EQ(alone.status().code(), StatusCode::kUnavailable) << alone.status().ToString();
    EXPECT_NE(alone.status().message().find("fewer than a majority"), std::string::npos)
        << alone.status().ToString();
    // Forced, a reader reads what replica 0 holds, at its own risk.
    options.force = true;
    options.read_only = true;
    auto forced = Open(options, Set());
    ASSERT_TRUE(forced.ok()) << forced.status().ToString();
    EXPECT_EQ((*forced)->replicas()[0].state, ReplicaState::kLive);
    EXPECT_EQ((*forced)->replicas()[1].state, ReplicaState::kStale);
    std::vector<std::byte> in(kRecord);
    ASSERT_TRUE((*forced)->Read(0, in, 0).ok());
    EXPECT_TRUE(in == RecordBytes(0));
}

// A replica that does not answer at all when a writer opens (its daemon
// stopped): the open takes about operation_timeout, not the control
// plane's deadline, and records it stale; once it runs again, a repair
// brings it back.
TEST_F(ReplicaSetTest, AReplicaStoppedAtOpenIsRecordedStaleThenRepaired) {
    ASSERT_NO_FATAL_FAILURE(StartDaemons(3));
    {
        auto region = OpenWriter(2);
        ASSERT_NE(region, nullptr);
        ASSERT_NO_FATAL_FAILURE(WriteRecords(*region, 0, 10));
    }
    size_t next = 10;
    auto region = [&] {
        Stopped stopped(daemons_[1]->process().pid());
        EXPECT_TRUE(stopped.stopped());
        const auto start = std::chrono::steady_clock::now();
        auto opened = OpenWriter(2);
        EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(6));
        return opened;
    }();
    ASSERT_NE(region, nullptr);
    EXPECT_EQ(region->replicas()[1].state, ReplicaState::kStale);
    EXPECT_GT(region->replicas()[1].stale_since, 0u);
    ASSERT_NO_FATAL_FAILURE(WriteRecords(*region, next, 100));
    next += 100;
    ASSERT_NO_FATAL_FAILURE(ExpectHistory({0, 2}));
    (void)Repair(*region, 1);
    ASSERT_NO_FATAL_FAILURE(WriteRecords(*region, next, 10));
    region.reset();
    ASSERT_NO_FATAL_FAILURE(ExpectHistory({0, 1, 2}));
}

// The record daemon `d` holds for the region (generation 0: none read).
v1::ReplicaSetRecord RecordOn(Rpmad &daemon) {
    v1::GetReplicaSetRequest request;
    request.set_region(kRegion);
    v1::ReplicaSetView view;
    auto regions = daemon.Regions();
    const grpc::Status s = regions->GetReplicaSet(Rpmad::Context().get(), request, &view);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return view.record();
}

// A quorum smaller than the set is the fewest in-sync members an operation
// may be acknowledged by, not how many it waits for (REPLICA_SETS.md, rule
// 2): with replica 1 stopped, a WritePersist under quorum 2 of 3 waits for
// it for operation_timeout, marks it failed and records it STALE on the
// live members before it returns. The writer then goes without doing
// anything else; the next opener sees replica 1 stale and the history
// whole on the other two.
TEST_F(ReplicaSetTest, AQuorumOfTwoWaitsForAStoppedReplicaAndRecordsItStaleBeforeAcknowledging) {
    ASSERT_NO_FATAL_FAILURE(StartDaemons(3));
    constexpr auto kTimeout = std::chrono::milliseconds(600);
    OpenOptions options;
    options.quorum = 2;
    options.operation_timeout = kTimeout;
    auto opened = Open(options, Set());
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    std::unique_ptr<Region> region = std::move(*opened);
    const uint64_t before = region->generation();
    ASSERT_NO_FATAL_FAILURE(WriteRecords(*region, 0, 20));
    {
        Stopped stopped(daemons_[1]->process().pid());
        ASSERT_TRUE(stopped.stopped());
        const auto start = std::chrono::steady_clock::now();
        const client::Status s = region->WritePersist(20 * kRecord, RecordBytes(20));
        const auto took = std::chrono::steady_clock::now() - start;
        ASSERT_TRUE(s.ok()) << s.ToString();
        acknowledged_.insert(20);
        // Not at the quorum of the two others: about operation_timeout.
        EXPECT_GE(took, kTimeout - std::chrono::milliseconds(50));
        EXPECT_LT(took, kTimeout + std::chrono::seconds(5));
        EXPECT_EQ(region->replicas()[1].state, ReplicaState::kFailed);
        EXPECT_EQ(region->generation(), before + 1);
        // Recorded on the live members before the acknowledgement.
        for (size_t d : {0, 2}) {
            const v1::ReplicaSetRecord record = RecordOn(*daemons_[d]);
            EXPECT_EQ(record.generation(), before + 1) << "daemon " << d;
            ASSERT_EQ(record.members_size(), 3) << "daemon " << d;
            EXPECT_EQ(record.members(1).state(), v1::ReplicaSetMember::STATE_STALE)
                << "daemon " << d;
            EXPECT_EQ(record.members(0).state(), v1::ReplicaSetMember::STATE_IN_SYNC);
            EXPECT_EQ(record.members(2).state(), v1::ReplicaSetMember::STATE_IN_SYNC);
        }
        // The writer goes, nothing else done; then replica 1 runs again.
        region.reset();
        stopped.Resume();
    }
    {
        OpenOptions read_only;
        read_only.read_only = true;
        read_only.quorum = 1;
        auto reader = Region::Open(Set(), kRegion, read_only);
        ASSERT_TRUE(reader.ok()) << reader.status().ToString();
        const auto infos = (*reader)->replicas();
        EXPECT_EQ(infos[1].state, ReplicaState::kStale) << infos[1].error.ToString();
        EXPECT_EQ(infos[1].stale_since, before + 1);
        EXPECT_EQ(infos[0].state, ReplicaState::kLive) << infos[0].error.ToString();
        EXPECT_EQ(infos[2].state, ReplicaState::kLive) << infos[2].error.ToString();
    }
    ASSERT_NO_FATAL_FAILURE(ExpectHistory({0, 2}));
}

// The gap a smaller quorum used to leave (a laggard left in sync without
// writes acknowledged by the others) is closed: under quorum 2 of 3, a
// replica stopped for less than operation_timeout is waited for; each
// write returns only once it confirmed, it stays in sync (nothing
// recorded), and holds every acknowledged write, for the writer and for
// the next opener.
TEST_F(ReplicaSetTest, AQuorumOfTwoWaitsForASlowInSyncReplicaWhichHoldsEveryAcknowledgedWrite) {
    ASSERT_NO_FATAL_FAILURE(StartDaemons(3));
    OpenOptions options;
    options.quorum = 2;
    options.operation_timeout = std::chrono::seconds(20);
    auto opened = Open(options, Set());
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    std::unique_ptr<Region> region = std::move(*opened);
    const uint64_t before = region->generation();
    ASSERT_NO_FATAL_FAILURE(WriteRecords(*region, 0, 20));
    for (size_t i = 20; i < 23; ++i) {
        Stopped stopped(daemons_[2]->process().pid());
        ASSERT_TRUE(stopped.stopped());
        constexpr auto kSlow = std::chrono::milliseconds(400);
        std::thread resume([&] {
            std::this_thread::sleep_for(kSlow);
            stopped.Resume();
        });
        const auto start = std::chrono::steady_clock::now();
        const client::Status s = region->WritePersist(i * kRecord, RecordBytes(i));
        const auto took = std::chrono::steady_clock::now() - start;
        resume.join();
        ASSERT_TRUE(s.ok()) << s.ToString();
        acknowledged_.insert(i);
        EXPECT_GE(took, kSlow - std::chrono::milliseconds(50))
            << "write " << i << " was acknowledged before the stopped replica confirmed it";
        ASSERT_EQ(region->replicas()[2].state, ReplicaState::kLive)
            << region->replicas()[2].error.ToString();
        // The slow replica holds it as it returns.
        std::vector<std::byte> in(kRecord);
        ASSERT_TRUE(region->Read(i * kRecord, in, 2).ok());
        EXPECT_TRUE(in == RecordBytes(i)) << "replica 2 lacks acknowledged record " << i;
    }
    ASSERT_NO_FATAL_FAILURE(WriteRecords(*region, 23, 20));
    EXPECT_EQ(region->generation(), before);
    const v1::ReplicaSetRecord record = RecordOn(*daemons_[0]);
    EXPECT_EQ(record.generation(), before);
    for (int m = 0; m < record.members_size(); ++m)
        EXPECT_EQ(record.members(m).state(), v1::ReplicaSetMember::STATE_IN_SYNC) << m;
    region.reset();
    ASSERT_NO_FATAL_FAILURE(ExpectHistory({0, 1, 2}));
}

}  // namespace
}  // namespace rpma::testing
