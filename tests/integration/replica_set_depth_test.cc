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
//   for byte (the fixture's history), and no write failed;
// - a replica is marked failed for its own silence only: not for the time
//   a wait for queue room spent behind another replica, marked failed.
// RPMA_REPLICA_SET_TEST_ITERATIONS=N repeats the last one N times (the long
// mode).
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <mutex>
#include <set>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

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

// kThreads threads, each keeping kDepth writes outstanding over its own
// records, over and over (a record's bytes are always the same), until
// Stop (or a minute). Acknowledged records go to *acknowledged.
class Streams {
  public:
    static constexpr size_t kThreads = 4, kDepth = 64, kStride = 4000;

    Streams(Region &region, std::set<size_t> *acknowledged)
        : region_(region), acknowledged_(acknowledged) {
        for (size_t t = 0; t < kThreads; ++t)
            threads_.emplace_back([this, t] { Stream(t); });
    }
    ~Streams() { (void)Stop(); }

    // Waits (bounded) for `more` acknowledgements after now.
    bool AwaitAcks(size_t more) {
        std::unique_lock lock(mu_);
        const size_t target = acks_ + more;
        return cv_.wait_for(lock, std::chrono::seconds(30), [&] { return acks_ >= target; });
    }
    // Ends the streams once their writes completed; the failures.
    std::vector<std::string> Stop() {
        stop_ = true;
        for (auto &thread : threads_)
            if (thread.joinable())
                thread.join();
        std::lock_guard lock(mu_);
        return errors_;
    }

  private:
    void Stream(size_t t) {
        size_t outstanding = 0, last_done = 0;
        std::mutex thread_mu;
        std::condition_variable thread_cv;
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
        for (size_t n = 1; !stop_ && std::chrono::steady_clock::now() < deadline; ++n) {
            {
                std::unique_lock lock(thread_mu);
                thread_cv.wait(lock, [&] { return outstanding < kDepth; });
                ++outstanding;
            }
            const size_t record = t * kStride + n % kStride;
            region_.WritePersistAsync(
                record * kRecord, RecordBytes(record), [&, n, record](client::Status s) {
                    {
                        std::lock_guard lock(mu_);
                        if (s.ok()) {
                            acknowledged_->insert(record);
                            ++acks_;
                        } else {
                            errors_.push_back(s.ToString());
                        }
                        if (n < last_done)
                            errors_.push_back("thread's writes completed out of order");
                        last_done = n;
                    }
                    cv_.notify_all();
                    std::lock_guard lock(thread_mu);
                    --outstanding;
                    thread_cv.notify_one();
                });
        }
        std::unique_lock lock(thread_mu);
        thread_cv.wait(lock, [&] { return outstanding == 0; });
    }

