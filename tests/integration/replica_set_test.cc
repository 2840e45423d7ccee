// Replica sets that remember who is in sync (client/REPLICA_SETS.md), with
// real rpmads on real sockets: a replica killed, stopped past the operation
// timeout, or cut off on its data path is recorded STALE before anything
// else is acknowledged, the next opener sees it stale (never reads it), and
// a repair copies only the extents it missed (also while the repairing
// Region writes, and after a repair that died: repair_takeover); two
// writers racing to drop different replicas settle on one record, the
// loser fenced; two writers opening a new region at once both open; a
// writer that dies right after recording a change leaves a state the next
// opener reads consistently; a set of two cannot drop a member; a replica
// stopped at open is recorded stale; a writer with only a client token
// records and repairs; the C API shows the same. A quorum smaller than the
// set waits for every member in sync: a stopped one is recorded stale
// before the write is acknowledged, a slow one is waited for and stays in
// sync with every acknowledged write.
//
// Each case keeps a history: every write acknowledged (record i: 4096
// bytes at i * 4096, each offset written once), checked right away against
// a read from a replica in sync (no read returns bytes older than an
// acknowledged write), and at the end, byte for byte, on every replica in
// sync as a fresh read-only Region sees them.
//
// Long mode: RPMA_REPLICA_SET_TEST_ITERATIONS=N runs the kill, stop and cut
// cycles N times each (default 1, seconds per case), e.g.
//   bazel test //tests/integration:replica_set_test
//     --test_env=RPMA_REPLICA_SET_TEST_ITERATIONS=50 --test_timeout=3600
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <future>
#include <list>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "rpma/client/region.h"
#include "rpma_client.h"
#include "tests/integration/cut_proxy.h"
#include "tests/integration/process.h"
#include "tests/integration/rpmad_harness.h"
#include "tests/integration/stopped_daemon.h"

namespace rpma::testing {
namespace {

using client::OpenOptions;
using client::Region;
using client::RepairOptions;
using client::RepairProgress;
using client::ReplicaSet;
using client::ReplicaState;
using client::StatusCode;

constexpr size_t kRecord = 4096;
constexpr uint64_t kRegionSize = uint64_t{64} << 20;
constexpr uint64_t kExtent = uint64_t{1} << 20;
constexpr char kRegion[] = "history";

std::vector<std::byte> RecordBytes(size_t i) {
    return Pattern(kRecord, static_cast<uint8_t>(i));
}

int Iterations() {
    const char *n = std::getenv("RPMA_REPLICA_SET_TEST_ITERATIONS");
    return n != nullptr && std::atoi(n) > 0 ? std::atoi(n) : 1;
}

class ReplicaSetTest : public ::testing::Test {
  protected:
    void StartDaemons(size_t count, std::string config_yaml = "") {
        count_ = count;
        config_yaml_ = std::move(config_yaml);
        for (size_t i = 0; i < count; ++i) {
            pools_[i] = TempPath(std::string(Name()) + "-pool" + std::to_string(i));
            daemons_[i] = Start(i, false);
            ASSERT_NE(daemons_[i], nullptr);
        }
    }
    std::unique_ptr<Rpmad> Start(size_t i, bool same_ports) {
        RpmadOptions options;
        options.pool_dir = pools_[i];
        options.config_yaml = config_yaml_;
        if (same_ports) {
            options.control_port = daemons_[i]->control_port();
            options.data_port = daemons_[i]->data_port();
        }
        std::string error;
        auto rpmad = Rpmad::Start(options, &error);
        EXPECT_NE(rpmad, nullptr) << error;
        return rpmad;
    }
    void Restart(size_t i) {
        daemons_[i]->process().Kill();
        daemons_[i] = Start(i, true);
        ASSERT_NE(daemons_[i], nullptr);
    }
    static const char *Name() {
        return ::testing::UnitTest::GetInstance()->current_test_info()->name();
    }
    ReplicaSet Set(std::vector<std::string> data_addresses = {}) const {
        ReplicaSet set;
        for (size_t i = 0; i < count_; ++i)
            set.addresses.push_back(daemons_[i]->control());
        set.data_addresses = std::move(data_addresses);
        set.options = connect_;
        return set;
    }
    client::Result<std::unique_ptr<Region>> Open(OpenOptions options, const ReplicaSet &set) {
        options.create_size = kRegionSize;
        if (options.operation_timeout == std::chrono::milliseconds(10000))
            options.operation_timeout = std::chrono::milliseconds(1500);
        return Region::Open(set, kRegion, options);
    }
    std::unique_ptr<Region> OpenWriter(size_t quorum, std::vector<std::string> data = {}) {
        OpenOptions options;
        options.quorum = quorum;
        auto region = Open(options, Set(std::move(data)));
        EXPECT_TRUE(region.ok()) << region.status().ToString();
        return region.ok() ? std::move(*region) : nullptr;
    }

