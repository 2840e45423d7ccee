// Many operations in flight on one Region (issue #25): asynchronous
// submissions post at once and the progress thread completes them. Pinned
// with real rpmads on loopback:
// - 48 writes submitted to a stopped daemon: more than 16 reach its socket
//   before any is answered (a worker running the synchronous calls had one
//   there, eight staging slots eight);
// - callbacks run once each, in submission order, on one thread that is not
//   a submitter's, a refused submission among them; one may submit more,
//   past max_in_flight; ~Region returns after the last; reads at depth
//   return the bytes written;
// - four threads with 64 writes outstanding each while one replica's rpmad
//   is killed, restarted and repaired, and then another's network is cut:
//   every acknowledged write is on every replica in sync at the end, byte
//   for byte (the fixture's history), and no write failed.
// RPMA_REPLICA_SET_TEST_ITERATIONS=N repeats the last one N times (the long
// mode).
#include <cstring>
#include <functional>

#include "tests/integration/replica_set_fixture.h"

namespace rpma::testing {
namespace {

class ReplicaSetDepthTest : public ReplicaSetTest {
  protected:
    std::unique_ptr<Region> OpenWith(size_t quorum, size_t max_in_flight,
                                     std::vector<std::string> data = {},
                                     std::chrono::milliseconds timeout = {}) {
        OpenOptions options;
        options.quorum = quorum;
        options.max_in_flight = max_in_flight;
        if (timeout.count() > 0)
            options.operation_timeout = timeout;
        auto region = Open(options, Set(std::move(data)));
        EXPECT_TRUE(region.ok()) << region.status().ToString();
        return region.ok() ? std::move(*region) : nullptr;
    }
};

TEST_F(ReplicaSetDepthTest, WritesAreOnAStoppedDaemonsSocketTogether) {
    ASSERT_NO_FATAL_FAILURE(StartDaemons(1));
    auto region = OpenWith(1, 0);
    ASSERT_NE(region, nullptr);
    constexpr size_t kWrites = 48;  // 96 work requests: within one queue
    std::vector<std::future<client::Status>> writes;
    {
        Stopped stopped(daemons_[0]->process().pid());
        ASSERT_TRUE(stopped.stopped());
        for (size_t i = 0; i < kWrites; ++i)
            writes.push_back(region->WritePersistAsync(i * kRecord, RecordBytes(i)));
        // Bounded well within operation_timeout; the writes arrive in
        // milliseconds.
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
        size_t unread = 0;
        while ((unread = Unread(daemons_[0]->data_port())) < 16 * kRecord &&
               std::chrono::steady_clock::now() < deadline)
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        // The daemon's socket takes about 27 of them before its receive
        // buffer is full: more than 8 (the fixed slots' limit) or 1.
        EXPECT_GE(unread, 16 * kRecord) << "the writes were not in flight together";
        for (auto &w : writes)
            EXPECT_EQ(w.wait_for(std::chrono::seconds(0)), std::future_status::timeout)
                << "a write was acknowledged by a stopped daemon";
    }
    for (size_t i = 0; i < kWrites; ++i) {
        const client::Status s = writes[i].get();
        EXPECT_TRUE(s.ok()) << s.ToString();
        if (s.ok())
            acknowledged_.insert(i);
    }
    region.reset();
    ExpectHistory({0});
}

TEST_F(ReplicaSetDepthTest, CallbacksRunInOrderOnTheProgressThreadAndMaySubmitMore) {
    ASSERT_NO_FATAL_FAILURE(StartDaemons(3));
    constexpr size_t kMaxInFlight = 8, kWrites = 100, kRefused = 37, kChained = 3;
    auto region = OpenWith(3, kMaxInFlight);
    ASSERT_NE(region, nullptr);
    std::mutex mu;
    std::vector<size_t> order;
    std::vector<client::Status> statuses(kWrites + kChained);
    std::set<std::thread::id> threads;
    Region *const r = region.get();
    std::function<void(size_t)> submit = [&](size_t i) {
        // Beyond the region: refused, and completed in its turn.
        const uint64_t offset = i == kRefused ? kRegionSize : i * kRecord;
        r->WritePersistAsync(offset, RecordBytes(i), [&, i](client::Status s) {
            {
                std::lock_guard lock(mu);
                order.push_back(i);
                statuses[i] = s;
                threads.insert(std::this_thread::get_id());
            }
            // From a callback, past max_in_flight: no wait for itself.
            if (i == kWrites / 2)
                for (size_t k = 0; k < kChained; ++k)
                    submit(kWrites + k);
        });
    };
    for (size_t i = 0; i < kWrites; ++i)
        submit(i);
    // The writes are done before the reads are posted (one Region, one
    // thread: the reads come after them in order).
    std::vector<std::byte> in(32 * kRecord);
    std::vector<std::future<client::Status>> reads;
    for (size_t k = 0; k < 32; ++k)
        reads.push_back(
            region->ReadAsync(k * kRecord, std::span(in).subspan(k * kRecord, kRecord), k % 3));
    for (auto &read : reads) {
        const client::Status s = read.get();
        EXPECT_TRUE(s.ok()) << s.ToString();
    }
    for (size_t k = 0; k < 32; ++k)
        EXPECT_TRUE(std::equal(in.begin() + k * kRecord, in.begin() + (k + 1) * kRecord,
                               RecordBytes(k).begin()))
            << "read " << k << " at depth returned other bytes";
    region.reset();  // returns after every callback ran
    ASSERT_EQ(order.size(), kWrites + kChained);
    // The main thread's in its order, the callback's in its own (where the
    // chained ones fall among the others depends on when they were posted).
    std::vector<size_t> mine, chained;
    for (size_t i : order)
        (i < kWrites ? mine : chained).push_back(i);
    EXPECT_TRUE(std::is_sorted(mine.begin(), mine.end())) << "completed out of submission order";
    EXPECT_TRUE(std::is_sorted(chained.begin(), chained.end()));
    EXPECT_EQ(threads.size(), 1u);
    EXPECT_EQ(threads.count(std::this_thread::get_id()), 0u);
    for (size_t i = 0; i < kWrites + kChained; ++i) {
        if (i == kRefused) {
            EXPECT_EQ(statuses[i].code(), StatusCode::kInvalidArgument) << statuses[i].ToString();
            continue;
        }
        EXPECT_TRUE(statuses[i].ok()) << i << ": " << statuses[i].ToString();
        acknowledged_.insert(i);
    }
    ExpectHistory({0, 1, 2});
}

TEST_F(ReplicaSetDepthTest, FourThreadsSixtyFourOutstandingThroughAKillARepairAndACut) {
    for (int iteration = 0; iteration < Iterations(); ++iteration) {
        SCOPED_TRACE("iteration " + std::to_string(iteration));
        ASSERT_NO_FATAL_FAILURE(StartDaemons(3));
        // Replica 1's data plane goes through a proxy that cuts it.
        CutProxy data(daemons_[1]->data_port());
        ASSERT_NE(data.port(), 0);
        constexpr size_t kThreads = 4, kDepth = 64, kStride = 4000;
        // Long enough that a healthy rpmad is not taken for a hung one: on a
        // loaded machine, and while the stall this case found is open. After
        // the cut replica is marked failed, the two left sometimes answer
        // nothing for over a second: at a 1.5 s timeout this case failed 10
        // runs in 33 with TEST_TMPDIR on the disk (2 in 10 with only the
        // pools on a tmpfs), none in 20 with TEST_TMPDIR on /dev/shm. Not
        // the fixture's 10 s, which it shortens to 1.5 s.
        auto region = OpenWith(1, kThreads * kDepth, {"", data.address(), ""},
                               std::chrono::milliseconds(9000));
        ASSERT_NE(region, nullptr);

        std::mutex mu;
        std::condition_variable cv;
        size_t acks = 0;
        std::vector<std::string> errors;
        std::atomic<bool> stop{false};
        // Each thread keeps kDepth writes outstanding over its records, over
        // and over (a record's bytes are always the same), until stopped.
        auto stream = [&](size_t t) {
            size_t outstanding = 0, last_done = 0;
            std::mutex thread_mu;
            std::condition_variable thread_cv;
            const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
            for (size_t n = 1; !stop && std::chrono::steady_clock::now() < deadline; ++n) {
                {
                    std::unique_lock lock(thread_mu);
                    thread_cv.wait(lock, [&] { return outstanding < kDepth; });
                    ++outstanding;
                }
                const size_t record = t * kStride + n % kStride;
                region->WritePersistAsync(
                    record * kRecord, RecordBytes(record), [&, n, record](client::Status s) {
                        {
                            std::lock_guard lock(mu);
                            if (s.ok()) {
                                acknowledged_.insert(record);
                                ++acks;
                            } else {
                                errors.push_back(s.ToString());
                            }
                            if (n < last_done)
                                errors.push_back("thread's writes completed out of order");
                            last_done = n;
                        }
                        cv.notify_all();
                        std::lock_guard lock(thread_mu);
                        --outstanding;
                        thread_cv.notify_one();
                    });
            }
            std::unique_lock lock(thread_mu);
            thread_cv.wait(lock, [&] { return outstanding == 0; });
        };
        std::vector<std::thread> threads;
        for (size_t t = 0; t < kThreads; ++t)
            threads.emplace_back(stream, t);
        // Waits (bounded) for `more` acknowledgements after now.
        auto await_acks = [&](size_t more) {
            std::unique_lock lock(mu);
            const size_t target = acks + more;
            return cv.wait_for(lock, std::chrono::seconds(30), [&] { return acks >= target; });
        };
        auto await_state = [&](size_t r, ReplicaState state) {
            for (int k = 0; k < 3000 && region->replicas()[r].state != state; ++k)
                if (!await_acks(1))
                    break;
            return region->replicas()[r].state == state;
        };
        EXPECT_TRUE(await_acks(1000));
        daemons_[2]->process().Kill();
        EXPECT_TRUE(await_state(2, ReplicaState::kFailed));
        EXPECT_TRUE(await_acks(500));
        ASSERT_NO_FATAL_FAILURE(Restart(2));
        (void)Repair(*region, 2);  // while the threads keep 256 writes in flight
        EXPECT_TRUE(await_acks(500));
        data.Cut();
        EXPECT_TRUE(await_state(1, ReplicaState::kFailed));
        EXPECT_TRUE(await_acks(500));
        stop = true;
        for (auto &thread : threads)
            thread.join();
        EXPECT_TRUE(errors.empty()) << errors.size() << " failed, the first: " << errors.front();
        const auto infos = region->replicas();
        EXPECT_EQ(infos[0].state, ReplicaState::kLive) << infos[0].error.ToString();
        EXPECT_EQ(infos[1].state, ReplicaState::kFailed);
        EXPECT_EQ(infos[2].state, ReplicaState::kLive) << infos[2].error.ToString();
        region.reset();
        ExpectHistory({0, 2});
        for (auto &d : daemons_)
            d.reset();
        acknowledged_.clear();
    }
}

}  // namespace
}  // namespace rpma::testing
