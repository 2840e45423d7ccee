// What a replica marked failed may still do, against three real rpmads, one
// of them stopped (SIGSTOP) so that it lags for real. Marking it failed
// closes its data-plane connection at once: the staging slot a timed-out
// read from it used is free for the live replicas' writes from then on, and
// its late answer must not land there (the live replicas would store, and
// confirm, its bytes). Nor does a write still queued to it go out once its
// slot is reused (it would carry another write's bytes), or once the
// region's end freed the ring (a use after free: run under
// -fsanitize=address). Readd of a replica that was stopped with writes
// queued waits until its daemon has ended the old session, so that none of
// those writes lands over the resync's copy.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <condition_variable>
#include <future>
#include <memory>
#include <mutex>
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

constexpr size_t kSlot = size_t{1} << 20;  // a staging slot (region.h)
constexpr uint64_t kRegionSize = uint64_t{16} << 20;
constexpr size_t kLaggard = 2;
constexpr char kRegion[] = "failure";

// A TCP proxy on 127.0.0.1 to 127.0.0.1:target for a replica's data plane.
// Hold() holds what the connections open now send to the daemon: the proxy
// keeps reading it (the client sees it sent) but keeps it, its end
// included, until Release() passes it all on: a stream the daemon works
// through late, as behind a stopped daemon or a slow network. Connections
// made later are forwarded at once.
class HoldingProxy {
  public:
    explicit HoldingProxy(int target) : target_(target) {
        listen_fd_ = ListenOnLoopback(&port_);
        if (listen_fd_ >= 0)
            threads_.emplace_back([this] { Accept(); });
    }
    ~HoldingProxy() {
        Release();
        {
            std::lock_guard lock(mu_);
            stopping_ = true;
            // Wakes the threads blocked in accept or read.
            shutdown(listen_fd_, SHUT_RDWR);
            for (auto &link : links_) {
                shutdown(link->from, SHUT_RDWR);
                shutdown(link->to, SHUT_RDWR);
            }
        }
        for (auto &t : threads_)
            t.join();
        close(listen_fd_);
        for (auto &link : links_) {
            close(link->from);
            close(link->to);
        }
    }

    // 0 when the proxy could not listen.
    int port() const { return port_; }
    std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
    void Hold() {
        std::lock_guard lock(mu_);
        for (auto &link : links_) {
            std::lock_guard held(link->mu);
            link->held = true;
        }
    }
    // Waits, up to `timeout`, until the proxy holds some bytes.
    bool AwaitHeld(std::chrono::milliseconds timeout) {
        std::unique_lock lock(held_mu_);
        return held_cv_.wait_for(lock, timeout, [this] { return held_bytes_ > 0; });
    }
    // Passes on what was held, and an end that came meanwhile.
    void Release() {
        std::lock_guard lock(mu_);
        for (auto &link : links_) {
            std::lock_guard held(link->mu);
            if (!link->held)
                continue;
            link->held = false;
            WriteAll(link->to, link->pending.data(), link->pending.size());
            link->pending.clear();
            if (link->ended)
                shutdown(link->to, SHUT_WR);
        }
    }

  private:
    // One direction of a connection; `mu` guards the rest and the writes to
    // `to`, so that what was held goes out first.
    struct Link {
        Link(int from_fd, int to_fd) : from(from_fd), to(to_fd) {}
        const int from;
        const int to;
        std::mutex mu;
        bool held = false;
        bool ended = false;
        std::vector<char> pending;
    };

    static void WriteAll(int fd, const char *data, size_t size) {
        for (size_t done = 0; done < size;) {
            // MSG_NOSIGNAL: an end that closed (the client breaks a failed
            // replica's connection) is no reason to kill the test (SIGPIPE).
            const ssize_t w = send(fd, data + done, size - done, MSG_NOSIGNAL);
            if (w <= 0)
                return;
            done += static_cast<size_t>(w);
        }
    }

    void Accept() {
        for (;;) {
            const int client = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
            if (client < 0)
                return;  // shut down
            const int server = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
            const sockaddr_in target = LoopbackAddress(target_);
            std::lock_guard lock(mu_);
            if (stopping_ ||
                connect(server, reinterpret_cast<const sockaddr *>(&target), sizeof(target)) != 0) {
                close(client);
                close(server);
                continue;
            }
            // The client-to-daemon link owns both sockets (closes them).
            links_.push_back(std::make_unique<Link>(client, server));
            downs_.push_back(std::make_unique<Link>(server, client));
            Link *up = links_.back().get(), *down = downs_.back().get();
            threads_.emplace_back([this, up] { Forward(*up); });
            threads_.emplace_back([this, down] { Forward(*down); });
        }
    }

