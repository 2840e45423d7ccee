// The wire format's encoder and its validation of untrusted headers.
#include "rpma_core/src/provider/tcp/tcp_wire.h"

#include <gtest/gtest.h>

#include <cstring>

namespace rpma::provider::tcp::wire {
namespace {

ParseError ParseBytes(const EncodedHeader &encoded, Header *header) {
    uint8_t bytes[kHeaderSize];
    memcpy(bytes, encoded.data(), kHeaderSize);
    return ParseHeader(bytes, header);
}

TEST(TcpWire, HeaderRoundTripsLittleEndian) {
    Header header;
    header.opcode = Opcode::kWriteWithImm;
    header.length = 0x01020304;
    header.remote_addr = 0x1122334455667788ull;
    header.rkey = 0xa1b2c3d4;
    header.imm = 0x0badf00d;
    header.sequence = 42;
    const EncodedHeader encoded = EncodeHeader(header);
    EXPECT_EQ(encoded[0], static_cast<uint8_t>(Opcode::kWriteWithImm));
    EXPECT_EQ(encoded[4], 0x04);  // little-endian length
    EXPECT_EQ(encoded[8], 0x88);
    Header parsed;
    ASSERT_EQ(ParseBytes(encoded, &parsed), ParseError::kNone);
    EXPECT_EQ(parsed.opcode, header.opcode);
    EXPECT_EQ(parsed.length, header.length);
    EXPECT_EQ(parsed.remote_addr, header.remote_addr);
    EXPECT_EQ(parsed.rkey, header.rkey);
    EXPECT_EQ(parsed.imm, header.imm);
    EXPECT_EQ(parsed.sequence, header.sequence);
}

TEST(TcpWire, UnknownOpcodeIsRejected) {
    EncodedHeader encoded = EncodeHeader(Header{});
    encoded[0] = 0xff;
    Header parsed;
    EXPECT_EQ(ParseBytes(encoded, &parsed), ParseError::kUnknownOpcode);
}

TEST(TcpWire, ReservedBitsAreRejected) {
    for (size_t at : {size_t{2}, size_t{3}, size_t{32}, size_t{47}, kHeaderSize - 1}) {
        EncodedHeader encoded = EncodeHeader(Header{});
        encoded[at] = 1;
        Header parsed;
        EXPECT_EQ(ParseBytes(encoded, &parsed), ParseError::kReservedBitsSet) << "byte " << at;
    }
}

TEST(TcpWire, LengthsAreCheckedPerOpcode) {
    Header parsed;
    Header write;
    write.opcode = Opcode::kWrite;
    write.length = static_cast<uint32_t>(kMaxMessageLength) + 1;
    EXPECT_EQ(ParseBytes(EncodeHeader(write), &parsed), ParseError::kBadLength);

    Header connect;
    connect.opcode = Opcode::kConnectRequest;
    connect.length = kMaxHandshakePayload + 1;  // private data over 56 bytes
    EXPECT_EQ(ParseBytes(EncodeHeader(connect), &parsed), ParseError::kBadLength);
    connect.length = kHandshakePrefixSize - 1;
    EXPECT_EQ(ParseBytes(EncodeHeader(connect), &parsed), ParseError::kBadLength);

    Header atomic;
    atomic.opcode = Opcode::kAtomicWrite;
    atomic.length = 4;
    EXPECT_EQ(ParseBytes(EncodeHeader(atomic), &parsed), ParseError::kBadLength);

    Header ack;
    ack.opcode = Opcode::kAck;
    ack.length = 1;
    EXPECT_EQ(ParseBytes(EncodeHeader(ack), &parsed), ParseError::kBadLength);
}

TEST(TcpWire, FlushNeedsAKnownTypeAndOthersNoFlags) {
    Header parsed;
    Header flush;
    flush.opcode = Opcode::kFlush;
    flush.flags = 3;
    EXPECT_EQ(ParseBytes(EncodeHeader(flush), &parsed), ParseError::kBadFlags);
    flush.flags = kFlushPersistent;
    EXPECT_EQ(ParseBytes(EncodeHeader(flush), &parsed), ParseError::kNone);
    EXPECT_EQ(PayloadLength(parsed), 0u);  // a range, nothing follows
    Header write;
    write.opcode = Opcode::kWrite;
    write.flags = 1;
    EXPECT_EQ(ParseBytes(EncodeHeader(write), &parsed), ParseError::kBadFlags);
}

TEST(TcpWire, OnlySendsCarryAnAck) {
    Header parsed;
    Header send;
    send.opcode = Opcode::kSendWithImm;
    send.flags = kCarriesAck | kAckRequested;
    send.remote_addr = 41;
    ASSERT_EQ(ParseBytes(EncodeHeader(send), &parsed), ParseError::kNone);
    EXPECT_EQ(parsed.flags, kCarriesAck | kAckRequested);
    EXPECT_EQ(parsed.remote_addr, 41u);
    Header write;
    write.opcode = Opcode::kWrite;
    write.flags = kCarriesAck;
    EXPECT_EQ(ParseBytes(EncodeHeader(write), &parsed), ParseError::kBadFlags);
    Header ack;
    ack.opcode = Opcode::kAck;
    ack.flags = kCarriesAck;
    EXPECT_EQ(ParseBytes(EncodeHeader(ack), &parsed), ParseError::kBadFlags);
}

TEST(TcpWire, AckRequestCarriesNothing) {
    Header parsed;
    Header ask;
    ask.opcode = Opcode::kAckRequest;
    ASSERT_EQ(ParseBytes(EncodeHeader(ask), &parsed), ParseError::kNone);
    EXPECT_FALSE(IsRequest(parsed.opcode));  // consumes no sequence number
    ask.length = 8;
    EXPECT_EQ(ParseBytes(EncodeHeader(ask), &parsed), ParseError::kBadLength);
}

TEST(TcpWire, HandshakePrefixNeedsOurMagicAndVersion) {
    HandshakePrefix prefix;
    prefix.send_queue_depth = 128;
    uint8_t bytes[kHandshakePrefixSize];
    EncodeHandshakePrefix(prefix, bytes);
    HandshakePrefix parsed;
    ASSERT_TRUE(ParseHandshakePrefix(bytes, sizeof(bytes), &parsed));
    EXPECT_EQ(parsed.send_queue_depth, 128u);
    EXPECT_FALSE(ParseHandshakePrefix(bytes, sizeof(bytes) - 1, &parsed));
    bytes[0] ^= 1;
    EXPECT_FALSE(ParseHandshakePrefix(bytes, sizeof(bytes), &parsed));
}

}  // namespace
}  // namespace rpma::provider::tcp::wire
