// Writes from a registered buffer behind a quorum smaller than the set,
// against three real rpmads, one of them stopped (SIGSTOP) so that it lags
// for real. With replica-set records an acknowledging operation waits for
// every replica in sync (the quorum is the fewest it may be acknowledged
// by): a write returns only once the laggard confirmed it (or was marked
// failed and recorded stale), and the application then reuses the buffer,
// as it may once the call returned; every replica in sync holds the bytes
// of the write, not those written into the buffer afterwards. A write
// larger than the staging ring waits for the laggard to free a slot (or
// marks it failed): no live replica ever holds the refilled bytes. A batch
// of more writes from a registered buffer than the ring has slots commits,
// each staged write completing by itself.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "rpma/client/region.h"
#include "tests/integration/process.h"
#include "tests/integration/rpmad_harness.h"
#include "tests/integration/stopped_daemon.h"

namespace rpma::testing {
namespace {

using client::OpenOptions;
using client::Region;
using client::ReplicaSet;
using client::ReplicaState;

// The staging ring's size (region.h: 8 slots of 1 MiB), the most a write
// can stage without waiting for a laggard to free a slot. It is twice what
// loopback's socket buffers take from a sender whose peer does not read
// (net.ipv4.tcp_wmem's 4 MiB at most, the stopped peer's receive buffer
// not grown), so a write of it sent from the application's buffer leaves
// the laggard's share partly unsent when the other two confirmed.
constexpr size_t kRing = size_t{8} << 20;
constexpr uint64_t kRegionSize = uint64_t{16} << 20;
constexpr size_t kLaggard = 2;

class ClientQuorumBufferTest : public ::testing::Test {
  protected:
    void SetUp() override { ASSERT_EQ(StartEach(daemons_, "quorum-buffer-pool"), ""); }
    // Quorum 2 of the three; `timeout` is operation_timeout.
    std::unique_ptr<Region> Open(std::chrono::milliseconds timeout) {
        ReplicaSet set;
        for (const auto &d : daemons_)
            set.addresses.push_back(d->control());
        OpenOptions options;
        options.create_size = kRegionSize;
        options.quorum = 2;
        options.operation_timeout = timeout;
        auto region = Region::Open(set, "reused-buffer", options);
        EXPECT_TRUE(region.ok()) << region.status().ToString();
        return region.ok() ? std::move(*region) : nullptr;
    }
    // Every replica still live holds `expected` at 0 (read into `in`, of its
    // size): the library never counts one that diverged.
    static void ExpectLiveReplicasHold(Region &region, const std::vector<std::byte> &expected,
                                       std::vector<std::byte> &in) {
        const auto infos = region.replicas();
        for (size_t r = 0; r < infos.size(); ++r) {
            if (infos[r].state != ReplicaState::kLive)
                continue;
            std::fill(in.begin(), in.end(), std::byte{0});
            const client::Status s = region.Read(0, in, r);
            ASSERT_TRUE(s.ok()) << "replica " << r << ": " << s.ToString();
            const auto diverged = std::mismatch(in.begin(), in.end(), expected.begin());
            EXPECT_TRUE(diverged.first == in.end())
                << "replica " << r << " holds other bytes than those written, from byte "
                << (diverged.first - in.begin()) << " on";
        }
    }

