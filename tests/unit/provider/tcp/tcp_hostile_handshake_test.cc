// Hostile peers during the handshake, on both sides of it: half-open
// connections (the peer ends its half of the stream with shutdown(SHUT_WR)
// and keeps reading) before, inside and after the CONNECT_REQUEST, and
// handshake messages whose declared length is out of bounds or disagrees
// with the bytes that follow. The provider never waits for a payload it
// refuses to read, never hands a broken request to the application, and
// keeps serving well-behaved peers.
#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "rpma_core/src/provider/tcp/tcp_device.h"
#include "tests/unit/provider/tcp/tcp_raw_peer.h"
#include "tests/unit/provider/tcp/tcp_test_support.h"

namespace rpma::provider::tcp::testing {
namespace {

// A refusal, or a close the peer asked for by closing its half, comes this
// soon: no timeout is waited for.
constexpr int kPromptMs = 1000;

class TcpHostileHandshake : public HostilePeerTest {
  protected:
    // No complete request reached the application.
    void ExpectNoRequest() {
        std::unique_ptr<provider::CmId> request;
        EXPECT_EQ(listener->NextRequest(&request), EAGAIN);
    }

    // A CONNECT_REQUEST's header declaring `length` bytes of payload.
    static wire::Header ConnectRequestHeader(uint32_t length) {
        wire::Header header;
        header.opcode = wire::Opcode::kConnectRequest;
        header.length = length;
        return header;
    }