    // Writes record i; when acknowledged, remembers it and reads it back
    // from a replica in sync (the first one live). The write's status.
    client::Status WriteRecord(Region &region, size_t i) {
        const client::Status s = region.WritePersist(i * kRecord, RecordBytes(i));
        if (!s.ok())
            return s;
        acknowledged_.insert(i);
        const auto infos = region.replicas();
        for (size_t r = 0; r < infos.size(); ++r) {
            if (infos[r].state != ReplicaState::kLive)
                continue;
            std::vector<std::byte> in(kRecord);
            const client::Status read = region.Read(i * kRecord, in, r);
            EXPECT_TRUE(read.ok()) << read.ToString();
            EXPECT_TRUE(in == RecordBytes(i))
                << "record " << i << " read from replica " << r
                << " right after it was acknowledged holds other bytes";
            break;
        }
        return s;
    }
    // Writes records [first, first + count), each acknowledged.
    void WriteRecords(Region &region, size_t first, size_t count) {
        for (size_t i = first; i < first + count; ++i) {
            const client::Status s = WriteRecord(region, i);
            ASSERT_TRUE(s.ok()) << "record " << i << ": " << s.ToString();
        }
    }
    // Writes records from `*next` on until replica `r` is marked failed
    // (each acknowledged), then `after` more.
    void WriteUntilFailed(Region &region, size_t r, size_t *next, size_t after) {
        for (size_t bound = *next + 2000; region.replicas()[r].state != ReplicaState::kFailed;
             ++*next) {
            ASSERT_LT(*next, bound) << "replica " << r << " was never marked failed";
            const client::Status s = WriteRecord(region, *next);
            ASSERT_TRUE(s.ok()) << "record " << *next << ": " << s.ToString();
        }
        ASSERT_NO_FATAL_FAILURE(WriteRecords(region, *next, after));
        *next += after;
    }

    // The history, byte for byte, on every replica that a fresh read-only
    // Region finds in sync; `in_sync` must be among them.
    void ExpectHistory(const std::set<size_t> &in_sync) {
        OpenOptions options;
        options.read_only = true;
        options.quorum = 1;
        auto reader = Region::Open(Set(), kRegion, options);
        ASSERT_TRUE(reader.ok()) << reader.status().ToString();
        const auto infos = (*reader)->replicas();
        EXPECT_EQ((*reader)->generation(), 0u);
        // A reader writes nothing.
        EXPECT_EQ((*reader)->WritePersist(0, RecordBytes(0)).code(),
                  StatusCode::kFailedPrecondition);
        EXPECT_EQ((*reader)->Persist(0, kRecord).code(), StatusCode::kFailedPrecondition);
        std::vector<std::byte> all(kRegionSize);
        ASSERT_TRUE((*reader)->RegisterBuffer(all).ok());
        for (size_t r = 0; r < infos.size(); ++r) {
            if (infos[r].state != ReplicaState::kLive) {
                EXPECT_EQ(in_sync.count(r), 0u)
                    << "replica " << r << " is not in sync: " << infos[r].error.ToString();
                // Never read.
                std::vector<std::byte> one(kRecord);
                EXPECT_EQ((*reader)->Read(0, one, r).code(), StatusCode::kFailedPrecondition);
                continue;
            }
            const client::Status s = (*reader)->Read(0, all, r);
            ASSERT_TRUE(s.ok()) << "replica " << r << ": " << s.ToString();
            for (size_t i : acknowledged_)
                ASSERT_TRUE(std::equal(all.begin() + i * kRecord, all.begin() + (i + 1) * kRecord,
                                       RecordBytes(i).begin()))
                    << "replica " << r << " (in sync) lacks acknowledged record " << i;
        }
        EXPECT_TRUE((*reader)->UnregisterBuffer(all).ok());
    }

