// Several threads on one Region at once (issue #25, first step): a thread
// holds the Region's mutex to post, not to wait, so operations of different
// threads are in flight together. Pinned here with real rpmads on loopback:
// - four threads' writes are all on a stopped daemon's socket before any is
//   answered (with one mutex held while waiting, only the first would be);
// - four threads writing and persisting distinct records and overwriting
//   shared ones, with one and with three replicas, a replica's rpmad killed
//   mid-stream in the latter: every acknowledged record is then on every
//   replica in sync byte for byte (the fixture's history), and each shared
//   record holds the same whole write on every replica in sync (the
//   replicas executed overlapping writes in one order).
#include <cstring>
#include <functional>

#include "tests/integration/replica_set_fixture.h"

namespace rpma::testing {
namespace {

constexpr size_t kThreads = 4;
constexpr size_t kPerThread = 48;
// Distinct records: thread t writes t * kStride + k.
constexpr size_t kStride = 1000;
// Shared records, overwritten by every thread.
constexpr size_t kSharedFirst = 5000;
constexpr size_t kShared = 4;

// A shared record's bytes: writer `thread`'s `n`th write of it, whole
// (header then a pattern that depends on all three).
std::vector<std::byte> SharedBytes(size_t record, uint32_t thread, uint32_t n) {
    std::vector<std::byte> bytes(kRecord);
    std::memcpy(bytes.data(), &thread, sizeof thread);
    std::memcpy(bytes.data() + 4, &n, sizeof n);
    for (size_t k = 8; k < kRecord; ++k)
        bytes[k] = static_cast<std::byte>((record * 131 + thread * 31 + n * 7 + k) & 0xff);
    return bytes;
}

class ReplicaSetThreadsTest : public ReplicaSetTest {
  protected:
    std::unique_ptr<Region> OpenWriter(size_t quorum) {
        OpenOptions options;
        options.create_size = kRegionSize;
        options.quorum = quorum;
        options.operation_timeout = std::chrono::milliseconds(5000);
        auto region = Open(options, Set());
        EXPECT_TRUE(region.ok()) << region.status().ToString();
        return region.ok() ? std::move(*region) : nullptr;
    }

    void Acknowledged(size_t record) {
        std::lock_guard lock(history_mu_);
        acknowledged_.insert(record);
        ++acknowledged_count_;
        progress_cv_.notify_all();
    }

    // Daemon 0 stopped, every thread writes one record: all of them reach
    // its socket before it answers any, then all are acknowledged.
    void ExpectWritesInFlightTogether(Region &region) {
        std::vector<std::future<client::Status>> writes;
        {
            Stopped stopped(daemons_[0]->process().pid());
            ASSERT_TRUE(stopped.stopped());
            for (size_t t = 0; t < kThreads; ++t)
                writes.push_back(std::async(std::launch::async, [&region, t] {
                    return region.WritePersist(t * kStride * kRecord, RecordBytes(t * kStride));
                }));
            // Bounded well within operation_timeout; the writes arrive in
            // milliseconds.
            const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
            size_t unread = 0;
            while ((unread = Unread(daemons_[0]->data_port())) < kThreads * kRecord &&
                   std::chrono::steady_clock::now() < deadline)
                std::this_thread::sleep_for(std::chrono::milliseconds(1));
            EXPECT_GE(unread, kThreads * kRecord)
                << "the threads' writes were not in flight together";
            for (auto &w : writes)
                EXPECT_EQ(w.wait_for(std::chrono::seconds(0)), std::future_status::timeout)
                    << "a write was acknowledged by a stopped daemon";
        }
        for (size_t t = 0; t < kThreads; ++t) {
            const client::Status s = writes[t].get();
            EXPECT_TRUE(s.ok()) << s.ToString();
            if (s.ok())
                Acknowledged(t * kStride);
        }
    }

