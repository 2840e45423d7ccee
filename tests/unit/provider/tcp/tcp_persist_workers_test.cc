// Persistence off the progress thread (tcp_persist_workers.h): a large
// persistent flush runs on a persist worker, so it stalls neither the other
// connections nor the progress thread, while its own connection keeps its
// requests in order behind it, tells its peer that it lives, and
// deregistration waits for it.
//
// A test holds a flush in progress by replacing msync (SetMsyncForTesting)
// with one that runs the real msync and then waits until the test lets it
// return: the flush takes exactly as long as the test needs, on any disk.
#include "rpma_core/src/provider/tcp/tcp_persist_workers.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <future>
#include <mutex>
#include <string>
#include <thread>

#include "rpma_core/src/provider/tcp/tcp_liveness.h"
#include "rpma_core/src/provider/tcp/tcp_persist.h"
#include "tests/unit/provider/tcp/tcp_test_support.h"

namespace rpma::provider::tcp::testing {
namespace {

using std::chrono::milliseconds;

// ---- the pool ---------------------------------------------------------------------

// A gate jobs wait at until the test opens it; waits are bounded, so a
// broken test fails instead of hanging.
class Gate {
  public:
    void Open() {
        std::lock_guard lock(mu_);
        open_ = true;
        changed_.notify_all();
    }
    // Counts the caller in, then waits for Open.
    bool Pass() {
        std::unique_lock lock(mu_);
        ++arrived_;
        changed_.notify_all();
        return changed_.wait_for(lock, milliseconds(kTimeoutMs), [this] { return open_; });
    }
    // Waits until `count` callers arrived.
    bool WaitArrived(int count, int timeout_ms = kTimeoutMs) {
        std::unique_lock lock(mu_);
        return changed_.wait_for(lock, milliseconds(timeout_ms), [&] { return arrived_ >= count; });
    }
    int Arrived() {
        std::lock_guard lock(mu_);
        return arrived_;
    }

  private:
    std::mutex mu_;
    std::condition_variable changed_;
    bool open_ = false;
    int arrived_ = 0;
};

TEST(TcpPersistWorkers, RunsJobsOnAtMostItsThreadsAndFinishesThemBeforeItGoes) {
    Gate gate;
    std::atomic<int> finished{0};
    const std::thread::id submitter = std::this_thread::get_id();
    std::atomic<bool> ran_elsewhere{true};
    {
        PersistWorkers workers(2);
        for (int i = 0; i < 5; ++i) {
            workers.Submit([&] {
                if (std::this_thread::get_id() == submitter)
                    ran_elsewhere = false;
                gate.Pass();
                ++finished;
            });
        }
        // Two threads take two jobs; the other three wait in the queue.
        ASSERT_TRUE(gate.WaitArrived(2));
        EXPECT_FALSE(gate.WaitArrived(3, 200)) << "more jobs ran at once than the pool has threads";
        gate.Open();
    }  // the destructor runs what is queued, then joins
    EXPECT_EQ(finished.load(), 5);
    EXPECT_TRUE(ran_elsewhere.load());
}

TEST(TcpPersistWorkers, ThreadCountIsClamped) {
    EXPECT_EQ(PersistWorkers(0).Threads(), 1);
    EXPECT_EQ(PersistWorkers(1000).Threads(), PersistWorkers::kMaxThreads);
}

// ---- a held msync ---------------------------------------------------------------

// msync calls larger than kHeldBytes run, then wait at the gate.
constexpr size_t kHeldBytes = size_t{1} << 20;
Gate *held_gate = nullptr;

int HeldMsync(void *addr, size_t length, int flags) {
    const int result = msync(addr, length, flags);
    if (length > kHeldBytes && held_gate != nullptr)
        held_gate->Pass();
    return result;
}

class HoldMsync {
  public:
    HoldMsync() {
        held_gate = &gate;
        SetMsyncForTesting(HeldMsync);
    }
    ~HoldMsync() {
        gate.Open();
        SetMsyncForTesting(nullptr);
    }
    Gate gate;
};

// A file of `size` bytes in the test's directory, mapped shared, every page
// dirty, registered in `pd`: a persistent flush of it is an msync.
class FileRegion {
  public:
    FileRegion(provider::ProtectionDomain &pd, size_t size) : file_(size) {
        EXPECT_EQ(pd.RegisterMemory(file_.data(), size, kRemoteAll, &mr_), 0);
    }
    uint8_t *data() { return file_.data(); }
    uint64_t addr(size_t offset = 0) const {
        return reinterpret_cast<uintptr_t>(file_.data()) + offset;
    }
    uint32_t rkey() const { return mr_->Rkey(); }
    void Deregister() { mr_.reset(); }