    // The encoded CONNECT_REQUEST of an honest client, private data included.
    static std::vector<uint8_t> ConnectRequestBytes(size_t private_data) {
        const wire::EncodedHeader header = wire::EncodeHeader(
            ConnectRequestHeader(static_cast<uint32_t>(wire::kHandshakePrefixSize + private_data)));
        std::vector<uint8_t> bytes(header.begin(), header.end());
        uint8_t prefix[wire::kHandshakePrefixSize];
        wire::HandshakePrefix fields;
        fields.send_queue_depth = 16;
        wire::EncodeHandshakePrefix(fields, prefix);
        bytes.insert(bytes.end(), prefix, prefix + sizeof(prefix));
        bytes.insert(bytes.end(), private_data, 0x42);
        return bytes;
    }
};

// A peer that ends its half of the stream before its CONNECT_REQUEST is
// complete (at once, inside the header, inside the private data) sends no
// request any more: closed at once, nothing reaches the application.
TEST_F(TcpHostileHandshake, HalfClosedBeforeTheRequestIsCompleteIsClosedAtOnce) {
    ASSERT_NO_FATAL_FAILURE(StartListening());
    const std::vector<uint8_t> request = ConnectRequestBytes(wire::kMaxPrivateData);
    for (const size_t sent : {size_t{0}, size_t{10}, wire::kHeaderSize + 20, request.size() - 1}) {
        SCOPED_TRACE(sent);
        RawPeer raw = RawPeer::ConnectTo(port);
        ASSERT_TRUE(sent == 0 || raw.Send(request.data(), sent));
        ASSERT_TRUE(raw.ShutdownWrite());
        EXPECT_TRUE(raw.WaitClosed(kPromptMs));
    }
    ExpectNoRequest();
    ASSERT_NO_FATAL_FAILURE(ExpectAnotherConnectionWorks());
}

// A complete request, then the end of the peer's stream: the request was
// withdrawn. The application may still take it, but accepting it reports
// CONNECT_ERROR, never ESTABLISHED, and the socket is closed.
TEST_F(TcpHostileHandshake, HalfClosedAfterTheRequestFailsItsAccept) {
    ASSERT_NO_FATAL_FAILURE(StartListening());
    RawPeer raw = RawPeer::ConnectTo(port);
    ASSERT_TRUE(raw.SendHandshake(wire::Opcode::kConnectRequest, 16));
    ASSERT_TRUE(raw.ShutdownWrite());
    ASSERT_NO_FATAL_FAILURE(TakeRequest(PairOptions{}));
    ASSERT_EQ(server.id->Accept(nullptr, 0), 0);
    EXPECT_EQ(WaitEventType(*server.id), CmEventType::kConnectError);
    EXPECT_TRUE(raw.WaitClosed(kPromptMs));
    ASSERT_NO_FATAL_FAILURE(ExpectAnotherConnectionWorks());
}

// ACCEPT sent, and the peer ends its stream instead of READY_TO_USE: the
// accepted connection fails at once instead of at the handshake timeout.
TEST_F(TcpHostileHandshake, HalfClosedInsteadOfReadyToUseFailsTheConnection) {
    ASSERT_NO_FATAL_FAILURE(StartListening());
    RawPeer raw = RawPeer::ConnectTo(port);
    ASSERT_TRUE(raw.SendHandshake(wire::Opcode::kConnectRequest, 16));
    ASSERT_NO_FATAL_FAILURE(AcceptAndReadAccept(raw));
    ASSERT_TRUE(raw.ShutdownWrite());
    EXPECT_EQ(WaitEventType(*server.id, kPromptMs), CmEventType::kConnectError);
    EXPECT_TRUE(raw.WaitClosed(kPromptMs));
    ASSERT_NO_FATAL_FAILURE(ExpectAnotherConnectionWorks());
}

// A CONNECT_REQUEST declaring more than a handshake holds (prefix and 56
// bytes of private data), less than its prefix, or 4 GiB: closed on its
// header alone, without waiting for (or allocating) the payload it
// announces.
TEST_F(TcpHostileHandshake, ConnectRequestOfAnImpossibleLengthIsClosedOnItsHeader) {
    ASSERT_NO_FATAL_FAILURE(StartListening());
    for (const uint32_t length :
         {uint32_t{wire::kMaxHandshakePayload + 1}, uint32_t{4096}, uint32_t{1} << 31,
          uint32_t{UINT32_MAX}, uint32_t{wire::kHandshakePrefixSize - 1}, uint32_t{0}}) {
        SCOPED_TRACE(length);
        RawPeer raw = RawPeer::ConnectTo(port);
        ASSERT_TRUE(raw.SendHeader(ConnectRequestHeader(length)));
        EXPECT_TRUE(raw.WaitClosed(kPromptMs));
    }
    ExpectNoRequest();
    ASSERT_NO_FATAL_FAILURE(ExpectAnotherConnectionWorks());
}

// The header's length is the only length of the private data: a request
// declaring none but followed by 56 more bytes carries no private data,
// and the surplus is read as the next message once the application
// accepts: not a message, so the connection fails instead of being
// established.
TEST_F(TcpHostileHandshake, PrivateDataBeyondTheDeclaredLengthIsNotPrivateData) {
    ASSERT_NO_FATAL_FAILURE(StartListening());
    RawPeer raw = RawPeer::ConnectTo(port);
    std::vector<uint8_t> bytes = ConnectRequestBytes(0);
    bytes.insert(bytes.end(), wire::kMaxPrivateData, 0xab);
    ASSERT_TRUE(raw.Send(bytes.data(), bytes.size()));
    ASSERT_NO_FATAL_FAILURE(AcceptAndReadAccept(raw));
    EXPECT_TRUE(server.id->RequestPrivateData().empty());
    wire::Header ready;
    ready.opcode = wire::Opcode::kReadyToUse;
    ASSERT_TRUE(raw.SendHeader(ready));
    EXPECT_EQ(WaitEventType(*server.id, kPromptMs), CmEventType::kConnectError);
    EXPECT_TRUE(raw.WaitClosed(kPromptMs));
    ASSERT_NO_FATAL_FAILURE(ExpectAnotherConnectionWorks());
}

// READY_TO_USE carries nothing: one declaring 4 GiB fails the accepted
// connection at once.
TEST_F(TcpHostileHandshake, ReadyToUseWithALengthFailsTheConnection) {
    ASSERT_NO_FATAL_FAILURE(StartListening());
    RawPeer raw = RawPeer::ConnectTo(port);
    ASSERT_TRUE(raw.SendHandshake(wire::Opcode::kConnectRequest, 16));
    ASSERT_NO_FATAL_FAILURE(AcceptAndReadAccept(raw));
    wire::Header ready;
    ready.opcode = wire::Opcode::kReadyToUse;
    ready.length = UINT32_MAX;
    ASSERT_TRUE(raw.SendHeader(ready));
    EXPECT_EQ(WaitEventType(*server.id, kPromptMs), CmEventType::kConnectError);
    EXPECT_TRUE(raw.WaitClosed(kPromptMs));
    ASSERT_NO_FATAL_FAILURE(ExpectAnotherConnectionWorks());
}

// The provider as a client of a hostile server: an ACCEPT (or REJECT) of an
// impossible length, or cut short by the end of the server's stream, is
// REJECTED at once, never ESTABLISHED.
TEST_F(TcpHostileHandshake, AnswerOfAnImpossibleLengthIsRejected) {
    const auto accept_header = [](uint32_t length) {
        wire::Header header;
        header.opcode = wire::Opcode::kAccept;
        header.length = length;
        return header;
    };
    struct Case {
        const char *name;
        std::function<void(RawPeer &)> answer;
    };
    const std::vector<Case> cases = {
        {"ACCEPT beyond the handshake's maximum",
         [&](RawPeer &raw) { raw.SendHeader(accept_header(wire::kMaxHandshakePayload + 1)); }},
        {"ACCEPT of 4 GiB", [&](RawPeer &raw) { raw.SendHeader(accept_header(UINT32_MAX)); }},
        {"ACCEPT shorter than its prefix",
         [&](RawPeer &raw) { raw.SendHeader(accept_header(wire::kHandshakePrefixSize - 1)); }},
        {"ACCEPT cut short by a half-close",
         [&](RawPeer &raw) {
             raw.SendHeader(accept_header(wire::kMaxHandshakePayload));
             uint8_t prefix[wire::kHandshakePrefixSize];
             wire::EncodeHandshakePrefix(wire::HandshakePrefix{}, prefix);
             raw.Send(prefix, sizeof(prefix));
             raw.ShutdownWrite();
         }},
        {"REJECT with a length",
         [](RawPeer &raw) {
             wire::Header reject;
             reject.opcode = wire::Opcode::kReject;
             reject.length = UINT32_MAX;
             raw.SendHeader(reject);
         }},
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
        EXPECT_TRUE(raw.WaitClosed(kPromptMs));
        client.id.reset();
    }
    ASSERT_NO_FATAL_FAILURE(ExpectAnotherConnectionWorks());
}

// An ACCEPT announcing private data and then silent is waited for only as
// long as an unanswered request (Device::SetAwaitingReplyTimeout), then
// reported UNREACHABLE.
TEST_F(TcpHostileHandshake, AcceptCutShortBySilenceIsUnreachableAfterTheReplyTimeout) {
    auto &tcp_device = static_cast<tcp::Device &>(device());
    constexpr std::chrono::milliseconds kReplyTimeout{300};
    tcp_device.SetAwaitingReplyTimeout(kReplyTimeout);
    RawListener raw_listener;
    port = raw_listener.Port();
    ASSERT_NO_FATAL_FAILURE(CreateClient(PairOptions{}));
    ASSERT_EQ(client.id->Connect(nullptr, 0, kTimeoutMs), 0);
    RawPeer raw = raw_listener.Accept();
    ASSERT_TRUE(raw.ReadHandshake(wire::Opcode::kConnectRequest));
    wire::Header accept;
    accept.opcode = wire::Opcode::kAccept;
    accept.length = wire::kMaxHandshakePayload;
    ASSERT_TRUE(raw.SendHeader(accept));
    const auto start = std::chrono::steady_clock::now();
    EXPECT_EQ(WaitEventType(*client.id, static_cast<int>(kReplyTimeout.count()) + kPromptMs),
              CmEventType::kUnreachable);
    EXPECT_GE(std::chrono::steady_clock::now() - start, kReplyTimeout / 2);
    EXPECT_TRUE(raw.WaitClosed(kPromptMs));
    tcp_device.SetAwaitingReplyTimeout(tcp::Device::kDefaultAwaitingReplyTimeout);
    client.id.reset();
    ASSERT_NO_FATAL_FAILURE(ExpectAnotherConnectionWorks());
}

// An ACCEPT declaring no private data, followed by 56 more bytes: the
// connection is established without private data, and the surplus, read as
// the next message, breaks it.
TEST_F(TcpHostileHandshake, AcceptFollowedByMoreThanItDeclaresBreaksTheConnection) {
    RawListener raw_listener;
    port = raw_listener.Port();
    ASSERT_NO_FATAL_FAILURE(CreateClient(PairOptions{}));
    ASSERT_EQ(client.id->Connect(nullptr, 0, kTimeoutMs), 0);
    RawPeer raw = raw_listener.Accept();
    ASSERT_TRUE(raw.ReadHandshake(wire::Opcode::kConnectRequest));
    ASSERT_TRUE(raw.SendHandshake(wire::Opcode::kAccept, 16));
    const std::vector<uint8_t> surplus(wire::kHeaderSize, 0xab);
    ASSERT_TRUE(raw.Send(surplus.data(), surplus.size()));
    const std::optional<CmEvent> established = WaitEvent(*client.id);
    ASSERT_TRUE(established.has_value());
    EXPECT_EQ(established->type, CmEventType::kEstablished);
    EXPECT_TRUE(established->private_data.empty());
    EXPECT_EQ(WaitEventType(*client.id, kPromptMs), CmEventType::kConnectError);
    EXPECT_TRUE(raw.WaitClosed(kPromptMs));
    client.id.reset();
    ASSERT_NO_FATAL_FAILURE(ExpectAnotherConnectionWorks());
}

}  // namespace
}  // namespace rpma::provider::tcp::testing
