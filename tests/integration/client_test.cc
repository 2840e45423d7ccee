// The client library against three real rpmad processes on loopback:
// replication, mixed persistence methods, a replica killed mid-stream (with
// quorum 2 and with quorum 3), Readd after a restart on the same and on new
// ports (rpmactl verify agrees afterwards), a replica's network cut by a
// proxy that stops forwarding, async operations, one region used by several
// threads, and registered buffers.
#include "rpma/client/region.h"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <condition_variable>
#include <fstream>
#include <list>
#include <mutex>
#include <thread>
#include <vector>

#include "tests/integration/cut_proxy.h"
#include "tests/integration/process.h"
#include "tests/integration/rpmad_harness.h"

namespace rpma::testing {
namespace {

using client::OpenOptions;
using client::Region;
using client::ReplicaSet;
using client::ReplicaState;
using client::StatusCode;

constexpr uint64_t kRegionSize = 4 << 20;
constexpr size_t kRecord = 4096;

class ClientTest : public ::testing::Test {
  protected:
    // Three daemons; `gpspm` picks which of them persist with GPSPM.
    void StartThree(std::array<bool, 3> gpspm = {false, false, false}) {
        for (size_t i = 0; i < 3; ++i) {
            pools_[i] = TempPath(std::string(Name()) + "-pool" + std::to_string(i));
            daemons_[i] = Start(i, gpspm[i]);
            ASSERT_NE(daemons_[i], nullptr);
        }
    }
    // `same_ports`: where daemons_[i] listened (a restart after a kill).
    std::unique_ptr<Rpmad> Start(size_t i, bool gpspm, bool same_ports = false) {
        RpmadOptions options;
        options.pool_dir = pools_[i];
        if (same_ports) {
            options.control_port = daemons_[i]->control_port();
            options.data_port = daemons_[i]->data_port();
        }
        if (gpspm)
            options.config_yaml = "data:\n  persistence: gpspm\n";
        std::string error;
        auto rpmad = Rpmad::Start(options, &error);
        EXPECT_NE(rpmad, nullptr) << error;
        return rpmad;
    }
    static const char *Name() {
        return ::testing::UnitTest::GetInstance()->current_test_info()->name();
    }
    ReplicaSet Set() const {
        ReplicaSet set;
        for (const auto &d : daemons_)
            set.addresses.push_back(d->control());
        return set;
    }
    std::unique_ptr<Region> Open(OpenOptions options = {}, const ReplicaSet *set = nullptr) {
        if (options.create_size == 0)
            options.create_size = kRegionSize;
        auto region = Region::Open(set ? *set : Set(), "replicated", options);
        EXPECT_TRUE(region.ok()) << region.status().ToString();
        return region.ok() ? std::move(*region) : nullptr;
    }
    // `rpmactl verify` of the region on every daemon of the set: its exit
    // code and stdout (the JSON report), or -1 when it did not finish.
    std::pair<int, std::string> Verify(const std::string &region) const {
        std::vector<std::string> argv = {Runfile("client/rpmactl/rpmactl"), "--json", "verify",
                                         region};
        for (const auto &d : daemons_)
            argv.insert(argv.end(), {"--server", d->control()});
        std::string error;
        // No configuration file or RPMACTL_SERVER of the machine's.
        auto rpmactl = Process::Start(
            argv, {"HOME=" + TempPath("home"), "XDG_CONFIG_HOME=", "RPMACTL_SERVER="}, &error);
        EXPECT_NE(rpmactl, nullptr) << error;
        if (rpmactl == nullptr)
            return {-1, ""};
        const auto status = rpmactl->Wait(std::chrono::seconds(60));
        EXPECT_TRUE(status.has_value()) << rpmactl->Describe();
        return {status && status->exited ? status->code : -1, rpmactl->Stdout()};
    }
    static std::vector<std::byte> ReadAll(Region &region, size_t replica, uint64_t offset,
                                          size_t length) {
        std::vector<std::byte> out(length);
        const client::Status s = region.Read(offset, out, replica);
        EXPECT_TRUE(s.ok()) << s.ToString();
        return out;
    }

