// Load: two connections, both ends of each streaming 64 KiB writes at the
// other while reading back what they wrote. Every thread only ever blocks on
// its own completions, so a provider that lets a socket write block a reader
// deadlocks here (and the bounded waits turn that into a failure).
#include <sys/mman.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <thread>
#include <vector>

#include "tests/unit/provider/tcp/tcp_test_support.h"

namespace rpma::provider::tcp::testing {
namespace {

constexpr size_t kChunk = 64 * 1024;
constexpr size_t kChunks = 48;
constexpr size_t kRegion = kChunk * kChunks;
constexpr size_t kReadEvery = 4;

uint8_t Pattern(int side, size_t chunk) {
    return static_cast<uint8_t>(side * 31 + chunk + 1);
}

struct Side {
    int id = 0;
    Endpoint *endpoint = nullptr;
    std::unique_ptr<Buffer> source;    // what this side writes
    std::unique_ptr<Buffer> target;    // what the peer writes into
    std::unique_ptr<Buffer> readback;  // where this side's READs land
    Side *peer = nullptr;
    bool ok = false;
};

// Posts, waiting for a completion whenever the send queue is full.
bool PostWithRetry(Side &side, const ibv_send_wr &wr, size_t *completed) {
    for (;;) {
        const int err = side.endpoint->qp().PostSend(wr);
        if (err == 0)
            return true;
        if (err != ENOMEM)
            return false;
        auto wcs = side.endpoint->send.Wait(1);
        if (wcs.empty() || wcs[0].status != IBV_WC_SUCCESS)
            return false;
        *completed += wcs.size();
    }
}

void Stream(Side &side) {
    size_t posted = 0;
    size_t completed = 0;
    for (size_t chunk = 0; chunk < kChunks; ++chunk) {
        ibv_sge write_sge = side.source->Sge(chunk * kChunk, kChunk);
        const uint64_t remote = side.peer->target->addr(chunk * kChunk);
        const uint32_t rkey = side.peer->target->rkey();
        if (!PostWithRetry(side, SendWr(IBV_WR_RDMA_WRITE, &write_sge, chunk, remote, rkey),
                           &completed))
            return;
        ++posted;
        if (chunk % kReadEvery == 0) {
            ibv_sge read_sge = side.readback->Sge(chunk * kChunk, kChunk);
            if (!PostWithRetry(side,
                               SendWr(IBV_WR_RDMA_READ, &read_sge, 1000 + chunk, remote, rkey),
                               &completed))
                return;
            ++posted;
        }
    }
    while (completed < posted) {
        auto wcs = side.endpoint->send.Wait(posted - completed);
        if (wcs.empty())
            return;
        for (const ibv_wc &wc : wcs) {
            if (wc.status != IBV_WC_SUCCESS)
                return;
        }
        completed += wcs.size();
    }
    side.ok = true;
}

class TcpStress : public ConnectedPair {};

TEST_F(TcpStress, TwoConnectionsStreamingBothWaysWithReadsNeitherDeadlockNorCorrupt) {
    PairOptions options;
    options.sq_size = 32;
    options.cq_size = 1024;
    ASSERT_NO_FATAL_FAILURE(Connect(options));
    Endpoint client2;
    Endpoint server2;
    ASSERT_NO_FATAL_FAILURE(ConnectAnother(client2, server2, options));

    Side sides[4];
    Endpoint *endpoints[4] = {&client, &server, &client2, &server2};
    for (int i = 0; i < 4; ++i) {
        sides[i].id = i;
        sides[i].endpoint = endpoints[i];
    }
    sides[0].peer = &sides[1];
    sides[1].peer = &sides[0];
    sides[2].peer = &sides[3];
    sides[3].peer = &sides[2];
    for (Side &side : sides) {
        provider::ProtectionDomain &pd = side.id % 2 == 0 ? *client_pd : *server_pd;
        side.source = std::make_unique<Buffer>(pd, kRegion, kRemoteAll);
        side.target = std::make_unique<Buffer>(pd, kRegion, kRemoteAll);
        side.readback = std::make_unique<Buffer>(pd, kRegion, IBV_ACCESS_LOCAL_WRITE);
        for (size_t chunk = 0; chunk < kChunks; ++chunk)
            memset(side.source->data() + chunk * kChunk, Pattern(side.id, chunk), kChunk);
    }

    std::vector<std::thread> threads;
    for (Side &side : sides)
        threads.emplace_back([&side] { Stream(side); });
    for (std::thread &thread : threads)
        thread.join();

    for (Side &side : sides) {
        EXPECT_TRUE(side.ok) << "side " << side.id;
        for (size_t chunk = 0; chunk < kChunks; ++chunk) {
            const uint8_t expected = Pattern(side.peer->id, chunk);
            const uint8_t *written = side.target->data() + chunk * kChunk;
            ASSERT_EQ(written[0], expected) << "side " << side.id << " chunk " << chunk;
            ASSERT_EQ(written[kChunk - 1], expected);
            ASSERT_EQ(memcmp(written, side.peer->source->data() + chunk * kChunk, kChunk), 0);
            if (chunk % kReadEvery == 0) {
                ASSERT_EQ(memcmp(side.readback->data() + chunk * kChunk,
                                 side.source->data() + chunk * kChunk, kChunk),
                          0)
                    << "read of chunk " << chunk << " by side " << side.id;
            }
        }
    }
    client2.id.reset();
    server2.id.reset();
}

// Deregistration under traffic: once it returns, the provider never touches
// the region again, so the application may unmap it. The tests take the
// memory away (PROT_NONE) right after: a late access crashes them.
class TcpDeregisterUnderTraffic : public ConnectedPair {
  protected:
    static constexpr size_t kSize = size_t{1} << 20;
    // Small enough for the target to copy it from its stage (a memcpy, which
    // faults on the memory taken away, unlike a syscall).
    static constexpr uint32_t kWrite = 4 * 1024;

