// Handshake alone: its messages read back as what they announce, what a
// peer's prefix says (this version, another version, another protocol),
// the peer's depth bounded, the private data's bound, a stranger's first
// bytes, and the addresses of an outgoing connection tried in turn.
#include "rpma_core/src/provider/tcp/tcp_handshake.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>

#include <cstring>
#include <vector>

#include "rpma_core/src/provider/tcp/tcp_protection_domain.h"

namespace rpma::provider::tcp {
namespace {

// What the peer reads of `message`: its header parsed, its payload staged.
InboundMessage Received(const OutboundMessage &message) {
    InboundMessage in;
    in.header = message.header;
    memcpy(in.small.data(), message.inline_payload.data(), message.inline_length);
    in.payload_length = message.inline_length;
    return in;
}

TEST(HandshakeTest, AConnectRequestCarriesTheDepthAndThePrivateData) {
    Handshake ours;
    const uint8_t data[] = {1, 2, 3, 4, 5};
    ours.SetConnectData(data, sizeof(data));
    const OutboundMessage request = ours.ConnectRequest(128);
    EXPECT_EQ(request.header.opcode, wire::Opcode::kConnectRequest);
    EXPECT_EQ(request.header.length, request.inline_length);
    Handshake theirs;
    ASSERT_EQ(theirs.Take(Received(request)), Handshake::Peer::kRpma);
    EXPECT_EQ(theirs.peer_send_queue_depth(), 128u);
    EXPECT_EQ(theirs.peer_private_data(), std::vector<uint8_t>(data, data + sizeof(data)));
}

TEST(HandshakeTest, AnAcceptWithoutPrivateDataCarriesNone) {
    const OutboundMessage accept = Handshake::Accept(7, nullptr, 0);
    EXPECT_EQ(accept.header.opcode, wire::Opcode::kAccept);
    Handshake theirs;
    ASSERT_EQ(theirs.Take(Received(accept)), Handshake::Peer::kRpma);
    EXPECT_EQ(theirs.peer_send_queue_depth(), 7u);
    EXPECT_TRUE(theirs.peer_private_data().empty());
}

TEST(HandshakeTest, ThePeersDeclaredDepthIsBounded) {
    Handshake theirs;
    ASSERT_EQ(theirs.Take(Received(Handshake::Accept(0, nullptr, 0))), Handshake::Peer::kRpma);
    EXPECT_EQ(theirs.peer_send_queue_depth(), 1u) << "0 still lets one READ be answered";
    ASSERT_EQ(theirs.Take(Received(Handshake::Accept(UINT32_MAX, nullptr, 0))),
              Handshake::Peer::kRpma);
    EXPECT_EQ(theirs.peer_send_queue_depth(), kMaxQueueDepth);
}

TEST(HandshakeTest, AnotherVersionOrProtocolIsToldApart) {
    const OutboundMessage request = Handshake().ConnectRequest(16);
    InboundMessage other_version = Received(request);
    wire::HandshakePrefix prefix;
    prefix.version = wire::kVersion + 1;
    prefix.send_queue_depth = 16;
    uint8_t encoded[wire::kHandshakePrefixSize];
    wire::EncodeHandshakePrefix(prefix, encoded);
    memcpy(other_version.small.data(), encoded, sizeof(encoded));
    Handshake theirs;
    EXPECT_EQ(theirs.Take(other_version), Handshake::Peer::kOtherVersion);
    InboundMessage other_protocol = Received(request);
    other_protocol.small[0] ^= 0xff;  // the magic
    EXPECT_EQ(theirs.Take(other_protocol), Handshake::Peer::kOtherProtocol);
    InboundMessage cut = Received(request);
    cut.payload_length = 2;
    EXPECT_EQ(theirs.Take(cut), Handshake::Peer::kOtherProtocol);
    EXPECT_EQ(theirs.peer_send_queue_depth(), 1u) << "nothing taken from a refused prefix";
}

TEST(HandshakeTest, PrivateDataIsBoundedAsRdmaCmBoundsIt) {
    const std::vector<uint8_t> data(wire::kMaxPrivateData + 1, 0);
    EXPECT_EQ(Handshake::CheckPrivateData(data.data(), wire::kMaxPrivateData, "connect"), 0);
    EXPECT_EQ(Handshake::CheckPrivateData(data.data(), wire::kMaxPrivateData + 1, "connect"),
              EINVAL);
    EXPECT_EQ(Handshake::CheckPrivateData(nullptr, 1, "accept"), EINVAL);
    EXPECT_EQ(Handshake::CheckPrivateData(nullptr, 0, "accept"), 0);
}

TEST(HandshakeTest, AStrangersFirstBytesAreToldApartBeforeAWholeHeader) {
    InboundMessage in;
    const wire::EncodedHeader request = wire::EncodeHeader(Handshake().ConnectRequest(1).header);
    memcpy(in.header_bytes, request.data(), 8);
    in.header_received = 8;
    EXPECT_TRUE(Handshake::Plausible(ConnectionState::kAwaitingRequest, in));
    EXPECT_FALSE(Handshake::Plausible(ConnectionState::kAwaitingReply, in))
        << "a client waits for ACCEPT or REJECT, not a request";
    memcpy(in.header_bytes, "GET / HT", 8);
    EXPECT_FALSE(Handshake::Plausible(ConnectionState::kAwaitingRequest, in));
    EXPECT_TRUE(Handshake::Plausible(ConnectionState::kEstablished, in))
        << "after the handshake this is not its question";
}

TEST(HandshakeTest, AnAddressThatTakesNoSocketIsSkippedForTheNext) {
    SocketAddress unsupported;
    unsupported.storage.ss_family = AF_APPLETALK;
    unsupported.length = sizeof(sockaddr_in);
    SocketAddress loopback;
    auto *in = reinterpret_cast<sockaddr_in *>(&loopback.storage);
    in->sin_family = AF_INET;
    in->sin_port = htons(9);
    in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    loopback.length = sizeof(sockaddr_in);
    Handshake handshake;
    handshake.SetAddresses({unsupported, loopback});
    std::string peer;
    UniqueFd socket = handshake.ConnectNext(&peer);
    EXPECT_TRUE(socket.Valid());
    EXPECT_EQ(peer, loopback.ToString());
    EXPECT_FALSE(handshake.ConnectNext(&peer).Valid()) << "none is left";
}

}  // namespace
}  // namespace rpma::provider::tcp