    // Repairs replica r; the bytes it copied.
    uint64_t Repair(Region &region, size_t r) {
        RepairProgress last;
        uint64_t calls = 0;
        RepairOptions options;
        options.progress = [&](const RepairProgress &p) {
            EXPECT_EQ(p.total, kRegionSize);
            EXPECT_GE(p.compared, last.compared);
            EXPECT_GE(p.copied, last.copied);
            last = p;
            ++calls;
        };
        const client::Status s = region.Repair(r, options);
        EXPECT_TRUE(s.ok()) << s.ToString();
        EXPECT_GT(calls, 0u);
        EXPECT_EQ(last.compared, kRegionSize);
        EXPECT_EQ(region.replicas()[r].state, ReplicaState::kLive);
        return last.copied;
    }

    size_t count_ = 0;
    std::string config_yaml_;
    client::ConnectOptions connect_;  // every Set()'s
    std::array<std::string, 3> pools_;
    std::array<std::unique_ptr<Rpmad>, 3> daemons_;
    std::mutex history_mu_;  // acknowledged_, when two writers run at once
    std::set<size_t> acknowledged_;
};

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
TEST_F(ReplicaSetTest, TwoWritersDroppingDifferentReplicasOneWinsTheOtherIsFenced) {
    ASSERT_NO_FATAL_FAILURE(StartDaemons(3));
    for (int round = 0; round < Iterations(); ++round) {
        if (round > 0) {
            // Back to three in sync for the next race.
            auto repairer = OpenWriter(1);
            ASSERT_NE(repairer, nullptr);
            for (size_t r = 0; r < 3; ++r)
                if (repairer->replicas()[r].state != ReplicaState::kLive)
                    (void)Repair(*repairer, r);
        }
        CutProxy a_to_1(daemons_[1]->data_port()), b_to_2(daemons_[2]->data_port());
        auto a = OpenWriter(0, {"", a_to_1.address(), ""});
        auto b = OpenWriter(0, {"", "", b_to_2.address()});
        ASSERT_NE(a, nullptr);
        ASSERT_NE(b, nullptr);
        // Records of 4000 a round, four rounds' worth in the region: a
        // record's bytes depend on its index alone, so writing one again in
        // a later round changes nothing the history checks.
        const size_t base = static_cast<size_t>(round % 4) * 4000;
        ASSERT_NO_FATAL_FAILURE(WriteRecords(*a, base, 10));
        ASSERT_NO_FATAL_FAILURE(WriteRecords(*b, base + 2000, 10));
        a_to_1.Cut();
        b_to_2.Cut();
        // Both write at once until each fails.
        auto run = [&](Region &region, size_t first) {
            client::Status s;
            for (size_t i = first; s.ok() && i < first + 1000; ++i) {
                s = region.WritePersist(i * kRecord, RecordBytes(i));
                if (s.ok()) {
                    std::lock_guard lock(history_mu_);
                    acknowledged_.insert(i);
                }
            }
            return s;
        };
        auto fa = std::async(std::launch::async, [&] { return run(*a, base + 10); });
        auto fb = std::async(std::launch::async, [&] { return run(*b, base + 2010); });
        const client::Status sa = fa.get(), sb = fb.get();
        std::printf("round %d: writer a: %s\nwriter b: %s\n", round, sa.ToString().c_str(),
                    sb.ToString().c_str());
        // Neither acknowledged the write that found its replica failed.
        EXPECT_FALSE(sa.ok()) << sa.ToString();
        EXPECT_FALSE(sb.ok()) << sb.ToString();
        for (const auto *s : {&sa, &sb}) {
            EXPECT_TRUE(s->code() == StatusCode::kFailedPrecondition ||
                        s->code() == StatusCode::kQuorumLost)
                << s->ToString();
            if (s->code() == StatusCode::kFailedPrecondition) {
                EXPECT_NE(s->message().find("the replica set changed under this Region"),
                          std::string::npos)
                    << s->ToString();
            }
        }
        EXPECT_FALSE(sa.code() == StatusCode::kFailedPrecondition &&
                     sb.code() == StatusCode::kFailedPrecondition)
            << "both fenced: " << sa.ToString() << " / " << sb.ToString();
        // Nothing more is acknowledged by either (the winner lacks the
        // quorum of all, the loser is fenced or cannot record).
        for (Region *r : {a.get(), b.get()}) {
            const client::Status again = r->WritePersist(0, RecordBytes(0));
            EXPECT_FALSE(again.ok());
        }
        // The set as every later opener sees it: one of the two dropped,
        // the other and replica 0 in sync.
        {
            OpenOptions options;
            options.read_only = true;
            options.quorum = 1;
            auto reader = Region::Open(Set(), kRegion, options);
            ASSERT_TRUE(reader.ok()) << reader.status().ToString();
            const auto infos = (*reader)->replicas();
            EXPECT_EQ(infos[0].state, ReplicaState::kLive);
            EXPECT_NE(infos[1].state == ReplicaState::kLive, infos[2].state == ReplicaState::kLive)
                << "one of the two replicas the writers dropped is in sync, the other not: "
                << infos[1].error.ToString() << " / " << infos[2].error.ToString();
        }
        a.reset();
        b.reset();
        a_to_1.Heal();
        b_to_2.Heal();
        // Whoever won, the next opener finds two in sync and the history
        // on them.
        ASSERT_NO_FATAL_FAILURE(ExpectHistory({0}));
    }
}

// (d) A writer killed right after it recorded a new generation on a daemon
// and before it acknowledged the operation that needed it (its control
// path to replica 1 cut, so that the record waits there while replica 0
// holds it): the next opener sees a consistent state (the change, on one
// of three, was never recorded; the replica its writer saw fail stays out
// all the same), never reads the stale one, and a repair brings all three
// back with the history whole.
TEST_F(ReplicaSetTest, WriterKilledBetweenRecordAndAcknowledgementLeavesAConsistentState) {
    ASSERT_NO_FATAL_FAILURE(StartDaemons(3));
    {
        auto created = OpenWriter(0);
        ASSERT_NE(created, nullptr);
    }
    CutProxy control_1(daemons_[1]->control_port());
    std::vector<std::string> argv = {
        Runfile("tests/integration/replica_set_child_writer"),
        kRegion,
        "2",
        "3000",
        "0",
        "100000",
        daemons_[0]->control(),
        control_1.address() + "=127.0.0.1:" + std::to_string(daemons_[1]->data_port()),
        daemons_[2]->control()};
    std::string error;
    auto child = Process::Start(argv, {}, &error);
    ASSERT_NE(child, nullptr) << error;
    std::string line;
    ASSERT_TRUE(child->ReadLine(&line, std::chrono::seconds(20))) << child->Describe();
    ASSERT_EQ(line.rfind("open generation ", 0), 0u) << line << child->Describe();
    const uint64_t opened = std::stoull(line.substr(16));
    ASSERT_TRUE(child->WaitForLine("ack 20", std::chrono::seconds(20))) << child->Describe();
    control_1.Cut();
    daemons_[2]->process().Kill();
    // Replica 0 takes generation opened + 1 (2 STALE) at once; replica 1's
    // answer waits behind the cut.
    auto regions = daemons_[0]->Regions();
    bool recorded = false;
    for (auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
         !recorded && std::chrono::steady_clock::now() < deadline;) {
        v1::GetReplicaSetRequest request;
        request.set_region(kRegion);
        v1::ReplicaSetView view;
        if (regions->GetReplicaSet(Rpmad::Context().get(), request, &view).ok())
            recorded = view.record().generation() > opened;
        if (!recorded)
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    ASSERT_TRUE(recorded) << child->Describe();
    child->Kill();
    // What the child acknowledged, and nothing after the record.
    std::set<size_t> acked;
    const std::string &out = child->Stdout();
    bool failed = false;
    std::istringstream lines(out);
    for (std::string l; std::getline(lines, l);) {
        if (l.rfind("ack ", 0) == 0)
            acked.insert(std::stoul(l.substr(4)));
        failed = failed || l.rfind("failed", 0) == 0;
    }
    EXPECT_FALSE(failed) << out;
    acknowledged_ = acked;
    control_1.Heal();
    daemons_[2] = Start(2, true);
    ASSERT_NE(daemons_[2], nullptr);

    // Replica 0 holds the newest generation alone: with every member
    // reached, it cannot have been recorded, and the generation before it
    // is trusted; but replica 2, which its writer saw fail, stays out.
    auto reopened = OpenWriter(2);
    ASSERT_NE(reopened, nullptr);
    auto infos = reopened->replicas();
    EXPECT_EQ(infos[0].state, ReplicaState::kLive);
    EXPECT_EQ(infos[1].state, ReplicaState::kLive);
    EXPECT_EQ(infos[2].state, ReplicaState::kStale) << infos[2].error.ToString();
    EXPECT_GT(reopened->generation(), opened + 1);
    ASSERT_NO_FATAL_FAILURE(ExpectHistory({0, 1}));
    (void)Repair(*reopened, 2);
    reopened.reset();
    ASSERT_NO_FATAL_FAILURE(ExpectHistory({0, 1, 2}));
}

// A repair that dies half-way (its target stopped past the operation
// timeout) leaves the member REPAIRING: a writer's open is refused, naming
// the repair and what to do; a repair's open (repair_takeover) takes it
// over and copies only what still differs.
TEST_F(ReplicaSetTest, ARepairThatDiedIsRefusedToWritersAndTakenOverByTheNextRepair) {
    ASSERT_NO_FATAL_FAILURE(StartDaemons(3));
    size_t next = 0;
    {
        auto region = OpenWriter(2);
        ASSERT_NE(region, nullptr);
        ASSERT_NO_FATAL_FAILURE(WriteRecords(*region, next, 20));
        next += 20;
        daemons_[2]->process().Kill();
        // Several MiB missed, so that the repair copies several extents.
        ASSERT_NO_FATAL_FAILURE(WriteUntilFailed(*region, 2, &next, 1200));
    }
    daemons_[2] = Start(2, true);
    ASSERT_NE(daemons_[2], nullptr);
    {
        auto repairer = OpenWriter(2);
        ASSERT_NE(repairer, nullptr);
        std::unique_ptr<Stopped> stopped;
        RepairOptions options;
        options.progress = [&](const RepairProgress &p) {
            if (p.copied > 0 && stopped == nullptr)
                stopped = std::make_unique<Stopped>(daemons_[2]->process().pid());
        };
        const client::Status s = repairer->Repair(2, options);
        ASSERT_NE(stopped, nullptr);
        EXPECT_FALSE(s.ok());
        EXPECT_NE(repairer->replicas()[2].state, ReplicaState::kLive);
        stopped.reset();  // resumed
    }
    // The record says REPAIRING: writers are refused.
    OpenOptions writer_options;
    writer_options.quorum = 2;
    auto refused = Open(writer_options, Set());
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.status().code(), StatusCode::kUnavailable) << refused.status().ToString();
    EXPECT_NE(refused.status().message().find("replica 2 (" + daemons_[2]->control() +
                                              ") is being repaired"),
              std::string::npos)
        << refused.status().ToString();
    EXPECT_NE(refused.status().message().find("rpmactl region repair"), std::string::npos);
    // Readers are not; the member is not read.
    ASSERT_NO_FATAL_FAILURE(ExpectHistory({0, 1}));
    // A repair takes it over and finishes it.
    OpenOptions takeover;
    takeover.quorum = 2;
    takeover.repair_takeover = true;
    auto repairer = Open(takeover, Set());
    ASSERT_TRUE(repairer.ok()) << repairer.status().ToString();
    EXPECT_EQ((*repairer)->replicas()[2].state, ReplicaState::kStale);
    const uint64_t copied = Repair(**repairer, 2);
    EXPECT_LT(copied, 6 * kExtent);
    repairer->reset();
    auto writer = OpenWriter(2);
    ASSERT_NE(writer, nullptr);
    ASSERT_NO_FATAL_FAILURE(WriteRecords(*writer, next, 20));
    writer.reset();
    ASSERT_NO_FATAL_FAILURE(ExpectHistory({0, 1, 2}));
}

// Writes made during a repair by the repairing Region go to the repaired
// replica too, and no extent's copy overwrites a newer write: the missed
// records are spread over every extent, and another thread writes records
// between them while the extents are compared and copied.
TEST_F(ReplicaSetTest, WritesDuringARepairLandOnTheRepairedReplicaAndNoCopyOverwritesThem) {
    ASSERT_NO_FATAL_FAILURE(StartDaemons(3));
    constexpr size_t kStride = 16;  // records: one every 64 KiB
    const size_t spread = kRegionSize / kRecord / kStride;
    auto region = OpenWriter(2);
    ASSERT_NE(region, nullptr);
    daemons_[2]->process().Kill();
    for (size_t k = 0; k < spread; ++k) {
        const client::Status s = WriteRecord(*region, k * kStride);
        ASSERT_TRUE(s.ok()) << s.ToString();
    }
    ASSERT_EQ(region->replicas()[2].state, ReplicaState::kFailed);
    daemons_[2] = Start(2, true);
    ASSERT_NE(daemons_[2], nullptr);
    std::atomic<bool> repairing{true};
    std::set<size_t> during;
    std::thread writer([&] {
        for (size_t round = 1; round < kStride && repairing; ++round)
            for (size_t k = 0; k < spread && repairing; k += 7) {
                const size_t i = k * kStride + round;
                if (region->WritePersist(i * kRecord, RecordBytes(i)).ok())
                    during.insert(i);
                else
                    ADD_FAILURE() << "record " << i << " failed during the repair";
            }
    });
    const uint64_t copied = Repair(*region, 2);
    repairing = false;
    writer.join();
    EXPECT_GE(copied, kRegionSize / 2);  // the missed records are everywhere
    EXPECT_FALSE(during.empty());
    acknowledged_.insert(during.begin(), during.end());
    region.reset();
    ASSERT_NO_FATAL_FAILURE(ExpectHistory({0, 1, 2}));
}

// The C API's view of the same: open flags, replica states, generation.
TEST_F(ReplicaSetTest, TheCApiOpensReadOnlyAndShowsReplicaStatesAndTheGeneration) {
    ASSERT_NO_FATAL_FAILURE(StartDaemons(3));
    std::vector<std::string> addresses;
    for (size_t i = 0; i < 3; ++i)
        addresses.push_back(daemons_[i]->control());
    const char *list[] = {addresses[0].c_str(), addresses[1].c_str(), addresses[2].c_str()};
    rpma_client_options options{};
    options.create_size = kRegionSize;
    options.quorum = 2;
    options.operation_timeout_ms = 1500;
    rpma_client_region *writer = nullptr;
    ASSERT_EQ(rpma_client_region_open(list, 3, kRegion, &options, &writer), RPMA_CLIENT_OK)
        << rpma_client_last_error();
    const uint64_t generation = rpma_client_region_generation(writer);
    EXPECT_GT(generation, 0u);
    const auto bytes = RecordBytes(1);
    ASSERT_EQ(rpma_client_write_persist(writer, kRecord, bytes.data(), bytes.size()),
              RPMA_CLIENT_OK);
    daemons_[2]->process().Kill();
    for (uint64_t i = 2; rpma_client_replica_state(writer, 2) == RPMA_CLIENT_REPLICA_LIVE; ++i) {
        ASSERT_LT(i, 2000u);
        const auto more = RecordBytes(i);
        ASSERT_EQ(rpma_client_write_persist(writer, i * kRecord, more.data(), more.size()),
                  RPMA_CLIENT_OK)
            << rpma_client_last_error();
    }
    EXPECT_EQ(rpma_client_replica_state(writer, 2), RPMA_CLIENT_REPLICA_FAILED);
    EXPECT_EQ(rpma_client_region_generation(writer), generation + 1);
    EXPECT_EQ(rpma_client_replica_state(writer, 3), RPMA_CLIENT_E_INVAL);
    rpma_client_region_close(writer);

    options.quorum = 1;
    rpma_client_region *reader = nullptr;
    ASSERT_EQ(rpma_client_region_open_flags(list, 3, kRegion, &options, RPMA_CLIENT_OPEN_READ_ONLY,
                                            &reader),
              RPMA_CLIENT_OK)
        << rpma_client_last_error();
    EXPECT_EQ(rpma_client_region_generation(reader), 0u);
    EXPECT_EQ(rpma_client_replica_state(reader, 0), RPMA_CLIENT_REPLICA_LIVE);
    EXPECT_EQ(rpma_client_replica_state(reader, 2), RPMA_CLIENT_REPLICA_STALE);
    std::vector<std::byte> in(kRecord);
    EXPECT_EQ(rpma_client_read(reader, 1, kRecord, in.data(), in.size()), RPMA_CLIENT_OK);
    EXPECT_TRUE(in == bytes);
    EXPECT_EQ(rpma_client_read(reader, 2, kRecord, in.data(), in.size()),
              RPMA_CLIENT_E_PRECONDITION);
    EXPECT_NE(std::string(rpma_client_last_error()).find("replica 2 is stale"), std::string::npos)
        << rpma_client_last_error();
    EXPECT_EQ(rpma_client_write_persist(reader, 0, bytes.data(), bytes.size()),
              RPMA_CLIENT_E_PRECONDITION);
    EXPECT_EQ(rpma_client_region_open_flags(list, 3, kRegion, &options, 0x80, &writer),
              RPMA_CLIENT_E_INVAL);
    rpma_client_region_close(reader);
}

// Two writers opening a region never recorded at once, with the same
// replica list, propose the same first record (or one steps over the
// other's half-made one): both opens succeed (an open that another
// writer's record overtook starts over by itself); a writer fenced by the
// other's later record is told so and opens again; a replica that one
// writer read before the other's first record reached it is stale for it
// (rule 4) until a repair. A reader then finds every replica in sync and
// both writers' bytes.
TEST_F(ReplicaSetTest, WritersOpeningANewRegionAtOnceBothOpen) {
    ASSERT_NO_FATAL_FAILURE(StartDaemons(3));
    for (int round = 0; round < Iterations(); ++round) {
        const std::string name = "first-open-" + std::to_string(round);
        OpenOptions options;
        options.create_size = kRegionSize;
        options.quorum = 2;
        auto open = [&] { return Region::Open(Set(), name, options); };
        auto fa = std::async(std::launch::async, open);
        auto fb = std::async(std::launch::async, open);
        auto a = fa.get();
        auto b = fb.get();
        ASSERT_TRUE(a.ok()) << a.status().ToString();
        ASSERT_TRUE(b.ok()) << b.status().ToString();
        EXPECT_GE((*a)->generation(), 1u);
        EXPECT_GE((*b)->generation(), 1u);
        size_t k = 1;
        for (auto *region : {&*a, &*b}) {
            client::Status s = (*region)->WritePersist(k * kRecord, RecordBytes(k));
            if (s.code() == StatusCode::kFailedPrecondition) {
                auto again = open();
                ASSERT_TRUE(again.ok()) << again.status().ToString();
                *region = std::move(*again);
                s = (*region)->WritePersist(k * kRecord, RecordBytes(k));
            }
            ASSERT_TRUE(s.ok()) << s.ToString();
            ++k;
        }
        a->reset();
        b->reset();
        // A replica that took the first record after the other writer read
        // it missing counts as having missed a change (rule 4): a repair
        // brings it in.
        {
            auto repairer = Region::Open(Set(), name, options);
            ASSERT_TRUE(repairer.ok()) << repairer.status().ToString();
            for (size_t r = 0; r < 3; ++r)
                if ((*repairer)->replicas()[r].state != ReplicaState::kLive) {
                    const client::Status repaired = (*repairer)->Repair(r);
                    ASSERT_TRUE(repaired.ok()) << repaired.ToString();
                }
        }
        OpenOptions reading;
        reading.read_only = true;
        auto reader = Region::Open(Set(), name, reading);
        ASSERT_TRUE(reader.ok()) << reader.status().ToString();
        for (size_t r = 0; r < 3; ++r) {
            ASSERT_EQ((*reader)->replicas()[r].state, ReplicaState::kLive)
                << (*reader)->replicas()[r].error.ToString();
            for (size_t i : {1u, 2u}) {
                std::vector<std::byte> in(kRecord);
                ASSERT_TRUE((*reader)->Read(i * kRecord, in, r).ok());
                EXPECT_TRUE(in == RecordBytes(i)) << "replica " << r << " record " << i;
            }
        }
    }
}

// Daemons that want the admin token to create regions and a client token
// to open sessions: the record's calls (read, change, checksums, progress)
// go with the client token, as sessions do, so a writer holding only that
// token records a failure and repairs.
TEST_F(ReplicaSetTest, AWriterWithOnlyAClientTokenRecordsAndRepairs) {
    const std::string clients = TempPath("replica-set-clients");
    std::ofstream(clients) << "writer t-writer\n";
    ASSERT_NO_FATAL_FAILURE(StartDaemons(3,
                                         "control:\n  admin_token: \"t-admin\"\n"
                                         "sessions:\n  client_tokens_file: " +
                                             clients + "\n"));
    connect_.admin_token = "t-admin";
    connect_.client_token = "t-writer";
    {
        auto created = OpenWriter(2);  // creates: the admin token
        ASSERT_NE(created, nullptr);
    }
    connect_.admin_token.clear();
    OpenOptions options;
    options.quorum = 2;
    options.operation_timeout = std::chrono::milliseconds(1500);
    auto region = Region::Open(Set(), kRegion, options);
    ASSERT_TRUE(region.ok()) << region.status().ToString();
    size_t next = 0;
    ASSERT_NO_FATAL_FAILURE(WriteRecords(**region, next, 50));
    next += 50;
    const uint64_t before = (*region)->generation();
    daemons_[2]->process().Kill();
    ASSERT_NO_FATAL_FAILURE(WriteUntilFailed(**region, 2, &next, 100));
    EXPECT_EQ((*region)->generation(), before + 1);
    daemons_[2] = Start(2, true);
    ASSERT_NE(daemons_[2], nullptr);
    (void)Repair(**region, 2);
    region->reset();
    ASSERT_NO_FATAL_FAILURE(ExpectHistory({0, 1, 2}));
}

// (e) A set of two cannot drop a member: the operation that finds it
// failed, and every later write, fail unacknowledged.
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