  private:
    SharedFile file_;
    std::unique_ptr<provider::MemoryRegion> mr_;  // after file_: deregistered before the unmap
};

constexpr size_t kLargeFlush = size_t{256} << 20;

class TcpPersistOffTheProgressThread : public ConnectedPair {};

// One connection's 256 MiB persistent flush, held in its msync, does not
// delay another connection's 8-byte reads: they all complete while it is
// held. Before the persist workers, the flush's msync ran on the progress
// thread, and the reads waited for it (here: forever).
TEST_F(TcpPersistOffTheProgressThread, ALargeFlushDoesNotDelayAnotherConnectionsRead) {
    HoldMsync hold;
    ASSERT_NO_FATAL_FAILURE(Connect());
    FileRegion region(*server_pd, kLargeFlush);
    Endpoint other_client, other_server;
    ASSERT_NO_FATAL_FAILURE(ConnectAnother(other_client, other_server, {}));
    Buffer target(*server_pd, 4096, kRemoteAll);
    memcpy(target.data(), "8 bytes!", 8);
    Buffer local(*client_pd, 4096, kRemoteAll);

    ASSERT_EQ(client.qp().PostFlush(region.addr(), region.rkey(), kLargeFlush,
                                    FlushType::kPersistent, true, 1),
              0);
    ASSERT_TRUE(hold.gate.WaitArrived(1)) << "the flush never reached msync";

    for (int i = 0; i < 100; ++i) {
        ibv_sge sge = local.Sge(0, 8);
        ibv_send_wr read = SendWr(IBV_WR_RDMA_READ, &sge, 100 + i, target.addr(), target.rkey());
        ASSERT_EQ(other_client.qp().PostSend(read), 0);
        const ibv_wc wc = other_client.send.WaitOne();
        ASSERT_EQ(wc.status, IBV_WC_SUCCESS) << "read " << i << " waited behind the flush";
        ASSERT_EQ(memcmp(local.data(), "8 bytes!", 8), 0);
        memset(local.data(), 0, 8);
    }
    EXPECT_EQ(client.send.PollNow(), 0) << "the flush completed before its msync returned";

    hold.gate.Open();
    const ibv_wc flushed = client.send.WaitOne();
    EXPECT_EQ(flushed.wr_id, 1u);
    EXPECT_EQ(flushed.status, IBV_WC_SUCCESS);
}

// The requests behind a held flush on its own connection wait for it and
// complete after it, in order; the peer does not take the wait for a dead
// target, even when it lasts longer than the liveness bound.
TEST_F(TcpPersistOffTheProgressThread, RequestsBehindTheFlushWaitInOrderAndThePeerWaitsToo) {
    std::atomic<int> &bound = RequestTimeoutMs();
    const int saved_bound = bound.exchange(200);
    HoldMsync hold;
    ASSERT_NO_FATAL_FAILURE(Connect());
    FileRegion region(*server_pd, 4 * kHeldBytes);
    Buffer local(*client_pd, 4096, kRemoteAll);

    ASSERT_EQ(client.qp().PostFlush(region.addr(), region.rkey(), 4 * kHeldBytes,
                                    FlushType::kPersistent, true, 1),
              0);
    memcpy(local.data(), "after", 5);
    ibv_sge write_sge = local.Sge(0, 5);
    ASSERT_EQ(client.qp().PostSend(
                  SendWr(IBV_WR_RDMA_WRITE, &write_sge, 2, region.addr(), region.rkey())),
              0);
    ibv_sge read_sge = local.Sge(100, 5);
    ASSERT_EQ(
        client.qp().PostSend(SendWr(IBV_WR_RDMA_READ, &read_sge, 3, region.addr(), region.rkey())),
        0);
    ASSERT_TRUE(hold.gate.WaitArrived(1));
    // Five liveness bounds pass with the flush held: nothing completes, and
    // the connection is not broken for the peer's silence.
    EXPECT_TRUE(client.send.Wait(1, 5 * 200).empty());
    EXPECT_EQ(region.data()[0], 0x5a) << "the write behind the flush ran before it";
    hold.gate.Open();

    const std::vector<ibv_wc> done = client.send.Wait(3);
    ASSERT_EQ(done.size(), 3u);
    for (int i = 0; i < 3; ++i) {
        EXPECT_EQ(done[i].wr_id, static_cast<uint64_t>(i + 1));
        EXPECT_EQ(done[i].status, IBV_WC_SUCCESS) << "wr " << done[i].wr_id;
    }
    EXPECT_EQ(memcmp(local.data() + 100, "after", 5), 0);
    bound.store(saved_bound);
}

// Deregistering a region returns only after a persist worker's msync of it
// ended: the application may unmap the memory as soon as it returns.
TEST_F(TcpPersistOffTheProgressThread, DeregistrationWaitsForTheWorkersPersist) {
    HoldMsync hold;
    ASSERT_NO_FATAL_FAILURE(Connect());
    FileRegion region(*server_pd, 4 * kHeldBytes);
    ASSERT_EQ(client.qp().PostFlush(region.addr(), region.rkey(), 4 * kHeldBytes,
                                    FlushType::kPersistent, true, 1),
              0);
    ASSERT_TRUE(hold.gate.WaitArrived(1));

    std::promise<void> deregistered;
    std::thread deregistering([&] {
        region.Deregister();
        deregistered.set_value();
    });
    std::future<void> done = deregistered.get_future();
    EXPECT_EQ(done.wait_for(milliseconds(300)), std::future_status::timeout)
        << "deregistration returned while the region was being persisted";
    hold.gate.Open();
    EXPECT_EQ(done.wait_for(milliseconds(kTimeoutMs)), std::future_status::ready);
    deregistering.join();
    // The persist had begun before the deregistration: the flush succeeds.
    EXPECT_EQ(client.send.WaitOne().status, IBV_WC_SUCCESS);
}

}  // namespace
}  // namespace rpma::provider::tcp::testing