    // Every thread writes its distinct records (WritePersist, or Write then
    // Persist) and overwrites the shared ones; `mid_stream` runs once a
    // third of the writes were acknowledged.
    void Stream(Region &region, const std::function<void()> &mid_stream) {
        auto run = [&](uint32_t t) -> client::Status {
            uint32_t shared_writes = 0;
            for (size_t k = 1; k < kPerThread; ++k) {
                const size_t i = t * kStride + k;
                client::Status s;
                if (k % 2 == 0) {
                    s = region.WritePersist(i * kRecord, RecordBytes(i));
                } else {
                    s = region.Write(i * kRecord, RecordBytes(i));
                    if (s.ok())
                        s = region.Persist(i * kRecord, kRecord);
                }
                if (!s.ok())
                    return s;
                Acknowledged(i);
                const size_t shared = kSharedFirst + k % kShared;
                s = region.WritePersist(shared * kRecord, SharedBytes(shared, t, shared_writes++));
                if (!s.ok())
                    return s;
            }
            return client::Status();
        };
        std::vector<std::future<client::Status>> threads;
        for (uint32_t t = 0; t < kThreads; ++t)
            threads.push_back(std::async(std::launch::async, run, t));
        {
            std::unique_lock lock(history_mu_);
            EXPECT_TRUE(progress_cv_.wait_for(lock, std::chrono::seconds(20), [&] {
                return acknowledged_count_ >= kThreads * kPerThread / 3;
            }));
        }
        mid_stream();
        for (auto &thread : threads) {
            const client::Status s = thread.get();
            EXPECT_TRUE(s.ok()) << s.ToString();
        }
    }

    // Each shared record: one whole write of one thread, the same on every
    // replica in sync.
    void ExpectSharedAgree(Region &region) {
        for (size_t shared = kSharedFirst; shared < kSharedFirst + kShared; ++shared) {
            std::vector<std::byte> first;
            const auto infos = region.replicas();
            for (size_t r = 0; r < infos.size(); ++r) {
                if (infos[r].state != ReplicaState::kLive)
                    continue;
                std::vector<std::byte> in(kRecord);
                const client::Status s = region.Read(shared * kRecord, in, r);
                ASSERT_TRUE(s.ok()) << s.ToString();
                uint32_t thread = 0, n = 0;
                std::memcpy(&thread, in.data(), sizeof thread);
                std::memcpy(&n, in.data() + 4, sizeof n);
                ASSERT_LT(thread, kThreads) << "record " << shared << " on replica " << r;
                EXPECT_TRUE(in == SharedBytes(shared, thread, n))
                    << "record " << shared << " on replica " << r << " is torn";
                if (first.empty())
                    first = in;
                EXPECT_TRUE(in == first) << "record " << shared << ": replica " << r
                                         << " executed the overlapping writes in another order";
            }
        }
    }

    std::condition_variable progress_cv_;
    size_t acknowledged_count_ = 0;
};

TEST_F(ReplicaSetThreadsTest, OneReplicaFourThreadsWriteAtOnceAndEveryWriteLands) {
    ASSERT_NO_FATAL_FAILURE(StartDaemons(1));
    auto region = OpenWriter(1);
    ASSERT_NE(region, nullptr);
    ASSERT_NO_FATAL_FAILURE(ExpectWritesInFlightTogether(*region));
    ASSERT_NO_FATAL_FAILURE(Stream(*region, [] {}));
    ASSERT_NO_FATAL_FAILURE(ExpectSharedAgree(*region));
    region.reset();
    ExpectHistory({0});
}

TEST_F(ReplicaSetThreadsTest, ThreeReplicasOneKilledMidStreamEveryAcknowledgedWriteOnTheOthers) {
    ASSERT_NO_FATAL_FAILURE(StartDaemons(3));
    auto region = OpenWriter(2);
    ASSERT_NE(region, nullptr);
    ASSERT_NO_FATAL_FAILURE(ExpectWritesInFlightTogether(*region));
    ASSERT_NO_FATAL_FAILURE(Stream(*region, [&] { daemons_[2]->process().Kill(); }));
    const auto infos = region->replicas();
    EXPECT_EQ(infos[2].state, ReplicaState::kFailed);
    EXPECT_EQ(infos[0].state, ReplicaState::kLive);
    EXPECT_EQ(infos[1].state, ReplicaState::kLive);
    ASSERT_NO_FATAL_FAILURE(ExpectSharedAgree(*region));
    region.reset();
    ExpectHistory({0, 1});
}

}  // namespace
}  // namespace rpma::testing
