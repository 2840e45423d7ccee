// Peers that make the provider send and never read what it sends: READ
// responses piling up behind a closed window, a flood of requests asking
// for ACKs, a region deregistered while its bytes wait to be sent. The
// progress thread never blocks on such a peer (other connections keep
// working meanwhile), what the provider holds for it stays bounded, the
// liveness bound (tcp_liveness.h) drops it once it is silent with answers
// waiting in the provider's queue, and no byte of a deregistered region
// leaves after the deregistration returned.
//
// Each scenario runs in a child process under an alarm: a provider that
// blocks fails the test instead of hanging the suite, and the child's heap
// belongs to the scenario alone.
#include <malloc.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "rpma_core/src/provider/tcp/tcp_liveness.h"
#include "tests/unit/provider/tcp/tcp_raw_peer.h"
#include "tests/unit/provider/tcp/tcp_test_support.h"

namespace rpma::provider::tcp::testing {
namespace {

constexpr unsigned kChildAlarmSeconds = 30;
// The liveness bound of this binary, short so that a peer that never reads
// is dropped soon. An RPMA_TCP_TIMEOUT_MS already in the environment wins.
constexpr int kBoundMs = 500;
// A receive window this small closes after a few KiB: the provider's
// answers then wait in its own socket and queue.
constexpr int kTinyWindow = 4096;

[[maybe_unused]] ::testing::Environment *const kShortBound =
    ::testing::AddGlobalTestEnvironment(new RequestTimeoutEnvironment(kBoundMs));

// Bytes the process's allocator hands out now (every arena, and chunks of
// their own mapping).
size_t HeapInUse() {
    const struct mallinfo2 info = mallinfo2();
    return info.uordblks + info.hblkhd;
}

// Waits (bounded) until the provider sent the raw peer something.
bool WaitUnread(RawPeer &raw) {
    return WaitReadable(raw.Fd()) && raw.Unread() > 0;
}

class TcpHostileFlood : public HostilePeerTest {
  protected:
    // The connection the provider gave up on: CONNECT_ERROR within a few
    // bounds, and the raw peer finds the stream closed after what was sent.
    void ExpectDroppedByLiveness(RawPeer &raw) {
        EXPECT_EQ(WaitEventType(*server.id, 4 * kBoundMs + kTimeoutMs), CmEventType::kConnectError);
        std::vector<uint8_t> rest;
        EXPECT_TRUE(raw.ReadBytesUntilClosed(&rest));
    }

    void ResponsesBehindAClosedWindow() {
        constexpr size_t kRegion = 1 << 20;
        constexpr uint32_t kDepth = 16;
        Buffer region(*server_pd, kRegion, kRemoteAll);
        memset(region.data(), 0x5a, kRegion);
        RawPeer raw;
        ASSERT_NO_FATAL_FAILURE(AcceptScripted(&raw, kDepth, PairOptions{}, kTinyWindow));
        std::vector<uint8_t> reads;
        for (uint64_t sequence = 1; sequence <= kDepth; ++sequence)
            AppendRequest(&reads, RequestHeader(wire::Opcode::kReadRequest, sequence, region.addr(),
                                                region.rkey(), kRegion, 0));
        ASSERT_TRUE(raw.Send(reads.data(), reads.size()));
        ASSERT_TRUE(WaitUnread(raw));
        // 16 MiB of answers wait for a peer that takes 4 KiB: meanwhile
        // fresh connections are made and served, their target side by the
        // same progress thread.
        for (int i = 0; i < 10; ++i)
            ASSERT_NO_FATAL_FAILURE(ExpectAnotherConnectionWorks());
        ASSERT_NO_FATAL_FAILURE(ExpectDroppedByLiveness(raw));
        ASSERT_NO_FATAL_FAILURE(ExpectAnotherConnectionWorks());
    }

    // One 12 KiB answer: the provider's socket takes it all at once (its
    // queue is empty), the peer's closed window keeps part of it in the
    // kernel.
    void ResponseInTheKernelBehindAClosedWindow() {
        constexpr size_t kRegion = 12 << 10;
        Buffer region(*server_pd, kRegion, kRemoteAll);
        RawPeer raw;
        ASSERT_NO_FATAL_FAILURE(AcceptScripted(&raw, 16, PairOptions{}, kTinyWindow));
        ASSERT_TRUE(raw.SendRequest(RequestHeader(wire::Opcode::kReadRequest, 1, region.addr(),
                                                  region.rkey(), kRegion, 0)));
        ASSERT_TRUE(WaitUnread(raw));
        ASSERT_NO_FATAL_FAILURE(ExpectDroppedByLiveness(raw));
        ASSERT_NO_FATAL_FAILURE(ExpectAnotherConnectionWorks());
    }