    void SetUp() override {
        ConnectedPair::SetUp();
        PairOptions options;
        options.sq_size = 64;
        options.cq_size = 1024;
        ASSERT_NO_FATAL_FAILURE(Connect(options));
        source = std::make_unique<Buffer>(*client_pd, kSize, kRemoteAll);
        target = std::make_unique<Buffer>(*server_pd, kSize, kRemoteAll);
        memset(source->data(), 0x3c, kSize);
    }

    // Streams writes from `source` into `target` (every 8th signaled) until
    // a completion fails; returns that status. Counts successful rounds.
    ibv_wc_status Stream(uint32_t lkey, uint32_t rkey) {
        for (uint64_t i = 0;; ++i) {
            ibv_sge sge{source->addr((i * kWrite) % kSize), kWrite, lkey};
            const ibv_send_wr wr = SendWr(IBV_WR_RDMA_WRITE, &sge, i,
                                          target->addr((i * kWrite) % kSize), rkey, i % 8 == 7);
            const int err = client.qp().PostSend(wr);
            if (err != 0 && err != ENOMEM)
                return IBV_WC_GENERAL_ERR;
            // Collects what completed; waits only when the queue is full.
            std::vector<ibv_wc> wcs;
            if (err == ENOMEM) {
                wcs = client.send.Wait(1);
                if (wcs.empty())
                    return IBV_WC_GENERAL_ERR;  // stuck: the test fails
            } else {
                ibv_wc wc;
                if (client.send.cq->Poll(1, &wc) == 1)
                    wcs.push_back(wc);
            }
            for (const ibv_wc &wc : wcs) {
                if (wc.status != IBV_WC_SUCCESS)
                    return wc.status;
                ++rounds;
            }
        }
    }
    // Streams until the writes flow, then deregisters `victim` and takes
    // its memory away; returns the status that ended the stream.
    ibv_wc_status StreamAndDeregister(Buffer &victim) {
        const uint32_t lkey = source->lkey();
        const uint32_t rkey = target->rkey();
        ibv_wc_status failed = IBV_WC_SUCCESS;
        std::thread writer([&] { failed = Stream(lkey, rkey); });
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (rounds < 20 && std::chrono::steady_clock::now() < deadline)
            std::this_thread::yield();
        EXPECT_GE(rounds.load(), 20) << "the writes did not flow";
        victim.Deregister();
        EXPECT_EQ(mprotect(victim.data(), kSize, PROT_NONE), 0);
        writer.join();
        EXPECT_EQ(mprotect(victim.data(), kSize, PROT_READ | PROT_WRITE), 0);
        return failed;
    }

    std::unique_ptr<Buffer> source;
    std::unique_ptr<Buffer> target;
    std::atomic<int> rounds{0};
};

TEST_F(TcpDeregisterUnderTraffic, TargetRegionIsUntouchedOnceDeregistered) {
    const ibv_wc_status failed = StreamAndDeregister(*target);
    // A write that finds the region gone is refused (the target breaks the
    // connection; when it caught a write half-way, the reset may overtake
    // its refusal).
    EXPECT_TRUE(failed == IBV_WC_REM_ACCESS_ERR || failed == IBV_WC_RETRY_EXC_ERR)
        << ibv_wc_status_str(failed);
}

TEST_F(TcpDeregisterUnderTraffic, SourceRegionIsUntouchedOnceDeregistered) {
    const ibv_wc_status failed = StreamAndDeregister(*source);
    // Posted after: a local protection error; queued before: flushed with
    // the connection, which breaks.
    EXPECT_TRUE(failed == IBV_WC_LOC_PROT_ERR || failed == IBV_WC_WR_FLUSH_ERR)
        << ibv_wc_status_str(failed);
}

}  // namespace
}  // namespace rpma::provider::tcp::testing