    std::array<std::unique_ptr<Rpmad>, 3> daemons_;
};

TEST_F(ClientQuorumBufferTest,
       WriteWaitsForAStoppedLaggardWhichStoresTheBytesWrittenNotTheBufferReused) {
    // Longer than the laggard is stopped: it must stay live, waited for,
    // not be marked failed and excluded.
    auto region = Open(std::chrono::seconds(60));
    ASSERT_NE(region, nullptr);
    const std::vector<std::byte> original = Pattern(kRing, 1);
    std::vector<std::byte> buffer = original;
    ASSERT_TRUE(region->RegisterBuffer(buffer).ok());
    std::vector<std::byte> in(kRing);
    ASSERT_TRUE(region->RegisterBuffer(in).ok());
    {
        Stopped laggard(daemons_[kLaggard]->process().pid());
        ASSERT_TRUE(laggard.stopped());
        // Resumed while the write waits (well before the transport gives
        // up on it): the call does not return at the quorum of the other
        // two, but once the laggard, in sync, confirmed too.
        constexpr auto kStopped = std::chrono::milliseconds(500);
        std::thread resume([&] {
            std::this_thread::sleep_for(kStopped);
            laggard.Resume();
        });
        const auto start = std::chrono::steady_clock::now();
        const client::Status s = region->WritePersist(0, buffer);
        const auto took = std::chrono::steady_clock::now() - start;
        resume.join();
        ASSERT_TRUE(s.ok()) << s.ToString();
        EXPECT_GE(took, kStopped - std::chrono::milliseconds(50))
            << "acknowledged before the stopped laggard confirmed";
        // What an application does with a buffer once the call returned.
        std::fill(buffer.begin(), buffer.end(), std::byte{0xEE});
    }
    // Every replica, the laggard included, holds the write's bytes.
    for (const auto &info : region->replicas())
        ASSERT_EQ(info.state, ReplicaState::kLive) << info.address << ": " << info.error.ToString();
    ExpectLiveReplicasHold(*region, original, in);
    EXPECT_TRUE(region->UnregisterBuffer(buffer).ok());
    EXPECT_TRUE(region->UnregisterBuffer(in).ok());
}

TEST_F(ClientQuorumBufferTest, WriteLargerThanTheRingWaitsForTheLaggardToFreeASlot) {
    // 12 MiB: its ninth piece needs the slot of its first, which the stopped
    // laggard has not sent. The write waits for it, up to operation_timeout,
    // then marks it failed (recorded stale) and goes on with the two others,
    // still a quorum.
    auto region = Open(std::chrono::seconds(3));
    ASSERT_NE(region, nullptr);
    const std::vector<std::byte> original = Pattern(kRing + kRing / 2, 2);
    std::vector<std::byte> buffer = original;
    ASSERT_TRUE(region->RegisterBuffer(buffer).ok());
    std::vector<std::byte> in(original.size());
    ASSERT_TRUE(region->RegisterBuffer(in).ok());
    {
        Stopped laggard(daemons_[kLaggard]->process().pid());
        ASSERT_TRUE(laggard.stopped());
        const client::Status s = region->WritePersist(0, buffer);
        ASSERT_TRUE(s.ok()) << s.ToString();
        std::fill(buffer.begin(), buffer.end(), std::byte{0xEE});
        laggard.Resume();
    }
    const auto infos = region->replicas();
    EXPECT_EQ(infos[kLaggard].state, ReplicaState::kFailed);
    EXPECT_EQ(infos[kLaggard].error.code(), client::StatusCode::kDeadlineExceeded)
        << infos[kLaggard].error.ToString();
    EXPECT_EQ(infos[0].state, ReplicaState::kLive) << infos[0].error.ToString();
    EXPECT_EQ(infos[1].state, ReplicaState::kLive) << infos[1].error.ToString();
    ExpectLiveReplicasHold(*region, original, in);
}

TEST_F(ClientQuorumBufferTest, BatchFromARegisteredBufferCopiesEachWriteAndCommits) {
    // More writes than the ring has slots: each one staged from the
    // registered buffer must complete by itself (not wait for the batch's
    // persist), since a later one reuses its slot.
    auto region = Open(std::chrono::seconds(10));
    ASSERT_NE(region, nullptr);
    constexpr size_t kWrites = 20, kEach = 4096;
    const std::vector<std::byte> original = Pattern(kWrites * kEach, 3);
    std::vector<std::byte> buffer = original;
    ASSERT_TRUE(region->RegisterBuffer(buffer).ok());
    client::Batch batch;
    for (size_t i = 0; i < kWrites; ++i)
        batch.Write(i * kEach, std::span<const std::byte>(buffer).subspan(i * kEach, kEach));
    const client::Status s = region->Commit(batch);
    ASSERT_TRUE(s.ok()) << s.ToString();
    std::fill(buffer.begin(), buffer.end(), std::byte{0xEE});
    for (const auto &info : region->replicas())
        ASSERT_EQ(info.state, ReplicaState::kLive) << info.address << ": " << info.error.ToString();
    std::vector<std::byte> in(original.size());
    ExpectLiveReplicasHold(*region, original, in);
}

}  // namespace
}  // namespace rpma::testing