    void RequestsFromAPeerThatNeverReads() {
        constexpr size_t kRegion = 64 << 10;
        constexpr int kBatches = 400;
        constexpr int kPerBatch = 512;  // 200,000 requests, 25 MB
        // Whether a peer whose window is closed is dropped depends on
        // whether the provider's last bytes still fit its socket; this peer
        // is given the time to read them at the end.
        RequestTimeoutMs().store(kTimeoutMs * 2);
        Buffer region(*server_pd, kRegion, kRemoteAll);
        RawPeer raw;
        ASSERT_NO_FATAL_FAILURE(AcceptScripted(&raw, 16, PairOptions{}, kTinyWindow));
        uint64_t sequence = 1;
        const std::vector<uint8_t> payload(64, 0x11);
        // One batch: WRITEs each asking for its ACK, every eighth message an
        // ACK_REQUEST (always answered); the last WRITE marks the batch.
        const auto batch = [&](uint8_t mark) {
            std::vector<uint8_t> bytes;
            for (int i = 0; i < kPerBatch; ++i) {
                if (i % 8 == 7) {
                    wire::Header ask;
                    ask.opcode = wire::Opcode::kAckRequest;
                    AppendRequest(&bytes, ask);
                    continue;
                }
                const size_t offset = (static_cast<size_t>(i) * 64) % (kRegion - 64);
                AppendRequest(&bytes,
                              RequestHeader(wire::Opcode::kWrite, sequence++, region.addr(offset),
                                            region.rkey(), 64),
                              payload);
            }
            AppendRequest(&bytes,
                          RequestHeader(wire::Opcode::kWrite, sequence++, region.addr(kRegion - 1),
                                        region.rkey(), 1),
                          {mark});
            return bytes;
        };
        // Warm up: the connection's stage and queues reach their working size.
        const std::vector<uint8_t> first = batch(1);
        ASSERT_TRUE(raw.Send(first.data(), first.size()));
        ASSERT_TRUE(WaitForByte(&region.data()[kRegion - 1], 1));
        const size_t heap_before = HeapInUse();

        // The batches sent, and the errno of a send that failed.
        int batches_sent = 0;
        int send_error = 0;
        std::thread flood([&] {
            for (; batches_sent < kBatches; ++batches_sent) {
                const std::vector<uint8_t> bytes =
                    batch(static_cast<uint8_t>(2 + batches_sent % 200));
                if (!raw.Send(bytes.data(), bytes.size())) {
                    send_error = errno;
                    return;
                }
            }
        });
        for (int i = 0; i < 5; ++i)
            EXPECT_NO_FATAL_FAILURE(ExpectAnotherConnectionWorks());
        flood.join();
        if (batches_sent < kBatches) {
            const std::optional<CmEvent> event = WaitEvent(*server.id, 0);
            FAIL() << "the provider stopped reading the flood after " << batches_sent << " of "
                   << kBatches << " batches: " << strerror(send_error) << "; the application saw "
                   << (event ? "event " + std::to_string(static_cast<int>(event->type))
                             : std::string("no event"));
        }
        ASSERT_TRUE(WaitForByte(&region.data()[kRegion - 1], 2 + (kBatches - 1) % 200));
        // An ACK queued per request would make this tens of MB.
        const size_t heap_after = HeapInUse();
        EXPECT_LT(heap_after, heap_before + (size_t{4} << 20))
            << "heap grew from " << heap_before << " to " << heap_after << " bytes";
        // The peer reads at last: cumulative ACKs, never backwards, up to
        // the last request, and the connection serves it as before.
        const uint64_t last = sequence - 1;
        uint64_t acknowledged = 0;
        while (acknowledged < last) {
            wire::Header ack;
            ASSERT_TRUE(raw.ReadMessage(&ack)) << "acknowledged " << acknowledged << " of " << last;
            ASSERT_EQ(ack.opcode, wire::Opcode::kAck);
            ASSERT_GE(ack.sequence, acknowledged);
            ASSERT_LE(ack.sequence, last);
            acknowledged = ack.sequence;
        }
        ASSERT_TRUE(raw.SendRequest(
            RequestHeader(wire::Opcode::kReadRequest, sequence, region.addr(), region.rkey(), 64)));
        wire::Header response;
        std::vector<uint8_t> read_back;
        do {
            ASSERT_TRUE(raw.ReadMessage(&response, &read_back));
        } while (response.opcode == wire::Opcode::kAck);
        EXPECT_EQ(response.opcode, wire::Opcode::kReadResponse);
        EXPECT_EQ(response.sequence, sequence);
        EXPECT_EQ(read_back, payload);
        ASSERT_NO_FATAL_FAILURE(ExpectAnotherConnectionWorks());
    }

