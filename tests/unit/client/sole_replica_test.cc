// A Region whose operations go to one replica alone (a set of one, or a
// quorum of one with the others failed) takes the sole path: the same
// work requests, checks and failure handling as the fan-out, without its
// bookkeeping. These tests pin down that it keeps every guarantee: bytes
// land (staged, registered, split over several slots, more operations than
// the send queue and the ring hold), a killed or hung daemon is reported and
// fails the operation with kQuorumLost (never success), and a replica
// re-added beside the sole one gets every write again.
#include <signal.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "rpma/client/region.h"
#include "tests/integration/process.h"
#include "tests/integration/rpmad_harness.h"
#include "tests/integration/stopped_daemon.h"

namespace rpma::testing {
namespace {

using client::Batch;
using client::OpenOptions;
using client::Region;
using client::ReplicaSet;
using client::ReplicaState;
using client::StatusCode;

constexpr uint64_t kRegionSize = 8 << 20;
constexpr size_t kRecord = 4096;

std::vector<std::byte> Bytes(size_t length, unsigned seed) {
    std::vector<std::byte> bytes(length);
    for (size_t i = 0; i < length; ++i)
        bytes[i] = static_cast<std::byte>((i * 131 + seed * 17 + i / 4096) & 0xff);
    return bytes;
}

std::unique_ptr<Rpmad> StartRpmad(const std::string &name, bool gpspm) {
    RpmadOptions options;
    options.pool_dir = TempPath(name);
    if (gpspm)
        options.config_yaml = "data:\n  persistence: gpspm\n";
    std::string error;
    auto rpmad = Rpmad::Start(options, &error);
    EXPECT_NE(rpmad, nullptr) << error;
    return rpmad;
}

std::vector<std::byte> ReadBack(Region &region, size_t replica, uint64_t offset, size_t length) {
    std::vector<std::byte> out(length);
    const client::Status s = region.Read(offset, out, replica);
    EXPECT_TRUE(s.ok()) << s.ToString();
    return out;
}

// true: GPSPM; false: APM.
class SoleReplica : public ::testing::TestWithParam<bool> {
  protected:
    void SetUp() override {
        rpmad_ = StartRpmad(std::string("sole-") + (GetParam() ? "gpspm" : "apm"), GetParam());
        ASSERT_NE(rpmad_, nullptr);
    }
    std::unique_ptr<Region> Open(OpenOptions options = {}) {
        ReplicaSet set;
        set.addresses = {rpmad_->control()};
        options.create_size = kRegionSize;
        auto region = Region::Open(set, "sole", options);
        EXPECT_TRUE(region.ok()) << region.status().ToString();
        return region.ok() ? std::move(*region) : nullptr;
    }
    std::unique_ptr<Rpmad> rpmad_;
};

TEST_P(SoleReplica, EveryKindOfOperationLands) {
    auto region = Open();
    ASSERT_NE(region, nullptr);
    // More write+persists than the ring has slots and the send queue room.
    for (size_t i = 0; i < 300; ++i)
        ASSERT_TRUE(region->WritePersist((i % 64) * kRecord, Bytes(kRecord, i)).ok());
    for (size_t i = 236; i < 300; ++i)
        ASSERT_EQ(ReadBack(*region, 0, (i % 64) * kRecord, kRecord), Bytes(kRecord, i));
    // Writes without persist, more than the ring and queue hold, then one persist.
    for (size_t i = 0; i < 300; ++i)
        ASSERT_TRUE(region->Write((i % 64) * kRecord, Bytes(kRecord, 1000 + i)).ok());
    ASSERT_TRUE(region->Persist(0, 64 * kRecord).ok());
    for (size_t i = 236; i < 300; ++i)
        ASSERT_EQ(ReadBack(*region, 0, (i % 64) * kRecord, kRecord), Bytes(kRecord, 1000 + i));
    // Larger than a staging slot: several pieces (the fan-out's path).
    const auto big = Bytes(3 * (1 << 20) + 123, 7);
    ASSERT_TRUE(region->WritePersist(1 << 20, big).ok());
    EXPECT_EQ(ReadBack(*region, 0, 1 << 20, big.size()), big);
    // Registered: no copy.
    std::vector<std::byte> registered = Bytes(64 * kRecord, 9);
    ASSERT_TRUE(region->RegisterBuffer(registered).ok());
    for (size_t i = 0; i < 200; ++i) {
        const std::span<const std::byte> piece(registered.data() + (i % 64) * kRecord, kRecord);
        ASSERT_TRUE(region->WritePersist((i % 64) * kRecord, piece).ok());
    }
    ASSERT_TRUE(region->UnregisterBuffer(registered).ok());
    EXPECT_EQ(ReadBack(*region, 0, 0, registered.size()), registered);
    // Async, in order.
    std::vector<std::vector<std::byte>> records;
    std::vector<std::future<client::Status>> futures;
    for (size_t i = 0; i < 20; ++i)
        records.push_back(Bytes(kRecord, 500 + i));
    for (size_t i = 0; i < 20; ++i)
        futures.push_back(region->WritePersistAsync(5 * kRecord, records[i]));
    futures.push_back(region->PersistAsync(0, kRecord));
    for (auto &f : futures)
        ASSERT_TRUE(f.get().ok());
    EXPECT_EQ(ReadBack(*region, 0, 5 * kRecord, kRecord), records.back());
    // Out of range and empty.
    EXPECT_EQ(region->WritePersist(kRegionSize - 1, Bytes(2, 1)).code(),
              StatusCode::kInvalidArgument);
    EXPECT_EQ(region->Persist(kRegionSize, 1).code(), StatusCode::kInvalidArgument);
    EXPECT_TRUE(region->WritePersist(0, {}).ok());
    EXPECT_TRUE(region->Persist(0, 0).ok());
}

TEST_P(SoleReplica, KilledDaemonFailsTheOperationWithQuorumLostAndIsReported) {
    std::vector<client::Status> failures;
    OpenOptions options;
    options.on_failure = [&](const client::Status &s) { failures.push_back(s); };
    auto region = Open(options);
    ASSERT_NE(region, nullptr);
    ASSERT_TRUE(region->WritePersist(0, Bytes(kRecord, 1)).ok());
    rpmad_->process().Kill();
    // The daemon is gone: nothing it did not confirm may count.
    const client::Status s = region->WritePersist(kRecord, Bytes(kRecord, 2));
    EXPECT_EQ(s.code(), StatusCode::kQuorumLost) << s.ToString();
    EXPECT_NE(s.message().find("0 of 1 replicas live"), std::string::npos) << s.ToString();
    ASSERT_EQ(failures.size(), 1u);
    EXPECT_EQ(failures[0].replica(), 0u);
    EXPECT_NE(failures[0].message().find("during write+persist"), std::string::npos)
        << failures[0].ToString();
    EXPECT_EQ(region->replicas()[0].state, ReplicaState::kFailed);
    EXPECT_EQ(region->Persist(0, kRecord).code(), StatusCode::kQuorumLost);
    EXPECT_EQ(region->Write(0, Bytes(kRecord, 2)).code(), StatusCode::kQuorumLost);
    EXPECT_EQ(region->WritePersistAsync(0, Bytes(kRecord, 2)).get().code(),
              StatusCode::kQuorumLost);
    EXPECT_EQ(failures.size(), 1u);
}

TEST_P(SoleReplica, HungDaemonFailsTheOperationWithinTheOperationTimeout) {
    std::vector<client::Status> failures;
    OpenOptions options;
    options.operation_timeout = std::chrono::milliseconds(1000);
    options.on_failure = [&](const client::Status &s) { failures.push_back(s); };
    auto region = Open(options);
    ASSERT_NE(region, nullptr);
    ASSERT_TRUE(region->WritePersist(0, Bytes(kRecord, 1)).ok());
    // Stopped for real before the write (a signal is delivered
    // asynchronously: a daemon not yet stopped would answer it).
    rpma::testing::Stopped stopped(rpmad_->process().pid());
    ASSERT_TRUE(stopped.stopped());
    const auto start = std::chrono::steady_clock::now();
    const client::Status s = region->WritePersist(kRecord, Bytes(kRecord, 2));
    const auto took = std::chrono::steady_clock::now() - start;
    stopped.Resume();
    EXPECT_EQ(s.code(), StatusCode::kQuorumLost) << s.ToString();
    EXPECT_GE(took, std::chrono::milliseconds(900));
    EXPECT_LE(took, std::chrono::milliseconds(3000));
    ASSERT_EQ(failures.size(), 1u);
    EXPECT_EQ(failures[0].code(), StatusCode::kDeadlineExceeded) << failures[0].ToString();
    EXPECT_EQ(region->replicas()[0].state, ReplicaState::kFailed);
}

INSTANTIATE_TEST_SUITE_P(ApmAndGpspm, SoleReplica, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool> &info) {
                             return info.param ? "Gpspm" : "Apm";
                         });

// Quorum one of three, two killed: a set of three cannot go on with one
// (client/REPLICA_SETS.md, small sets). Recording the two stale needs a
// majority of the members, so the operation that finds them failed and
// every later write fails with kQuorumLost, never acknowledged; reads of
// the survivor go on. A repair of one of them brings a majority back
// (the repaired member helps record it), and the repaired replica gets
// every write again beside the survivor. (Before replica-set records, the
// survivor went on alone: SurvivorGoesOnAlone...)
TEST(QuorumOne, SurvivorAloneAcknowledgesNothingUntilARepairBringsAMajorityBack) {
    std::vector<std::unique_ptr<Rpmad>> daemons;
    for (int i = 0; i < 3; ++i) {
        daemons.push_back(StartRpmad("quorum-one-" + std::to_string(i), i == 2));
        ASSERT_NE(daemons.back(), nullptr);
    }
    ReplicaSet set;
    for (const auto &d : daemons)
        set.addresses.push_back(d->control());
    std::vector<client::Status> failures;
    OpenOptions options;
    options.quorum = 1;
    options.create_size = kRegionSize;
    options.on_failure = [&](const client::Status &s) { failures.push_back(s); };
    auto opened = Region::Open(set, "quorum-one", options);
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    Region &region = **opened;
    size_t written = 0;
    for (; written < 10; ++written)
        ASSERT_TRUE(region.WritePersist(written * kRecord, Bytes(kRecord, written)).ok());
    daemons[0]->process().Kill();
    daemons[2]->process().Kill();
    client::Status s;
    for (; s.ok(); ++written) {
        ASSERT_LT(written, 1000u) << "the killed replicas were never noticed";
        s = region.WritePersist(written * kRecord, Bytes(kRecord, written));
    }
    --written;  // the last one was not acknowledged
    EXPECT_EQ(s.code(), StatusCode::kQuorumLost) << s.ToString();
    EXPECT_NE(s.message().find("needed accepted"), std::string::npos) << s.ToString();
    EXPECT_EQ(region.WritePersist(written * kRecord, Bytes(kRecord, written)).code(),
              StatusCode::kQuorumLost);
    EXPECT_EQ(region.replicas()[1].state, ReplicaState::kLive);
    for (size_t i = 0; i < written; ++i)
        ASSERT_EQ(ReadBack(region, 1, i * kRecord, kRecord), Bytes(kRecord, i)) << i;

    daemons[2] = StartRpmad("quorum-one-2-again", true);
    ASSERT_NE(daemons[2], nullptr);
    const client::Status readded = region.Readd(2, nullptr, daemons[2]->control());
    ASSERT_TRUE(readded.ok()) << readded.ToString();
    EXPECT_EQ(region.replicas()[0].state, ReplicaState::kFailed);
    EXPECT_GT(region.replicas()[0].stale_since, 0u);
    for (size_t end = written + 50; written < end; ++written)
        ASSERT_TRUE(region.WritePersist(written * kRecord, Bytes(kRecord, written)).ok());
    ASSERT_TRUE(region.Write(written * kRecord, Bytes(kRecord, written)).ok());
    ASSERT_TRUE(region.Persist(written * kRecord, kRecord).ok());
    ++written;
    for (size_t r : {1u, 2u})
        for (size_t i = 0; i < written; ++i)
            ASSERT_EQ(ReadBack(region, r, i * kRecord, kRecord), Bytes(kRecord, i))
                << "replica " << r << " record " << i;
}

}  // namespace
}  // namespace rpma::testing