    Region &region_;
    std::set<size_t> *const acknowledged_;
    std::mutex mu_;
    std::condition_variable cv_;
    size_t acks_ = 0;
    std::vector<std::string> errors_;
    std::atomic<bool> stop_{false};
    std::vector<std::thread> threads_;
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

TEST_F(ReplicaSetDepthTest, WithoutWaitingForRoomAFullRegionRefusesSubmissionsAtOnce) {
    ASSERT_NO_FATAL_FAILURE(StartDaemons(1));
    OpenOptions options;
    options.max_in_flight = 2;
    options.wait_for_room = false;
    auto region = Open(options, Set());
    ASSERT_TRUE(region.ok()) << region.status().ToString();
    std::vector<std::future<client::Status>> writes;
    {
        // The daemon answers nothing: the first two stay outstanding.
        Stopped stopped(daemons_[0]->process().pid());
        ASSERT_TRUE(stopped.stopped());
        for (size_t i = 0; i < 2; ++i)
            writes.push_back((*region)->WritePersistAsync(i * kRecord, RecordBytes(i)));
        // A future: ready at once, refused.
        auto refused = (*region)->WritePersistAsync(2 * kRecord, RecordBytes(2));
        ASSERT_EQ(refused.wait_for(std::chrono::seconds(0)), std::future_status::ready);
        EXPECT_EQ(refused.get().code(), client::StatusCode::kResourceExhausted);
        // A callback: run on this thread before the call returns.
        bool ran = false;
        std::thread::id ran_on;
        client::Status got;
        (*region)->PersistAsync(0, kRecord, [&](client::Status s) {
            ran = true;
            ran_on = std::this_thread::get_id();
            got = std::move(s);
        });
        EXPECT_TRUE(ran);
        EXPECT_EQ(ran_on, std::this_thread::get_id());
        EXPECT_EQ(got.code(), client::StatusCode::kResourceExhausted) << got.ToString();
    }
    for (size_t i = 0; i < writes.size(); ++i) {
        const client::Status s = writes[i].get();
        EXPECT_TRUE(s.ok()) << s.ToString();
        if (s.ok())
            acknowledged_.insert(i);
    }
    // Completed: room again.
    const client::Status third = (*region)->WritePersistAsync(2 * kRecord, RecordBytes(2)).get();
    EXPECT_TRUE(third.ok()) << third.ToString();
    if (third.ok())
        acknowledged_.insert(2);
    region->reset();
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
        // Short enough that the cut is found within the run; a healthy
        // replica is judged by its own silence, which on a loaded machine
        // stays far below it.
        auto region = OpenWith(1, Streams::kThreads * Streams::kDepth, {"", data.address(), ""},
                               std::chrono::milliseconds(3000));
        ASSERT_NE(region, nullptr);
        Streams streams(*region, &acknowledged_);
        auto await_state = [&](size_t r, ReplicaState state) {
            for (int k = 0; k < 3000 && region->replicas()[r].state != state; ++k)
                if (!streams.AwaitAcks(1))
                    break;
            return region->replicas()[r].state == state;
        };
        EXPECT_TRUE(streams.AwaitAcks(1000));
        daemons_[2]->process().Kill();
        EXPECT_TRUE(await_state(2, ReplicaState::kFailed));
        EXPECT_TRUE(streams.AwaitAcks(500));
        ASSERT_NO_FATAL_FAILURE(Restart(2));
        (void)Repair(*region, 2);  // while the threads keep 256 writes in flight
        EXPECT_TRUE(streams.AwaitAcks(500));
        data.Cut();
        EXPECT_TRUE(await_state(1, ReplicaState::kFailed));
        EXPECT_TRUE(streams.AwaitAcks(500));
        const std::vector<std::string> errors = streams.Stop();
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

// operation_timeout is each replica's own: how long it may owe an answer
// without giving one, not how long an operation waited. Replica 0's daemon
// is stopped: the writers' waits for room on its full queue begin. Three
// quarters of a timeout later replica 1's network stalls, its queue full of
// reads. When replica 0 is marked failed, a timeout after its stop, the
// writers' waits find replica 1 without room too, silent for a quarter of a
// timeout: it must not be marked failed with replica 0 (it was, 4 runs in 4:
// the wait's own deadline had passed), and once the network flows again it
// answers everything.
TEST_F(ReplicaSetDepthTest, AReplicaIsJudgedByItsOwnSilenceNotByTheWaitThatFoundIt) {
    ASSERT_NO_FATAL_FAILURE(StartDaemons(3));
    CutProxy data(daemons_[1]->data_port());
    ASSERT_NE(data.port(), 0);
    constexpr auto kTimeout = std::chrono::milliseconds(2000);
    // Reads from replica 1 complete in submission order behind the writes
    // stuck on replica 0: room for them all, so that they keep its queue
    // full (a MiB each: a few thousand a second).
    constexpr size_t kReads = 8192, kReadBytes = size_t{1} << 20;
    std::mutex mu;
    std::condition_variable cv;
    std::vector<std::string> failures;
    OpenOptions options;
    options.quorum = 1;
    options.max_in_flight = Streams::kThreads * Streams::kDepth + kReads;
    options.operation_timeout = kTimeout;
    options.on_failure = [&](const client::Status &s) {
        std::lock_guard lock(mu);
        failures.push_back(s.ToString());
        cv.notify_all();
    };
    auto opened = Open(options, Set({"", data.address(), ""}));
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    std::unique_ptr<Region> region = std::move(*opened);
    // Reads from replica 1 into a registered buffer (no staging extent,
    // which a write stuck on replica 0 would hold up).
    std::vector<std::byte> in(kReadBytes);
    ASSERT_TRUE(region->RegisterBuffer(in).ok());
    size_t reads_outstanding = 0;
    std::vector<std::string> read_errors;
    std::jthread reader([&](std::stop_token stop) {
        for (size_t n = 0; !stop.stop_requested() && n < 1000000; ++n) {
            {
                std::unique_lock lock(mu);
                if (!cv.wait_for(lock, 4 * kTimeout, [&] { return reads_outstanding < kReads; }))
                    break;
                ++reads_outstanding;
            }
            region->ReadAsync(0, in, 1, [&](client::Status s) {
                std::lock_guard lock(mu);
                if (!s.ok())
                    read_errors.push_back(s.ToString());
                --reads_outstanding;
                cv.notify_all();
            });
        }
        std::unique_lock lock(mu);
        cv.wait_for(lock, 4 * kTimeout, [&] { return reads_outstanding == 0; });
    });
    const auto stopped_at = std::chrono::steady_clock::now();
    Stopped first(daemons_[0]->process().pid());
    ASSERT_TRUE(first.stopped());
    Streams streams(*region, &acknowledged_);
    std::this_thread::sleep_until(stopped_at + kTimeout * 3 / 4);  // the fault's schedule
    data.Hold();
    {
        std::unique_lock lock(mu);
        ASSERT_TRUE(cv.wait_for(lock, 5 * kTimeout, [&] { return !failures.empty(); }))
            << "the stopped replica 0 was never marked failed";
        // A quarter of a timeout more of replica 1's silence.
        EXPECT_FALSE(cv.wait_for(lock, kTimeout / 4, [&] { return failures.size() > 1; }))
            << "replica 1, silent for less than operation_timeout, was marked failed: "
            << failures.back();
    }
    data.Release();
    EXPECT_TRUE(streams.AwaitAcks(500));
    const std::vector<std::string> errors = streams.Stop();
    reader.request_stop();
    reader.join();
    EXPECT_TRUE(errors.empty()) << errors.size() << " failed, the first: " << errors.front();
    EXPECT_TRUE(read_errors.empty())
        << read_errors.size() << " failed, the first: " << read_errors.front();
    const auto infos = region->replicas();
    EXPECT_EQ(infos[0].state, ReplicaState::kFailed);
    EXPECT_NE(infos[0].error.ToString().find("no completion within 2000 ms"), std::string::npos)
        << infos[0].error.ToString();
    EXPECT_EQ(infos[1].state, ReplicaState::kLive) << infos[1].error.ToString();
    EXPECT_EQ(infos[2].state, ReplicaState::kLive) << infos[2].error.ToString();
    EXPECT_TRUE(region->UnregisterBuffer(in).ok());
    region.reset();
    first.Resume();
    ExpectHistory({1, 2});
}

}  // namespace
}  // namespace rpma::testing