    std::array<std::string, 3> pools_;
    std::array<std::unique_ptr<Rpmad>, 3> daemons_;
};

// A data-plane address override may be an IPv6 literal in brackets: the
// daemon's data plane listens on ::1 only, so the region opens and takes
// writes only if the client dials "::1" (not "[::1]") at the given port.
TEST_F(ClientTest, DataAddressOverrideTakesABracketedIpv6Literal) {
    RpmadOptions options;
    options.pool_dir = TempPath(std::string(Name()) + "-pool");
    options.data_host = "::1";
    std::string error;
    auto rpmad = Rpmad::Start(options, &error);
    ASSERT_NE(rpmad, nullptr) << error;
    ReplicaSet set;
    set.addresses = {rpmad->control()};
    set.data_addresses = {"[::1]:" + std::to_string(rpmad->data_port())};
    auto region = Open({}, &set);
    ASSERT_NE(region, nullptr);
    const auto bytes = Pattern(kRecord, 3);
    ASSERT_TRUE(region->WritePersist(0, bytes).ok());
    EXPECT_EQ(ReadAll(*region, 0, 0, kRecord), bytes);
}

TEST_F(ClientTest, ReplicatesAndReadsBackIdenticalBytesFromEachReplica) {
    ASSERT_NO_FATAL_FAILURE(StartThree());
    auto region = Open();
    ASSERT_NE(region, nullptr);
    EXPECT_EQ(region->size(), kRegionSize);
    // 3 MiB crosses the staging ring's 1 MiB slots; a small write and a batch.
    const auto big = Pattern(3 << 20, 7);
    ASSERT_TRUE(region->WritePersist(4096, big).ok());
    const auto small = Pattern(100, 99);
    ASSERT_TRUE(region->Write(kRegionSize - 100, small).ok());
    ASSERT_TRUE(region->Persist(kRegionSize - 100, 100).ok());
    client::Batch batch;
    const auto a = Pattern(512, 1), b = Pattern(512, 2);
    batch.Write(0, a);
    batch.Write(2048, b);
    ASSERT_TRUE(region->Commit(batch).ok());

    for (size_t r = 0; r < 3; ++r) {
        EXPECT_EQ(ReadAll(*region, r, 4096, big.size()), big) << "replica " << r;
        EXPECT_EQ(ReadAll(*region, r, kRegionSize - 100, 100), small) << "replica " << r;
        EXPECT_EQ(ReadAll(*region, r, 0, 512), a) << "replica " << r;
        EXPECT_EQ(ReadAll(*region, r, 2048, 512), b) << "replica " << r;
    }
    // Out of range is the caller's error, not a replica's.
    const client::Status beyond = region->Write(kRegionSize - 10, small);
    EXPECT_EQ(beyond.code(), StatusCode::kInvalidArgument);
    for (const auto &info : region->replicas())
        EXPECT_EQ(info.state, ReplicaState::kLive);
}

// A persist, and a batch's covering persist, longer than one tcp wire
// message (2 GiB) on a 3 GiB region: acknowledged by all three replicas,
// none failed. (The tcp provider refused such a flush, so every replica
// failed at once and the call lost its quorum.) The region files are
// allocated but never written beyond a few bytes, so this stays cheap.
TEST_F(ClientTest, PersistAndBatchLongerThanTwoGiBSucceedOnEveryReplica) {
    ASSERT_NO_FATAL_FAILURE(StartThree());
    constexpr uint64_t kLarge = uint64_t{3} << 30;
    OpenOptions options;
    options.create_size = kLarge;
    auto region = Open(options);
    ASSERT_NE(region, nullptr);
    const client::Status persisted = region->Persist(0, (uint64_t{2} << 30) + 4096);
    EXPECT_TRUE(persisted.ok()) << persisted.ToString();
    const auto first = Pattern(8, 1), last = Pattern(8, 2);
    client::Batch batch;
    batch.Write(0, first);
    batch.Write(kLarge - 8, last);
    const client::Status committed = region->Commit(batch);
    EXPECT_TRUE(committed.ok()) << committed.ToString();
    for (const auto &info : region->replicas())
        EXPECT_EQ(info.state, ReplicaState::kLive) << info.error.ToString();
    for (size_t r = 0; r < 3; ++r) {
        EXPECT_EQ(ReadAll(*region, r, 0, 8), first) << "replica " << r;
        EXPECT_EQ(ReadAll(*region, r, kLarge - 8, 8), last) << "replica " << r;
    }
}

TEST_F(ClientTest, OpenOfAMissingRegionWithoutCreateSizeIsNotFound) {
    ASSERT_NO_FATAL_FAILURE(StartThree());
    auto region = Region::Open(Set(), "absent", {});
    ASSERT_FALSE(region.ok());
    EXPECT_EQ(region.status().code(), StatusCode::kNotFound) << region.status().ToString();
}

TEST_F(ClientTest, MixedApmAndGpspmReplicasAllGetTheBytes) {
    ASSERT_NO_FATAL_FAILURE(StartThree({false, false, true}));
    auto region = Open();
    ASSERT_NE(region, nullptr);
    const auto infos = region->replicas();
    EXPECT_FALSE(infos[0].gpspm);
    EXPECT_TRUE(infos[2].gpspm);
    const auto bytes = Pattern(64 * 1024, 3);
    for (int i = 0; i < 8; ++i)
        ASSERT_TRUE(region->WritePersist(static_cast<uint64_t>(i) * bytes.size(), bytes).ok());
    for (size_t r = 0; r < 3; ++r)
        for (int i = 0; i < 8; ++i)
            EXPECT_EQ(ReadAll(*region, r, static_cast<uint64_t>(i) * bytes.size(), bytes.size()),
                      bytes);
    // The GPSPM daemon served flush requests: the persists went through it.
    rpmad::v1::Stats stats;
    ASSERT_TRUE(daemons_[2]->Daemon()->GetStats(Rpmad::Context().get(), {}, &stats).ok());
    EXPECT_GE(stats.flushes(), 8u);
}

TEST_F(ClientTest, KilledReplicaWithQuorumTwoIsReportedWritesGoOnAndReaddResyncsIt) {
    ASSERT_NO_FATAL_FAILURE(StartThree({false, true, false}));
    std::vector<client::Status> failures;
    OpenOptions options;
    options.quorum = 2;
    options.on_failure = [&](const client::Status &s) { failures.push_back(s); };
    auto region = Open(options);
    ASSERT_NE(region, nullptr);
    size_t acknowledged = 0;
    auto record = [](size_t i) { return Pattern(kRecord, static_cast<uint8_t>(i)); };
    for (; acknowledged < 20; ++acknowledged)
        ASSERT_TRUE(region->WritePersist(acknowledged * kRecord, record(acknowledged)).ok());

    daemons_[1]->process().Kill();
    // Writes go on; the failure shows up within a bounded number of them.
    for (; acknowledged < 40 || region->replicas()[1].state != ReplicaState::kFailed;
         ++acknowledged) {
        ASSERT_LT(acknowledged, 500u) << "the killed replica was never reported";
        const client::Status s = region->WritePersist(acknowledged * kRecord, record(acknowledged));
        ASSERT_TRUE(s.ok()) << s.ToString();
    }
    const auto infos = region->replicas();
    EXPECT_EQ(infos[1].state, ReplicaState::kFailed);
    EXPECT_EQ(infos[1].error.replica(), 1u);
    EXPECT_EQ(infos[1].error.replica_address(), infos[1].address);
    EXPECT_NE(infos[1].error.message().find("during write+persist"), std::string::npos)
        << infos[1].error.ToString();
    ASSERT_EQ(failures.size(), 1u);
    EXPECT_EQ(failures[0].replica(), 1u);
    // Reads from the failed replica are refused, from the others complete.
    std::vector<std::byte> out(kRecord);
    EXPECT_EQ(region->Read(0, out, 1).code(), StatusCode::kFailedPrecondition);
    for (size_t r : {0u, 2u})
        for (size_t i = 0; i < acknowledged; ++i)
            ASSERT_EQ(ReadAll(*region, r, i * kRecord, kRecord), record(i))
                << "replica " << r << " record " << i;

    // Restarted on the same pool and ports, re-added where the set knew it:
    // the copy reports progress up to the whole region, then all three agree.
    daemons_[1] = Start(1, true, /*same_ports=*/true);
    ASSERT_NE(daemons_[1], nullptr);
    std::vector<uint64_t> progress;
    const client::Status readded = region->Readd(1, [&](uint64_t copied, uint64_t total) {
        EXPECT_EQ(total, kRegionSize);
        progress.push_back(copied);
    });
    ASSERT_TRUE(readded.ok()) << readded.ToString();
    ASSERT_FALSE(progress.empty());
    EXPECT_EQ(progress.back(), kRegionSize);
    EXPECT_TRUE(std::is_sorted(progress.begin(), progress.end()));
    EXPECT_EQ(region->replicas()[1].state, ReplicaState::kLive);
    ASSERT_TRUE(region->WritePersist(acknowledged * kRecord, record(acknowledged)).ok());
    ++acknowledged;
    const auto reference = ReadAll(*region, 0, 0, kRegionSize);
    for (size_t i = 0; i < acknowledged; ++i)
        ASSERT_TRUE(std::equal(reference.begin() + i * kRecord,
                               reference.begin() + (i + 1) * kRecord, record(i).begin()));
    EXPECT_EQ(ReadAll(*region, 1, 0, kRegionSize), reference);
    EXPECT_EQ(ReadAll(*region, 2, 0, kRegionSize), reference);
    // And rpmactl, reading each daemon on its own, finds no difference.
    const auto [code, report] = Verify("replicated");
    EXPECT_EQ(code, 0) << report;
    EXPECT_NE(report.find("\"identical\": true"), std::string::npos) << report;
}

// The kill lands while a stream of asynchronous writes is being worked
// through (not between two synchronous calls): every write goes on with the
// two survivors, the replica is reported once, and every acknowledged write
// is on both survivors.
TEST_F(ClientTest, ReplicaKilledUnderAStreamOfAsyncWritesLosesNothingAcknowledged) {
    ASSERT_NO_FATAL_FAILURE(StartThree({false, false, true}));
    std::mutex mu;
    std::vector<client::Status> failures;
    OpenOptions options;
    options.quorum = 2;
    options.on_failure = [&](const client::Status &s) {
        std::lock_guard lock(mu);  // the Region's worker thread calls it
        failures.push_back(s);
    };
    auto region = Open(options);
    ASSERT_NE(region, nullptr);
    constexpr size_t kRecords = 400, kKillAfter = 50;
    std::vector<std::vector<std::byte>> records;
    for (size_t i = 0; i < kRecords; ++i)
        records.push_back(Pattern(kRecord, static_cast<uint8_t>(i * 5 + 1)));
    std::vector<std::future<client::Status>> acknowledged;
    for (size_t i = 0; i < kRecords; ++i)
        acknowledged.push_back(region->WritePersistAsync(i * kRecord, records[i]));
    ASSERT_TRUE(acknowledged[kKillAfter].get().ok());
    daemons_[0]->process().Kill();
    for (size_t i = 0; i < kRecords; ++i) {
        if (i == kKillAfter)
            continue;
        const client::Status s = acknowledged[i].get();
        EXPECT_TRUE(s.ok()) << "record " << i << ": " << s.ToString();
    }
    EXPECT_EQ(region->replicas()[0].state, ReplicaState::kFailed);
    {
        std::lock_guard lock(mu);
        ASSERT_EQ(failures.size(), 1u);
        EXPECT_EQ(failures[0].replica(), 0u) << failures[0].ToString();
    }
    for (size_t r : {1u, 2u}) {
        const auto all = ReadAll(*region, r, 0, kRecords * kRecord);
        for (size_t i = 0; i < kRecords; ++i)
            ASSERT_TRUE(std::equal(records[i].begin(), records[i].end(),
                                   all.begin() + static_cast<std::ptrdiff_t>(i * kRecord)))
                << "replica " << r << " record " << i;
    }
}

TEST_F(ClientTest, KilledReplicaWithQuorumThreeFailsTheOperationCleanly) {
    ASSERT_NO_FATAL_FAILURE(StartThree());
    auto region = Open();  // quorum: all three
    ASSERT_NE(region, nullptr);
    const auto bytes = Pattern(kRecord, 5);
    ASSERT_TRUE(region->WritePersist(0, bytes).ok());
    daemons_[2]->process().Kill();
    client::Status s;
    for (int i = 1; s.ok(); ++i) {
        ASSERT_LT(i, 500) << "the killed replica was never noticed";
        s = region->WritePersist(static_cast<uint64_t>(i) * kRecord, bytes);
    }
    EXPECT_EQ(s.code(), StatusCode::kQuorumLost) << s.ToString();
    EXPECT_NE(s.message().find(daemons_[2]->control()), std::string::npos) << s.ToString();
    // Every later operation fails the same way at once; reads still work.
    EXPECT_EQ(region->Persist(0, kRecord).code(), StatusCode::kQuorumLost);
    EXPECT_EQ(ReadAll(*region, 0, 0, kRecord), bytes);

    // Restarted elsewhere (new ports) and re-added at its new address: the
    // quorum is back and so are writes, on all three.
    daemons_[2] = Start(2, false);
    ASSERT_NE(daemons_[2], nullptr);
    const client::Status readded = region->Readd(2, nullptr, daemons_[2]->control());
    ASSERT_TRUE(readded.ok()) << readded.ToString();
    EXPECT_EQ(region->replicas()[2].address, daemons_[2]->control());
    const auto after = Pattern(kRecord, 6);
    ASSERT_TRUE(region->WritePersist(kRecord, after).ok());
    for (size_t r = 0; r < 3; ++r) {
        EXPECT_EQ(ReadAll(*region, r, 0, kRecord), bytes) << "replica " << r;
        EXPECT_EQ(ReadAll(*region, r, kRecord, kRecord), after) << "replica " << r;
    }
}

TEST_F(ClientTest, CutNetworkIsDetectedWithinTheOperationTimeoutAndNothingIsAcknowledgedWithoutIt) {
    ASSERT_NO_FATAL_FAILURE(StartThree({false, false, true}));
    // Replica 1 is reached through proxies, its control plane and (by the
    // set's data-plane override) its data plane.
    CutProxy control(daemons_[1]->control_port()), data(daemons_[1]->data_port());
    ASSERT_NE(control.port(), 0);
    ASSERT_NE(data.port(), 0);
    ReplicaSet set = Set();
    set.addresses[1] = control.address();
    set.data_addresses = {"", data.address(), ""};
    constexpr auto kTimeout = std::chrono::milliseconds(1500);
    std::vector<client::Status> failures;
    std::chrono::steady_clock::time_point failed_at;
    OpenOptions options;
    options.quorum = 2;
    options.operation_timeout = kTimeout;
    options.on_failure = [&](const client::Status &s) {
        failures.push_back(s);
        failed_at = std::chrono::steady_clock::now();
    };
    auto region = Open(options, &set);
    ASSERT_NE(region, nullptr);
    auto record = [](size_t i) { return Pattern(kRecord, static_cast<uint8_t>(i * 7)); };
    size_t acknowledged = 0;
    for (; acknowledged < 20; ++acknowledged)
        ASSERT_TRUE(region->WritePersist(acknowledged * kRecord, record(acknowledged)).ok());
    // The replica's bytes did go through the proxy.
    EXPECT_GT(data.forwarded(), 20 * kRecord);
    EXPECT_EQ(ReadAll(*region, 1, 0, kRecord), record(0));

    const auto cut_at = std::chrono::steady_clock::now();
    control.Cut();
    data.Cut();
    for (; acknowledged < 60 || region->replicas()[1].state != ReplicaState::kFailed;
         ++acknowledged) {
        ASSERT_LT(acknowledged, 500u) << "the cut replica was never reported";
        const client::Status s = region->WritePersist(acknowledged * kRecord, record(acknowledged));
        ASSERT_TRUE(s.ok()) << s.ToString();
    }
    // Detected within operation_timeout of the cut (the margin: the writes
    // made before an operation had to wait for the replica).
    ASSERT_EQ(failures.size(), 1u);
    EXPECT_EQ(failures[0].replica(), 1u);
    EXPECT_EQ(failures[0].code(), StatusCode::kDeadlineExceeded) << failures[0].ToString();
    EXPECT_LE(failed_at - cut_at, kTimeout + std::chrono::milliseconds(1000));
    EXPECT_EQ(region->replicas()[1].address, control.address());
    // Which operations it affected: none acknowledged. Quorum 2 is the
    // fewest in-sync replicas a write may be acknowledged by, not how many
    // it waits for: the first write after the cut waited for the replica
    // until it was marked failed (and recorded stale), so the report names
    // no acknowledged operation it lacks.
    const std::string &report = failures[0].message();
    EXPECT_EQ(report.find("it had not confirmed "), std::string::npos) << report;
    // Nothing acknowledged is missing from the survivors.
    for (size_t r : {0u, 2u})
        for (size_t i = 0; i < acknowledged; ++i)
            ASSERT_EQ(ReadAll(*region, r, i * kRecord, kRecord), record(i))
                << "replica " << r << " record " << i;
}

TEST_F(ClientTest, AsyncOperationsCompleteInOrderAndLand) {
    ASSERT_NO_FATAL_FAILURE(StartThree({false, true, false}));
    auto region = Open();
    ASSERT_NE(region, nullptr);
    std::vector<std::vector<std::byte>> chunks;
    for (size_t i = 0; i < 16; ++i)
        chunks.push_back(Pattern(8192, static_cast<uint8_t>(i * 3)));
    std::vector<std::future<client::Status>> futures;
    for (size_t i = 0; i < chunks.size(); ++i)
        futures.push_back(region->WriteAsync(i * 8192, chunks[i]));
    futures.push_back(region->PersistAsync(0, chunks.size() * 8192));
    client::Batch batch;
    const auto tail = Pattern(300, 77);
    batch.Write(kRegionSize - 300, tail);
    futures.push_back(region->CommitAsync(batch));
    for (auto &f : futures) {
        const client::Status s = f.get();
        EXPECT_TRUE(s.ok()) << s.ToString();
    }
    std::vector<std::byte> out(8192);
    for (size_t r = 0; r < 3; ++r)
        for (size_t i = 0; i < chunks.size(); ++i) {
            ASSERT_TRUE(region->ReadAsync(i * 8192, out, r).get().ok());
            EXPECT_EQ(out, chunks[i]);
        }
    EXPECT_EQ(ReadAll(*region, 1, kRegionSize - 300, 300), tail);
}

// One Region shared by threads that write, persist, commit and read at
// once, synchronously and asynchronously: each thread's bytes land whole on
// every replica.
TEST_F(ClientTest, OneRegionUsedFromSeveralThreadsAtOnceKeepsEachThreadsBytes) {
    ASSERT_NO_FATAL_FAILURE(StartThree({false, true, false}));
    auto region = Open();
    ASSERT_NE(region, nullptr);
    constexpr size_t kThreads = 4, kEach = 40;
    auto record = [](size_t t, size_t i) {
        return Pattern(kRecord, static_cast<uint8_t>(t * 61 + i * 3 + 1));
    };
    auto offset = [](size_t t, size_t i) { return (t * kEach + i) * kRecord; };
    std::vector<std::thread> threads;
    std::atomic<size_t> failed{0};
    for (size_t t = 0; t < kThreads; ++t)
        threads.emplace_back([&, t] {
            for (size_t i = 0; i < kEach; ++i) {
                const auto bytes = record(t, i);
                client::Status s;
                switch ((t + i) % 4) {
                    case 0:
                        s = region->WritePersist(offset(t, i), bytes);
                        break;
                    case 1:
                        s = region->Write(offset(t, i), bytes);
                        s = s.ok() ? region->Persist(offset(t, i), kRecord) : s;
                        break;
                    case 2: {
                        client::Batch batch;
                        batch.Write(offset(t, i), bytes);
                        s = region->Commit(batch);
                        break;
                    }
                    default:
                        s = region->WritePersistAsync(offset(t, i), bytes).get();
                }
                std::vector<std::byte> back(kRecord);
                if (s.ok())
                    s = region->Read(offset(t, i), back, (t + i) % 3);
                if (!s.ok() || back != bytes)
                    ++failed;
            }
        });
    for (auto &thread : threads)
        thread.join();
    EXPECT_EQ(failed, 0u);
    for (size_t r = 0; r < 3; ++r) {
        const auto all = ReadAll(*region, r, 0, kThreads * kEach * kRecord);
        for (size_t t = 0; t < kThreads; ++t)
            for (size_t i = 0; i < kEach; ++i) {
                const auto expected = record(t, i);
                ASSERT_TRUE(std::equal(expected.begin(), expected.end(),
                                       all.begin() + static_cast<std::ptrdiff_t>(offset(t, i))))
                    << "replica " << r << " thread " << t << " record " << i;
            }
    }
    for (const auto &info : region->replicas())
        EXPECT_EQ(info.state, ReplicaState::kLive);
}

TEST_F(ClientTest, RegisteredBuffersGoWithoutCopyAndUnregister) {
    ASSERT_NO_FATAL_FAILURE(StartThree());
    auto region = Open();
    ASSERT_NE(region, nullptr);
    auto buffer = Pattern(2 << 20, 11);
    ASSERT_TRUE(region->RegisterBuffer(buffer).ok());
    EXPECT_EQ(region->RegisterBuffer(std::span(buffer).subspan(10, 10)).code(),
              StatusCode::kAlreadyExists);
    ASSERT_TRUE(region->WritePersist(0, std::span(buffer).subspan(4096, 1 << 20)).ok());
    std::vector<std::byte> in(2 << 20);
    ASSERT_TRUE(region->RegisterBuffer(in).ok());
    for (size_t r = 0; r < 3; ++r) {
        ASSERT_TRUE(region->Read(0, std::span(in).subspan(0, 1 << 20), r).ok());
        EXPECT_TRUE(std::equal(in.begin(), in.begin() + (1 << 20), buffer.begin() + 4096));
    }
    EXPECT_TRUE(region->UnregisterBuffer(buffer).ok());
    EXPECT_TRUE(region->UnregisterBuffer(in).ok());
    EXPECT_EQ(region->UnregisterBuffer(in).code(), StatusCode::kNotFound);
    // Unregistered now: the same bytes go through the staging ring.
    ASSERT_TRUE(region->WritePersist(0, std::span(buffer).subspan(0, 4096)).ok());
    EXPECT_EQ(ReadAll(*region, 2, 0, 4096),
              std::vector<std::byte>(buffer.begin(), buffer.begin() + 4096));
}

TEST_F(ClientTest, CApiExampleReplicatesAFileAndVerifiesEachReplica) {
    ASSERT_NO_FATAL_FAILURE(StartThree({false, true, false}));
    const std::string file = TempPath("input.bin");
    const auto bytes = Pattern(1234567, 42);
    std::ofstream(file, std::ios::binary)
        .write(reinterpret_cast<const char *>(bytes.data()), static_cast<long>(bytes.size()));
    std::vector<std::string> argv = {Runfile("client/replicate_file"), file, "from-c"};
    for (const auto &d : daemons_)
        argv.push_back(d->control());
    std::string error;
    auto example = Process::Start(argv, {}, &error);
    ASSERT_NE(example, nullptr) << error;
    const auto status = example->Wait(std::chrono::seconds(60));
    ASSERT_TRUE(status.has_value()) << example->Describe();
    EXPECT_TRUE(status->Success()) << example->Describe();
    for (size_t r = 0; r < 3; ++r)
        EXPECT_NE(example->Stdout().find("replica " + std::to_string(r) + " (" +
                                         daemons_[r]->control() + "): 1234567 bytes verified"),
                  std::string::npos)
            << example->Describe();
    // The bytes are in the daemons, not just in the example's memory.
    auto region = Region::Open(Set(), "from-c", {});
    ASSERT_TRUE(region.ok()) << region.status().ToString();
    EXPECT_EQ(ReadAll(**region, 1, 0, bytes.size()), bytes);
}

}  // namespace
}  // namespace rpma::testing
