// The tcp provider against peers that do not behave: a scripted raw TCP peer
// (tcp_raw_peer.h) on one side, the provider on the other. Scenarios that
// once hung the whole process run in a child process under an alarm, so a
// regression fails the test instead of hanging the suite.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "rpma_core/src/provider/tcp/tcp_protection_domain.h"
#include "tests/unit/provider/tcp/tcp_raw_peer.h"
#include "tests/unit/provider/tcp/tcp_test_support.h"

namespace rpma::provider::tcp::testing {
namespace {

// A child process's whole scenario, hang included, ends within this.
constexpr unsigned kChildAlarmSeconds = 20;

class TcpHostilePeer : public HostilePeerTest {
  protected:
    // The scenario of the test below, in the child process.
    void ReadInterruptedByQueuePairDestruction() {
        constexpr uint32_t kLength = 1 << 20;
        constexpr uint32_t kFirstPart = 64 << 10;
        RawListener raw;
        RawPeer server;
        ASSERT_NO_FATAL_FAILURE(ConnectToScripted(raw, &server));
        Buffer destination(*client_pd, kLength, kRemoteAll);
        ibv_sge sge = destination.Sge(0, kLength);
        ASSERT_EQ(client.qp().PostSend(SendWr(IBV_WR_RDMA_READ, &sge, 1, 0x10000, 7)), 0);
        wire::Header request;
        ASSERT_TRUE(server.ReadMessage(&request));
        ASSERT_EQ(request.opcode, wire::Opcode::kReadRequest);

        wire::Header response;
        response.opcode = wire::Opcode::kReadResponse;
        response.length = kLength;
        response.sequence = request.sequence;
        const std::vector<uint8_t> payload(kLength, 0xab);
        ASSERT_TRUE(server.SendHeader(response));
        ASSERT_TRUE(server.Send(payload.data(), kFirstPart));
        ASSERT_TRUE(WaitForByte(&destination.data()[kFirstPart - 1], 0xab));

        ASSERT_EQ(client.id->Disconnect(), 0);
        client.id->DestroyQp();
        client.id.reset();
        wire::Header goodbye;
        do {
            ASSERT_TRUE(server.ReadMessage(&goodbye));
        } while (goodbye.opcode != wire::Opcode::kDisconnect);
        ASSERT_TRUE(server.Send(payload.data() + kFirstPart, kLength - kFirstPart));
        wire::Header disconnect;
        disconnect.opcode = wire::Opcode::kDisconnect;
        ASSERT_TRUE(server.SendHeader(disconnect));
        EXPECT_TRUE(server.WaitClosed());
        server = RawPeer();  // our end of stream finishes the disconnection
        // A destroyed queue pair writes nothing more into memory.
        EXPECT_EQ(destination.data()[kLength - 1], 0);
        ASSERT_NO_FATAL_FAILURE(ExpectAnotherConnectionWorks());
    }
};

// The READ_RESPONSE's header and the first part of its payload arrived,
// then the application disconnected and destroyed the queue pair without
// waiting for the disconnection: the rest of the payload has no WR to
// complete and no memory to go to. Once, completing it popped an empty send
// queue, whose size wrapped, and the progress thread spun in FlushAll with
// the connection locked: every connection of the process hung.
TEST_F(TcpHostilePeer, QueuePairDestroyedDuringReadResponseLeavesProcessWorking) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_EXIT(
        {
            InChild(kChildAlarmSeconds);
            ReadInterruptedByQueuePairDestruction();
            ExitChild();
        },
        ::testing::ExitedWithCode(0), "");
}

// A peer's declared send-queue depth bounds how many READ responses the
// target queues for it. Declared as 2^32 - 1 it once meant no bound at all:
// a peer that never reads its responses grew the target's queue without
// limit. The declaration is clamped to the deepest queue this provider
// creates (kMaxQueueDepth), so one READ more than that breaks the
// connection.
TEST_F(TcpHostilePeer, DeclaredSendQueueDepthIsClampedToTheDeepestQueue) {
    RawPeer raw;
    ASSERT_NO_FATAL_FAILURE(AcceptScripted(&raw, UINT32_MAX));
    Buffer remote(*server_pd, 64 << 10, kRemoteAll);
    // Headers only, batched: the scripted client never reads a response.
    constexpr size_t kBatch = 256;
    std::vector<uint8_t> batch(kBatch * wire::kHeaderSize);
    uint64_t sequence = 1;
    bool sent_all = true;
    // Twice the bound: some responses leave through the socket meanwhile.
    while (sequence <= 2 * uint64_t{kMaxQueueDepth} && sent_all) {
        for (size_t i = 0; i < kBatch; ++i) {
            wire::Header read;
            read.opcode = wire::Opcode::kReadRequest;
            read.length = 64 << 10;
            read.remote_addr = remote.addr();
            read.rkey = remote.rkey();
            read.sequence = sequence++;
            const wire::EncodedHeader encoded = wire::EncodeHeader(read);
            memcpy(&batch[i * wire::kHeaderSize], encoded.data(), encoded.size());
        }
        sent_all = raw.Send(batch.data(), batch.size());
    }
    EXPECT_TRUE(raw.WaitClosed());
    EXPECT_EQ(WaitEventType(*server.id), CmEventType::kConnectError);
}

// Strangers at the listener: whatever is not a CONNECT_REQUEST is closed
// at once, before any queue pair exists; no handshake timeout is waited for
// when the first bytes already say it is not rpma.
constexpr int kPromptMs = 1000;

TEST_F(TcpHostilePeer, NonRpmaClientsAreClosedPromptly) {
    ASSERT_NO_FATAL_FAILURE(StartListening());
    std::vector<uint8_t> random(200);
    uint32_t state = 12345;
    for (uint8_t &byte : random)
        byte = static_cast<uint8_t>((state = state * 1103515245 + 12345) >> 24);
    random[0] = 0xff;  // whatever follows, not an opcode
    const std::string short_http = "GET / HTTP/1.1\r\n\r\n";
    const std::string long_http =
        "GET /index.html HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: curl/7.88.1\r\n"
        "Accept: */*\r\n\r\n";
    for (const std::string &bytes :
         {std::string(random.begin(), random.end()), short_http, long_http}) {
        SCOPED_TRACE(bytes.substr(0, 16));
        RawPeer raw = RawPeer::ConnectTo(port);
        ASSERT_TRUE(raw.Send(bytes));
        EXPECT_TRUE(raw.WaitClosed(kPromptMs));
    }
    // The start of a CONNECT_REQUEST, then the first byte of a wrong one.
    RawPeer raw = RawPeer::ConnectTo(port);
    const uint8_t wrong[] = {static_cast<uint8_t>(wire::Opcode::kConnectRequest), 0, 0xff};
    ASSERT_TRUE(raw.Send(wrong, sizeof(wrong)));
    EXPECT_TRUE(raw.WaitClosed(kPromptMs));
    // The listener still serves rpma clients.
    EXPECT_EQ(listener->NextRequest(&server.id), EAGAIN);
    ASSERT_NO_FATAL_FAILURE(ExpectAnotherConnectionWorks());
}

// Another protocol behind our header (wrong magic) is closed; rpma of
// another version (our magic, another version) is told so with a REJECT.
TEST_F(TcpHostilePeer, HandshakeOfAnotherProtocolOrVersionIsClosedOrRejected) {
    ASSERT_NO_FATAL_FAILURE(StartListening());
    RawPeer stranger = RawPeer::ConnectTo(port);
    ASSERT_TRUE(stranger.SendHandshake(wire::Opcode::kConnectRequest, 16, /*magic=*/0x50545448));
    EXPECT_TRUE(stranger.WaitClosed(kPromptMs));
    RawPeer future = RawPeer::ConnectTo(port);
    ASSERT_TRUE(future.SendHandshake(wire::Opcode::kConnectRequest, 16, wire::kMagic,
                                     /*version=*/wire::kVersion + 1));
    wire::Header answer;
    ASSERT_TRUE(future.ReadMessage(&answer));
    EXPECT_EQ(answer.opcode, wire::Opcode::kReject);
    EXPECT_TRUE(future.WaitClosed(kPromptMs));
}

// A CONNECT_REQUEST's header, then silence: closed when the handshake
// timeout expires, not kept forever.
TEST_F(TcpHostilePeer, HeaderThenSilenceIsClosedByTheHandshakeTimeout) {
    ASSERT_NO_FATAL_FAILURE(StartListening());
    RawPeer raw = RawPeer::ConnectTo(port);
    wire::Header request;
    request.opcode = wire::Opcode::kConnectRequest;
    request.length = wire::kHandshakePrefixSize;
    ASSERT_TRUE(raw.SendHeader(request));
    EXPECT_TRUE(raw.WaitClosed(15000));
}

// The provider as a client of something that is not an rpma server learns
// it as REJECTED, at once, not as a lost connection after a timeout.
TEST_F(TcpHostilePeer, ConnectingToANonRpmaServerIsRejected) {
    struct Case {
        const char *name;
        std::function<void(RawPeer &)> answer;
    };
    const std::vector<Case> cases = {
        {"http",
         [](RawPeer &raw) {
             raw.Send(
                 "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close"
                 "\r\n\r\n");
         }},
        {"short", [](RawPeer &raw) { raw.Send("SSH-2.0-OpenSSH_9.2\r\n"); }},
        {"wrong magic",
         [](RawPeer &raw) { raw.SendHandshake(wire::Opcode::kAccept, 16, /*magic=*/1); }},
        {"wrong version",
         [](RawPeer &raw) {
             raw.SendHandshake(wire::Opcode::kAccept, 16, wire::kMagic, wire::kVersion + 1);
         }},
        {"closed", [](RawPeer &raw) { raw = RawPeer(); }},
    };
    for (const Case &c : cases) {
        SCOPED_TRACE(c.name);
        RawListener raw_listener;
        port = raw_listener.Port();
        ASSERT_NO_FATAL_FAILURE(CreateClient(PairOptions{}));
        ASSERT_EQ(client.id->Connect(nullptr, 0, kTimeoutMs), 0);
        RawPeer raw = raw_listener.Accept();
        ASSERT_TRUE(raw.ReadHandshake(wire::Opcode::kConnectRequest));
        c.answer(raw);
        EXPECT_EQ(WaitEventType(*client.id, kPromptMs), CmEventType::kRejected);
        client.id.reset();
    }
}

}  // namespace
}  // namespace rpma::provider::tcp::testing
