// Group commit (issue #25, OpenOptions::group_commit): asynchronous persists
// submitted while persists are in flight are coalesced into one persist
// covering them, posted when one in flight completes. Pinned with real
// rpmads on loopback, the flushes counted where the daemon's provider
// applies them (GetRegion's remote_flushes), every acknowledged write read
// back from every replica in sync, byte for byte:
// - 40 neighbouring persists submitted to a stopped daemon: the first few
//   are posted, the rest are made durable by one more; with group_commit
//   off, each has its own;
// - persists far apart are not coalesced (a covering flush would cost
//   more than the flushes it saves);
// - one of three replicas killed while a group forms: the group's
//   operations complete on the two left, and every acknowledged one is
//   on both;
// - a write that waits for send-queue room while a group could be posted
//   joins a group only once it is posted itself (a group's persist posted
//   before a member's write would not cover it).
#include <atomic>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/replica_set_fixture.h"
#include "tests/support/thread_state.h"

namespace rpma::testing {
namespace {

constexpr size_t kOperations = 40;

class GroupCommitTest : public ReplicaSetTest {
  protected:
    std::unique_ptr<Region> OpenWith(bool group_commit) {
        OpenOptions options;
        options.quorum = 1;
        options.group_commit = group_commit;
        auto region = Open(options, Set());
        EXPECT_TRUE(region.ok()) << region.status().ToString();
        return region.ok() ? std::move(*region) : nullptr;
    }
    // The persistent flushes daemon `i`'s provider applied to the region.
    uint64_t Flushes(size_t i) {
        v1::GetRegionRequest request;
        request.set_name(kRegion);
        v1::Region region;
        const grpc::Status status =
            daemons_[i]->Regions()->GetRegion(Rpmad::Context().get(), request, &region);
        EXPECT_TRUE(status.ok()) << status.error_message();
        EXPECT_TRUE(region.data_plane_counters_available());
        return region.remote_flushes();
    }
    // Submits kOperations records `stride` bytes apart while daemon 0 (and
    // `also`, when set, the daemon killed meanwhile) is stopped, so that
    // none completes before the last is submitted: every other one a
    // WritePersistAsync, the others a WriteAsync and a PersistAsync of its
    // range. Returns the persists' futures, in submission order.
    std::vector<std::future<client::Status>> SubmitStopped(Region &region, uint64_t stride,
                                                           uint8_t seed, int kill = -1) {
        std::vector<std::future<client::Status>> done;
        std::vector<std::future<client::Status>> writes;
        {
            Stopped stopped(daemons_[0]->process().pid());
            EXPECT_TRUE(stopped.stopped());
            std::unique_ptr<Stopped> other;
            if (kill >= 0) {
                other = std::make_unique<Stopped>(daemons_[kill]->process().pid());
                EXPECT_TRUE(other->stopped());
            }
            for (size_t i = 0; i < kOperations; ++i) {
                const auto bytes = Pattern(kRecord, static_cast<uint8_t>(seed + i));
                if (i % 2 == 0) {
                    done.push_back(region.WritePersistAsync(i * stride, bytes));
                } else {
                    writes.push_back(region.WriteAsync(i * stride, bytes));
                    done.push_back(region.PersistAsync(i * stride, kRecord));
                }
            }
            if (kill >= 0)
                daemons_[kill]->process().Kill();
        }
        for (auto &w : writes) {
            const client::Status s = w.get();
            EXPECT_TRUE(s.ok()) << s.ToString();
        }
        return done;
    }
    // Every record on replica `r`, byte for byte.
    void ExpectRecords(Region &region, size_t r, uint64_t stride, uint8_t seed) {
        for (size_t i = 0; i < kOperations; ++i) {
            std::vector<std::byte> in(kRecord);
            ASSERT_TRUE(region.Read(i * stride, in, r).ok());
            EXPECT_TRUE(in == Pattern(kRecord, static_cast<uint8_t>(seed + i)))
                << "record " << i << " on replica " << r;
        }
    }
};

TEST_F(GroupCommitTest, NeighbouringPersistsOutstandingTogetherShareOneFlush) {
    ASSERT_NO_FATAL_FAILURE(StartDaemons(1));
    for (const bool group_commit : {true, false}) {
        SCOPED_TRACE(group_commit ? "group commit" : "each persist posted");
        auto region = OpenWith(group_commit);
        ASSERT_NE(region, nullptr);
        const uint8_t seed = group_commit ? 1 : 101;
        const uint64_t before = Flushes(0);
        for (auto &f : SubmitStopped(*region, kRecord, seed))
            EXPECT_TRUE(f.get().ok());
        const uint64_t flushes = Flushes(0) - before;
        if (group_commit) {
            // The four in flight before the group, then the group's.
            EXPECT_LE(flushes, 5u);
            EXPECT_GE(flushes, 2u);
        } else {
            EXPECT_EQ(flushes, kOperations);
        }
        ExpectRecords(*region, 0, kRecord, seed);
    }
}

TEST_F(GroupCommitTest, PersistsFarApartAreNotCoalesced) {
    ASSERT_NO_FATAL_FAILURE(StartDaemons(1));
    auto region = OpenWith(true);
    ASSERT_NE(region, nullptr);
    constexpr uint64_t kStride = uint64_t{1} << 20;  // 1 MiB apart
    const uint64_t before = Flushes(0);
    for (auto &f : SubmitStopped(*region, kStride, 7))
        EXPECT_TRUE(f.get().ok());
    EXPECT_EQ(Flushes(0) - before, kOperations);
    ExpectRecords(*region, 0, kStride, 7);
}

TEST_F(GroupCommitTest, AReplicaKilledWhileAGroupFormsLosesNothingAcknowledged) {
    // Three: recording one failed takes a majority of the members.
    ASSERT_NO_FATAL_FAILURE(StartDaemons(3));
    auto region = OpenWith(true);
    ASSERT_NE(region, nullptr);
    const uint64_t before = Flushes(0);
    for (auto &f : SubmitStopped(*region, kRecord, 31, /*kill=*/1)) {
        const client::Status s = f.get();
        EXPECT_TRUE(s.ok()) << s.ToString();
    }
    EXPECT_LE(Flushes(0) - before, 5u);
    const auto replicas = region->replicas();
    ASSERT_EQ(replicas.size(), 3u);
    EXPECT_EQ(replicas[0].state, client::ReplicaState::kLive);
    EXPECT_EQ(replicas[1].state, client::ReplicaState::kFailed);
    EXPECT_EQ(replicas[2].state, client::ReplicaState::kLive);
    ExpectRecords(*region, 0, kRecord, 31);
    ExpectRecords(*region, 2, kRecord, 31);
}

TEST_F(GroupCommitTest, AWriteWaitingForRoomIsPostedBeforeTheGroupItJoins) {
    ASSERT_NO_FATAL_FAILURE(StartDaemons(1));
    OpenOptions options;
    options.quorum = 1;
    options.max_in_flight = 256;
    auto opened = Open(options, Set());
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    Region &region = **opened;
    // The send queue holds client::Replica's 128 work requests less one:
    // four write + persist pairs (so that the next persist is deferred) and
    // plain writes 1 MiB on.
    constexpr size_t kPersists = 4, kWrites = 119;
    std::vector<std::future<client::Status>> done;
    std::atomic<pid_t> tid{0};
    std::thread late;
    {
        Stopped stopped(daemons_[0]->process().pid());
        ASSERT_TRUE(stopped.stopped());
        for (size_t i = 0; i < kPersists; ++i)
            done.push_back(region.WritePersistAsync(i * kRecord, RecordBytes(i)));
        for (size_t i = 0; i < kWrites; ++i)
            done.push_back(
                region.WriteAsync(kExtent + i * kRecord, RecordBytes(kPersists + 1 + i)));
        // The next neighbour's write finds no room and waits, the Region's
        // mutex released, until the daemon answers; its persist is one the
        // group would take.
        std::promise<std::future<client::Status>> submitted;
        auto late_done = submitted.get_future();
        late = std::thread([&] {
            tid = ThreadId();
            submitted.set_value(
                region.WritePersistAsync(kPersists * kRecord, RecordBytes(kPersists)));
        });
        while (tid.load() == 0 || BlockedIn(tid.load()) < 0)
            std::this_thread::yield();
        // Resumed here: the progress thread collects the answers and may
        // post the forming group before the waiting write gets the mutex.
        stopped.Resume();
        done.push_back(late_done.get());
    }
    late.join();
    for (auto &f : done) {
        const client::Status s = f.get();
        EXPECT_TRUE(s.ok()) << s.ToString();
    }
    for (size_t i = 0; i <= kPersists; ++i) {
        std::vector<std::byte> in(kRecord);
        ASSERT_TRUE(region.Read(i * kRecord, in, 0).ok());
        EXPECT_TRUE(in == RecordBytes(i)) << "record " << i;
    }
}

}  // namespace
}  // namespace rpma::testing
