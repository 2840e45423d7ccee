// Load: two connections, both ends of each streaming 64 KiB writes at the
// other while reading back what they wrote. Every thread only ever blocks on
// its own completions, so a provider that lets a socket write block a reader
// deadlocks here (and the bounded waits turn that into a failure).
#include <cerrno>
#include <cstring>
#include <thread>

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

}  // namespace
}  // namespace rpma::provider::tcp::testing
