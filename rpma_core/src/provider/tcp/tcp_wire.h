// The tcp provider's wire format. Every message is a fixed 64-byte
// little-endian header, optionally followed by a payload:
//
//   offset  size  field
//        0     1  opcode       (Opcode)
//        1     1  flags        (requests: kAckRequested, plus for FLUSH
//                               one FlushFlags type, for SEND and
//                               SEND_WITH_IMM kCarriesAck; otherwise 0)
//        2     2  reserved     (must be 0)
//        4     4  length       (payload length, or the range length of
//                               READ_REQUEST and FLUSH, which carry none)
//        8     8  remote_addr  (target virtual address of one-sided ops;
//                               SEND with kCarriesAck: a cumulative ACK)
//       16     4  rkey         (NAK: the ibv_wc_status to report)
//       20     4  imm          (immediate data, sent as the application's
//                               four bytes, already in network order)
//       24     8  sequence     (requests: 1, 2, 3, ... per direction;
//                               ACK: last request applied; READ_RESPONSE and
//                               NAK: the request they answer)
//       32    32  reserved     (must be 0)
//
// The header fills a cache line so that a payload keeps, in the socket's
// buffers and in the receiver's stage, the alignment it has in memory: the
// kernel's copies (rep movsb) of a 4 KiB payload behind a 32-byte header
// took measurably longer than behind a 64-byte one.
//
// Acknowledgements are cumulative and, as InfiniBand's AckReq bit has it,
// requested: a request flagged kAckRequested is acknowledged as soon as it
// is applied (the initiator sets it on signaled WRs and whenever half its
// send queue awaits an answer); the ACK for other requests rides along with
// the next message the target sends anyway (same sendmsg; a SEND carries it
// in its own header, kCarriesAck) or with the next requested one. So a
// message and its reply cost one segment, and a SEND one header, each way.
//
// CONNECT_REQUEST and ACCEPT carry a HandshakePrefix (magic, version, the
// sender's send-queue depth) followed by up to 56 bytes of private data. The
// peer's send-queue depth bounds how many answers it may leave unread.
//
// Nothing read from the network is trusted: ParseHeader checks the opcode,
// the reserved bits and every length before the receiver acts on a header.
#ifndef RPMA_CORE_SRC_PROVIDER_TCP_TCP_WIRE_H
#define RPMA_CORE_SRC_PROVIDER_TCP_TCP_WIRE_H

#include <array>
#include <cstddef>
#include <cstdint>

namespace rpma::provider::tcp::wire {

enum class Opcode : uint8_t {
    // Connection management.
    kConnectRequest = 1,
    kAccept = 2,
    kReject = 3,
    kReadyToUse = 4,
    kDisconnect = 5,
    // Requests (consume a sequence number, executed in order by the target).
    kWrite = 16,
    kWriteWithImm = 17,
    kReadRequest = 18,
    kAtomicWrite = 19,
    kFlush = 20,
    kSend = 21,
    kSendWithImm = 22,
    // Answers.
    kAck = 32,
    kNak = 33,
    kReadResponse = 34,
    // Initiator to target: acknowledge what was applied now (the initiator
    // posted a request it will not send, which must not wait behind ACKs
    // that nothing else would ask for; or it probes a quiet peer for
    // liveness, tcp_liveness.h). Always answered, with a repeated ACK when
    // nothing new was applied.
    kAckRequest = 35,
};

enum FlushFlags : uint8_t {
    kFlushPersistent = 1,
    kFlushVisibility = 2,
};

// Any request: acknowledge it as soon as it is applied.
inline constexpr uint8_t kAckRequested = 0x80;
// SEND and SEND_WITH_IMM, which address no remote memory: remote_addr is
// a cumulative ACK (as the sequence of an ACK message) sent along.
inline constexpr uint8_t kCarriesAck = 0x40;

inline constexpr size_t kHeaderSize = 64;
inline constexpr size_t kMaxPrivateData = 56;
inline constexpr uint32_t kMagic = 0x414d5052;  // "RPMA" in little-endian
inline constexpr uint16_t kVersion = 4;         // 3: kCarriesAck, kAckRequest; 4: 64-byte header
inline constexpr size_t kHandshakePrefixSize = 12;
inline constexpr size_t kMaxHandshakePayload = kHandshakePrefixSize + kMaxPrivateData;
// Payloads and ranges are capped (below SSIZE_MAX) per message; a longer WRITE,
// READ or FLUSH goes as several requests (tcp_parts.h).
inline constexpr uint64_t kMaxMessageLength = uint64_t{1} << 31;
inline constexpr size_t kAtomicWriteSize = 8;

struct Header {
    Opcode opcode = Opcode::kAck;
    uint8_t flags = 0;
    uint32_t length = 0;
    uint64_t remote_addr = 0;
    uint32_t rkey = 0;
    uint32_t imm = 0;
    uint64_t sequence = 0;
};

// A cumulative ACK of every request up to `sequence`.
inline Header AckHeader(uint64_t sequence) {
    Header header;
    header.opcode = Opcode::kAck;
    header.sequence = sequence;
    return header;
}

using EncodedHeader = std::array<uint8_t, kHeaderSize>;

EncodedHeader EncodeHeader(const Header &header);

enum class ParseError {
    kNone,
    kUnknownOpcode,
    kReservedBitsSet,
    kBadLength,
    kBadFlags,
};

// Decodes and validates `bytes`; on success returns kNone.
ParseError ParseHeader(const uint8_t (&bytes)[kHeaderSize], Header *header);
const char *ParseErrorString(ParseError error);

// How many payload bytes follow a (validated) header on the stream.
uint32_t PayloadLength(const Header &header);

bool IsRequest(Opcode opcode);
bool IsSend(Opcode opcode);
// ACK, NAK or READ_RESPONSE: what a target sends back for the initiator's
// requests. Takes the raw byte so that a header that failed to parse can
// still be told apart.
bool IsAnswer(uint8_t opcode);
const char *OpcodeName(Opcode opcode);

struct HandshakePrefix {
    uint32_t magic = kMagic;
    uint16_t version = kVersion;
    uint32_t send_queue_depth = 0;
};

void EncodeHandshakePrefix(const HandshakePrefix &prefix, uint8_t (&out)[kHandshakePrefixSize]);
// False when the magic or the version is not ours.
bool ParseHandshakePrefix(const uint8_t *bytes, size_t length, HandshakePrefix *prefix);
// The prefix carries our magic (whatever its version): the peer speaks
// rpma, of this version or another.
bool HasMagic(const uint8_t *bytes, size_t length);
// Whether the first `length` bytes of a header (fewer than kHeaderSize)
// can begin a handshake message of one of `opcodes`: the opcode, and
// flags and reserved bytes of 0. Lets a stranger be told at once.
bool CouldStartHandshake(const uint8_t *bytes, size_t length, Opcode first, Opcode second);

}  // namespace rpma::provider::tcp::wire

#endif  // RPMA_CORE_SRC_PROVIDER_TCP_TCP_WIRE_H
