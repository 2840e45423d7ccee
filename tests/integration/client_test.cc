// The client library against three real rpmad processes on loopback:
// replication, mixed persistence methods, a replica killed mid-stream (with
// quorum 2 and with quorum 3), Readd after a restart, async and registered
// buffers.
#include "rpma/client/region.h"

#include <gtest/gtest.h>

#include <array>
#include <fstream>
#include <vector>

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
    std::unique_ptr<Rpmad> Start(size_t i, bool gpspm) {
        RpmadOptions options;
        options.pool_dir = pools_[i];
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
    std::unique_ptr<Region> Open(OpenOptions options = {}) {
        if (options.create_size == 0)
            options.create_size = kRegionSize;
        auto region = Region::Open(Set(), "replicated", options);
        EXPECT_TRUE(region.ok()) << region.status().ToString();
        return region.ok() ? std::move(*region) : nullptr;
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

TEST_F(ClientTest, ReplicatesAndReadsBackIdenticalBytesFromEachReplica) {
    StartThree();
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

TEST_F(ClientTest, OpenOfAMissingRegionWithoutCreateSizeIsNotFound) {
    StartThree();
    auto region = Region::Open(Set(), "absent", {});
    ASSERT_FALSE(region.ok());
    EXPECT_EQ(region.status().code(), StatusCode::kNotFound) << region.status().ToString();
}

TEST_F(ClientTest, MixedApmAndGpspmReplicasAllGetTheBytes) {
    StartThree({false, false, true});
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
    StartThree({false, true, false});
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

    // Restarted on the same pool (other ports), re-added: the copy reports
    // progress up to the whole region, then all three agree.
    daemons_[1] = Start(1, true);
    ASSERT_NE(daemons_[1], nullptr);
    std::vector<uint64_t> progress;
    const client::Status readded = region->Readd(
        1,
        [&](uint64_t copied, uint64_t total) {
            EXPECT_EQ(total, kRegionSize);
            progress.push_back(copied);
        },
        daemons_[1]->control());
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
}

TEST_F(ClientTest, KilledReplicaWithQuorumThreeFailsTheOperationCleanly) {
    StartThree();
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
}

TEST_F(ClientTest, AsyncOperationsCompleteInOrderAndLand) {
    StartThree({false, true, false});
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

TEST_F(ClientTest, RegisteredBuffersGoWithoutCopyAndUnregister) {
    StartThree();
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
    StartThree({false, true, false});
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