    void RegionDeregisteredUnderAWaitingResponse() {
        constexpr size_t kRegion = 16 << 20;  // more than both sockets hold
        Buffer region(*server_pd, kRegion, kRemoteAll);
        memset(region.data(), 0x5a, kRegion);
        RawPeer raw;
        ASSERT_NO_FATAL_FAILURE(AcceptScripted(&raw, 16, PairOptions{}, kTinyWindow));
        ASSERT_TRUE(raw.SendRequest(RequestHeader(wire::Opcode::kReadRequest, 1, region.addr(),
                                                  region.rkey(), kRegion, 0)));
        ASSERT_TRUE(WaitUnread(raw));
        // Once deregistration returns, nothing reads the region any more:
        // what the peer receives from here on was in a socket already.
        region.Deregister();
        memset(region.data(), 0xee, kRegion);
        std::vector<uint8_t> bytes;
        ASSERT_TRUE(raw.ReadBytesUntilClosed(&bytes));
        ASSERT_GE(bytes.size(), wire::kHeaderSize);
        uint8_t encoded[wire::kHeaderSize];
        memcpy(encoded, bytes.data(), sizeof(encoded));
        wire::Header response;
        ASSERT_EQ(wire::ParseHeader(encoded, &response), wire::ParseError::kNone);
        EXPECT_EQ(response.opcode, wire::Opcode::kReadResponse);
        EXPECT_EQ(response.length, kRegion);
        EXPECT_LT(bytes.size(), wire::kHeaderSize + kRegion);
        for (size_t i = wire::kHeaderSize; i < bytes.size(); ++i)
            ASSERT_EQ(bytes[i], 0x5a) << "payload byte " << i - wire::kHeaderSize;
        EXPECT_EQ(WaitEventType(*server.id), CmEventType::kConnectError);
        ASSERT_NO_FATAL_FAILURE(ExpectAnotherConnectionWorks());
    }
};

// A peer declaring a send queue of 16 asks for 16 READs of 1 MiB and reads
// nothing: the answers wait in the provider's queue (pointing into the
// region, not copied), ten fresh connections are made and served
// meanwhile, and once the peer has been silent for the bound it is dropped.
TEST_F(TcpHostileFlood, PeerThatStopsReadingResponsesStallsNoOtherConnection) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_EXIT(
        {
            InChild(kChildAlarmSeconds);
            ResponsesBehindAClosedWindow();
            ExitChild();
        },
        ::testing::ExitedWithCode(0), "");
}

// The same with an answer small enough for the provider's socket to take
// at once: it waits in the kernel, not in the provider's queue (which the
// looks at the peer watch), and the peer is dropped all the same, by the
// socket's TCP_USER_TIMEOUT of the bound (tcp_liveness.h), which also ends a
// window that stays closed.
TEST_F(TcpHostileFlood, PeerThatNeverReadsASmallResponseIsDroppedToo) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_EXIT(
        {
            InChild(kChildAlarmSeconds);
            ResponseInTheKernelBehindAClosedWindow();
            ExitChild();
        },
        ::testing::ExitedWithCode(0), "");
}

// 200,000 requests asking for ACKs (and ACK_REQUESTs, always answered)
// from a peer whose window is closed: the provider keeps reading and
// executing them, and, ACKs being cumulative (one per batch read, merged
// with one still waiting), its heap does not grow with the flood; other
// connections are served meanwhile. When the peer reads at last, the ACKs
// it finds are cumulative up to its last request, and the connection
// serves it as before.
TEST_F(TcpHostileFlood, RequestFloodFromAPeerThatNeverReadsKeepsMemoryBounded) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_EXIT(
        {
            InChild(kChildAlarmSeconds);
            RequestsFromAPeerThatNeverReads();
            ExitChild();
        },
        ::testing::ExitedWithCode(0), "");
}

// A 16 MiB READ_RESPONSE waits for a peer that does not read, and the
// application deregisters the region: the response is cut (the connection
// breaks), and every payload byte the peer gets is what the region held
// before; what the application writes there afterwards never leaves.
TEST_F(TcpHostileFlood, DeregisteredRegionSendsNothingMore) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_EXIT(
        {
            InChild(kChildAlarmSeconds);
            RegionDeregisteredUnderAWaitingResponse();
            ExitChild();
        },
        ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace rpma::provider::tcp::testing