    void Forward(Link &link) {
        char buffer[64 * 1024];
        for (;;) {
            const ssize_t n = read(link.from, buffer, sizeof(buffer));
            std::lock_guard lock(link.mu);
            if (n <= 0) {
                link.ended = true;
                if (!link.held)
                    shutdown(link.to, SHUT_WR);
                return;
            }
            if (link.held) {
                link.pending.insert(link.pending.end(), buffer, buffer + n);
                std::lock_guard count(held_mu_);
                held_bytes_ += static_cast<size_t>(n);
                held_cv_.notify_all();
            } else
                WriteAll(link.to, buffer, static_cast<size_t>(n));
        }
    }

    const int target_;
    int listen_fd_ = -1;
    int port_ = 0;
    std::mutex mu_;  // links_, downs_, threads_, stopping_
    bool stopping_ = false;
    std::vector<std::unique_ptr<Link>> links_;  // client to daemon: Hold's
    std::vector<std::unique_ptr<Link>> downs_;  // daemon to client
    std::vector<std::thread> threads_;
    std::mutex held_mu_;  // held_bytes_; taken under a Link's mu
    std::condition_variable held_cv_;
    size_t held_bytes_ = 0;  // ever held
};

class ClientFailureTest : public ::testing::Test {
  protected:
    void SetUp() override { ASSERT_EQ(StartEach(daemons_, "failure-pool"), ""); }
    // Quorum 2 of the three; `timeout` is operation_timeout;
    // `data_addresses` as in ReplicaSet.
    std::unique_ptr<Region> Open(std::chrono::milliseconds timeout,
                                 std::vector<std::string> data_addresses = {}) {
        ReplicaSet set;
        for (const auto &d : daemons_)
            set.addresses.push_back(d->control());
        set.data_addresses = std::move(data_addresses);
        OpenOptions options;
        options.create_size = kRegionSize;
        options.quorum = 2;
        options.operation_timeout = timeout;
        auto region = Region::Open(set, kRegion, options);
        EXPECT_TRUE(region.ok()) << region.status().ToString();
        return region.ok() ? std::move(*region) : nullptr;
    }
    pid_t Pid(size_t i) { return daemons_[i]->process().pid(); }
    // The sessions daemon `i` has open on the region (-1: it did not answer).
    int Sessions(size_t i) {
        v1::ListSessionsRequest request;
        request.set_region(kRegion);
        v1::ListSessionsResponse list;
        if (!daemons_[i]->Sessions()->ListSessions(Rpmad::Context().get(), request, &list).ok())
            return -1;
        return list.sessions_size();
    }
    // Waits, up to 20 s, until daemon `i` has `count` sessions on the region.
    bool AwaitSessions(size_t i, int count) {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
        while (Sessions(i) != count) {
            if (std::chrono::steady_clock::now() >= deadline)
                return false;
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
        return true;
    }
    // Replica `r` holds `expected` at `offset` (read into a registered
    // buffer: the read does not go through the staging ring).
    static void ExpectHolds(Region &region, size_t r, uint64_t offset,
                            const std::vector<std::byte> &expected) {
        std::vector<std::byte> in(expected.size());
        ASSERT_TRUE(region.RegisterBuffer(in).ok());
        const client::Status s = region.Read(offset, in, r);
        ASSERT_TRUE(s.ok()) << "replica " << r << ": " << s.ToString();
        const auto diverged = std::mismatch(in.begin(), in.end(), expected.begin());
        EXPECT_TRUE(diverged.first == in.end())
            << "replica " << r << " holds other bytes than those written at " << offset
            << ", from byte " << (diverged.first - in.begin()) << " on";
        EXPECT_TRUE(region.UnregisterBuffer(in).ok());
    }

    // Writes `stale` (12 MiB, staged) with the laggard stopped: its socket
    // takes a few MiB, the rest of the first eight pieces waits in the
    // client, and the ninth waits for the laggard's slot and marks it
    // failed. Then `fresh` through every slot again; then the laggard
    // resumes.
    void FailLaggardThenReuseTheRing(Region &region, const std::vector<std::byte> &stale,
                                     const std::vector<std::byte> &fresh) {
        Stopped laggard(Pid(kLaggard));
        ASSERT_TRUE(laggard.stopped());
        client::Status s = region.WritePersist(0, stale);
        ASSERT_TRUE(s.ok()) << s.ToString();
        ASSERT_EQ(region.replicas()[kLaggard].state, ReplicaState::kFailed);
        s = region.WritePersist(0, fresh);
        ASSERT_TRUE(s.ok()) << s.ToString();
    }
    // Each byte daemon `d` holds at [0, allowed[0]->size()) is that byte of
    // one of `allowed` (read through a region of its own on `d` alone: a
    // read-only one, forced, since one daemon is no majority of the set's
    // three and a failed replica is never read otherwise).
    void ExpectEachByteFrom(size_t d,
                            std::initializer_list<const std::vector<std::byte> *> allowed) {
        ReplicaSet set;
        set.addresses = {daemons_[d]->control()};
        OpenOptions options;
        options.quorum = 1;
        options.read_only = true;
        options.force = true;
        auto alone = Region::Open(set, kRegion, options);
        ASSERT_TRUE(alone.ok()) << alone.status().ToString();
        std::vector<std::byte> in((*allowed.begin())->size());
        ASSERT_TRUE((*alone)->RegisterBuffer(in).ok());
        const client::Status s = (*alone)->Read(0, in, 0);
        ASSERT_TRUE(s.ok()) << s.ToString();
        for (size_t i = 0; i < in.size(); ++i) {
            const bool known = std::any_of(allowed.begin(), allowed.end(),
                                           [&](const auto *bytes) { return (*bytes)[i] == in[i]; });
            ASSERT_TRUE(known) << "daemon " << d << " holds at byte " << i
                               << " a byte of no write it was given";
        }
    }

    std::array<std::unique_ptr<Rpmad>, 3> daemons_;
};

TEST_F(ClientFailureTest, LateReadAnswerOfAFailedReplicaNeverReachesTheReusedStagingSlot) {
    auto region = Open(std::chrono::seconds(3));
    ASSERT_NE(region, nullptr);
    const std::vector<std::byte> old_bytes = Pattern(kSlot, 1);
    ASSERT_TRUE(region->WritePersist(0, old_bytes).ok());
    ASSERT_EQ(Sessions(kLaggard), 1);

    // Sent from a registered buffer (the quorum is every replica left), so
    // that the staged write queued behind it waits in the client to be sent
    // from the ring while the live daemons are stopped.
    const std::vector<std::byte> ahead = Pattern(8 * kSlot, 2);
    std::vector<std::byte> ahead_buffer = ahead;
    ASSERT_TRUE(region->RegisterBuffer(ahead_buffer).ok());
    const std::vector<std::byte> new_bytes = Pattern(kSlot, 3);
    {
        Stopped laggard(Pid(kLaggard));
        ASSERT_TRUE(laggard.stopped());
        // Into an unregistered buffer: through a staging slot, which the
        // stopped daemon's answer would fill.
        std::vector<std::byte> in(kSlot);
        const client::Status read = region->Read(0, in, kLaggard);
        ASSERT_EQ(read.code(), client::StatusCode::kDeadlineExceeded) << read.ToString();
        ASSERT_EQ(region->replicas()[kLaggard].state, ReplicaState::kFailed);
        // A failed replica is not read from (its connection is gone).
        EXPECT_EQ(region->Read(0, in, kLaggard).code(), client::StatusCode::kFailedPrecondition);

        Stopped first(Pid(0)), second(Pid(1));
        ASSERT_TRUE(first.stopped() && second.stopped());
        client::Batch batch;
        batch.Write(kSlot, ahead_buffer);
        batch.Write(0, new_bytes);  // staged
        std::future<client::Status> commit = region->CommitAsync(batch);
        // The laggard answers the read now, then sees the client's
        // disconnect and ends the session; a client that kept the
        // connection keeps the session too, and its answer lands in the
        // ring. (The ring hands the read's slot only to a write the live
        // replicas take first, once they drained everything before it, so
        // the answer overwriting a slot being sent from is a narrow race
        // here; the registered-buffer case below shows the damage.)
        laggard.Resume();
        EXPECT_TRUE(AwaitSessions(kLaggard, 0))
            << "the failed replica's daemon still has the session: its connection stayed open "
               "after it was marked failed, and its late answers still reach local memory";
        first.Resume();
        second.Resume();
        const client::Status committed = commit.get();
        ASSERT_TRUE(committed.ok()) << committed.ToString();
    }
    for (size_t r : {size_t{0}, size_t{1}}) {
        ASSERT_EQ(region->replicas()[r].state, ReplicaState::kLive);
        ExpectHolds(*region, r, 0, new_bytes);
        ExpectHolds(*region, r, kSlot, ahead);
    }
    EXPECT_TRUE(region->UnregisterBuffer(ahead_buffer).ok());

    // Writes through the ring go on, and the replica comes back in sync.
    const std::vector<std::byte> later = Pattern(2 * kSlot, 4);
    ASSERT_TRUE(region->WritePersist(0, later).ok());
    const client::Status readded = region->Readd(kLaggard);
    ASSERT_TRUE(readded.ok()) << readded.ToString();
    for (size_t r = 0; r < 3; ++r)
        ExpectHolds(*region, r, 0, later);
    EXPECT_EQ(Sessions(kLaggard), 1);
}

TEST_F(ClientFailureTest, LateReadAnswerOfAFailedReplicaNeverReachesARegisteredBuffer) {
    auto region = Open(std::chrono::seconds(3));
    ASSERT_NE(region, nullptr);
    const std::vector<std::byte> old_bytes = Pattern(kSlot, 9);
    ASSERT_TRUE(region->WritePersist(7 * kSlot, old_bytes).ok());
    std::vector<std::byte> buffer(8 * kSlot);
    ASSERT_TRUE(region->RegisterBuffer(buffer).ok());
    const std::vector<std::byte> fresh = Pattern(8 * kSlot, 10);
    {
        Stopped laggard(Pid(kLaggard));
        ASSERT_TRUE(laggard.stopped());
        // Into the buffer's last MiB, directly (zero copy).
        const client::Status read =
            region->Read(7 * kSlot, std::span(buffer).subspan(7 * kSlot), kLaggard);
        ASSERT_EQ(read.code(), client::StatusCode::kDeadlineExceeded) << read.ToString();
        ASSERT_EQ(region->replicas()[kLaggard].state, ReplicaState::kFailed);
        // The read returned: the buffer is the application's again.
        std::copy(fresh.begin(), fresh.end(), buffer.begin());
        // Sent from the buffer (the quorum is every replica left); with the
        // live daemons stopped its last MiB waits in the client to be sent
        // while the laggard answers the read into it.
        Stopped first(Pid(0)), second(Pid(1));
        ASSERT_TRUE(first.stopped() && second.stopped());
        std::future<client::Status> write = region->WritePersistAsync(0, buffer);
        laggard.Resume();
        EXPECT_TRUE(AwaitSessions(kLaggard, 0))
            << "the failed replica's daemon still has the session: its connection stayed open "
               "after it was marked failed, and its late answers still reach local memory";
        first.Resume();
        second.Resume();
        const client::Status written = write.get();
        ASSERT_TRUE(written.ok()) << written.ToString();
    }
    EXPECT_TRUE(buffer == fresh) << "the late answer landed in the application's buffer";
    EXPECT_TRUE(region->UnregisterBuffer(buffer).ok());
    for (size_t r : {size_t{0}, size_t{1}})
        ExpectHolds(*region, r, 0, fresh);
}

// A replica marked failed with MiB of staged writes queued to it (its
// daemon stopped) and the ring slots reused at once by the next write: when
// its daemon resumes, none of what was queued goes out any more, since it
// would carry what the slots hold by then (another write's bytes, stored
// at the queued writes' offsets). It fails with the ring still registered
// with the failed replica's lingering connection.
TEST_F(ClientFailureTest, AFailedReplicaNeverStoresBytesOfAReusedStagingSlot) {
    auto region = Open(std::chrono::seconds(1));
    ASSERT_NE(region, nullptr);
    const std::vector<std::byte> zeros(12 * kSlot);  // a new region's
    const std::vector<std::byte> stale = Pattern(12 * kSlot, 12);
    const std::vector<std::byte> fresh = Pattern(12 * kSlot, 13);
    ASSERT_NO_FATAL_FAILURE(FailLaggardThenReuseTheRing(*region, stale, fresh));
    ASSERT_TRUE(AwaitSessions(kLaggard, 0));
    ExpectEachByteFrom(kLaggard, {&zeros, &stale});
}

// The region's end while a failed replica's connection still has MiB of
// staged writes queued: nothing may send from the ring once it is freed.
// Under AddressSanitizer (--config=asan) the send's read of freed memory is
// a heap-use-after-free report; a plain build sees it at most as an EFAULT.
// The proxy in front of replica 0 holds its goodbye, so that the region's
// end waits there (up to 1 s for CLOSED) while the stopped daemon resumes
// and takes what was queued for it.
TEST_F(ClientFailureTest, TheRegionsEndStopsAFailedReplicasQueuedSendsBeforeFreeingTheRing) {
    HoldingProxy proxy(daemons_[0]->data_port());
    ASSERT_NE(proxy.port(), 0);
    auto region = Open(std::chrono::seconds(1), {proxy.address(), "", ""});
    ASSERT_NE(region, nullptr);
    const std::vector<std::byte> zeros(12 * kSlot);
    const std::vector<std::byte> stale = Pattern(12 * kSlot, 14);
    Stopped laggard(Pid(kLaggard));
    ASSERT_TRUE(laggard.stopped());
    const client::Status s = region->WritePersist(0, stale);
    ASSERT_TRUE(s.ok()) << s.ToString();
    ASSERT_EQ(region->replicas()[kLaggard].state, ReplicaState::kFailed);
    proxy.Hold();
    std::thread closing([&region] { region.reset(); });
    // Replica 0's goodbye reached the proxy: the region's end is under way.
    const bool ending = proxy.AwaitHeld(std::chrono::seconds(10));
    laggard.Resume();
    closing.join();
    ASSERT_TRUE(ending) << "the region's end did not disconnect replica 0";
    ASSERT_TRUE(AwaitSessions(kLaggard, 0));
    ExpectEachByteFrom(kLaggard, {&zeros, &stale});
}

// The natural case: a daemon stopped with MiB of writes queued, resumed
// and readded at once. Whether it works through its socket before the copy
// reaches the same bytes is a race (it usually does); the proxy case below
// makes the late stream certain.
TEST_F(ClientFailureTest, ReaddWaitsForTheOldConnectionsQueuedWritesBeforeCopying) {
    auto region = Open(std::chrono::seconds(2));
    ASSERT_NE(region, nullptr);
    const std::vector<std::byte> stale = Pattern(12 * kSlot, 5);
    const std::vector<std::byte> fresh = Pattern(12 * kSlot, 6);
    ASSERT_NO_FATAL_FAILURE(FailLaggardThenReuseTheRing(*region, stale, fresh));
    // At once: the daemon is still working through the stale writes.
    const client::Status readded = region->Readd(kLaggard);
    ASSERT_TRUE(readded.ok()) << readded.ToString();
    for (const auto &info : region->replicas())
        ASSERT_EQ(info.state, ReplicaState::kLive) << info.address << ": " << info.error.ToString();
    for (size_t r = 0; r < 3; ++r)
        ExpectHolds(*region, r, 0, fresh);
    EXPECT_EQ(Sessions(kLaggard), 1);
}

TEST_F(ClientFailureTest, ReaddCopiesOnlyOnceTheDaemonAppliedTheOldConnectionsLastWrite) {
    // The laggard's data plane goes through a proxy that holds its stream:
    // deterministic where a stopped daemon races (it may or may not work
    // through its socket before the copy reaches the same bytes).
    HoldingProxy proxy(daemons_[kLaggard]->data_port());
    ASSERT_NE(proxy.port(), 0);
    auto region = Open(std::chrono::seconds(1), {"", "", proxy.address()});
    ASSERT_NE(region, nullptr);
    const std::vector<std::byte> stale = Pattern(12 * kSlot, 7);
    const std::vector<std::byte> fresh = Pattern(12 * kSlot, 8);
    proxy.Hold();
    // The ninth piece waits for the laggard's slot and marks it failed.
    client::Status s = region->WritePersist(0, stale);
    ASSERT_TRUE(s.ok()) << s.ToString();
    ASSERT_EQ(region->replicas()[kLaggard].state, ReplicaState::kFailed);
    s = region->WritePersist(0, fresh);
    ASSERT_TRUE(s.ok()) << s.ToString();
    // The daemon has seen neither the stale writes nor the old
    // connection's end: a copy made now would be overwritten by them.
    s = region->Readd(kLaggard);
    EXPECT_EQ(s.code(), client::StatusCode::kDeadlineExceeded) << s.ToString();
    EXPECT_EQ(region->replicas()[kLaggard].state, ReplicaState::kFailed);
    proxy.Release();
    s = region->Readd(kLaggard);
    EXPECT_TRUE(s.ok()) << s.ToString();
    for (size_t r = 0; r < 3; ++r)
        ExpectHolds(*region, r, 0, fresh);
    EXPECT_EQ(Sessions(kLaggard), 1);
}

}  // namespace
}  // namespace rpma::testing
