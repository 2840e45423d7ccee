#include "rpma_core/src/provider/tcp/tcp_wire.h"

#include <algorithm>
#include <bit>
#include <cstring>

namespace rpma::provider::tcp::wire {
namespace {

// Little-endian fields: one move each on little-endian hosts.
template <typename T>
void Store(uint8_t *out, T value) {
    if constexpr (std::endian::native == std::endian::little) {
        memcpy(out, &value, sizeof(T));
    } else {
        for (size_t i = 0; i < sizeof(T); ++i)
            out[i] = static_cast<uint8_t>(static_cast<uint64_t>(value) >> (8 * i));
    }
}

template <typename T>
T Load(const uint8_t *in) {
    if constexpr (std::endian::native == std::endian::little) {
        T value;
        memcpy(&value, in, sizeof(T));
        return value;
    } else {
        uint64_t value = 0;
        for (size_t i = 0; i < sizeof(T); ++i)
            value |= static_cast<uint64_t>(in[i]) << (8 * i);
        return static_cast<T>(value);
    }
}

bool IsKnownOpcode(uint8_t raw) {
    switch (static_cast<Opcode>(raw)) {
        case Opcode::kConnectRequest:
        case Opcode::kAccept:
        case Opcode::kReject:
        case Opcode::kReadyToUse:
        case Opcode::kDisconnect:
        case Opcode::kWrite:
        case Opcode::kWriteWithImm:
        case Opcode::kReadRequest:
        case Opcode::kAtomicWrite:
        case Opcode::kFlush:
        case Opcode::kSend:
        case Opcode::kSendWithImm:
        case Opcode::kAck:
        case Opcode::kNak:
        case Opcode::kReadResponse:
        case Opcode::kAckRequest:
            return true;
    }
    return false;
}

}  // namespace

EncodedHeader EncodeHeader(const Header &header) {
    EncodedHeader out{};
    out[0] = static_cast<uint8_t>(header.opcode);
    out[1] = header.flags;
    Store<uint32_t>(&out[4], header.length);
    Store<uint64_t>(&out[8], header.remote_addr);
    Store<uint32_t>(&out[16], header.rkey);
    // The immediate is the application's four bytes, already in network
    // order; it travels untouched.
    memcpy(&out[20], &header.imm, 4);
    Store<uint64_t>(&out[24], header.sequence);
    return out;
}

ParseError ParseHeader(const uint8_t (&bytes)[kHeaderSize], Header *header) {
    if (!IsKnownOpcode(bytes[0]))
        return ParseError::kUnknownOpcode;
    if (bytes[2] != 0 || bytes[3] != 0 || Load<uint64_t>(&bytes[32]) != 0 ||
        Load<uint64_t>(&bytes[40]) != 0 || Load<uint64_t>(&bytes[48]) != 0 ||
        Load<uint64_t>(&bytes[56]) != 0)
        return ParseError::kReservedBitsSet;
    Header h;
    h.opcode = static_cast<Opcode>(bytes[0]);
    h.flags = bytes[1];
    h.length = Load<uint32_t>(&bytes[4]);
    h.remote_addr = Load<uint64_t>(&bytes[8]);
    h.rkey = Load<uint32_t>(&bytes[16]);
    memcpy(&h.imm, &bytes[20], 4);
    h.sequence = Load<uint64_t>(&bytes[24]);

    if (h.length > kMaxMessageLength)
        return ParseError::kBadLength;
    uint8_t type_flags = h.flags;
    if (IsRequest(h.opcode))
        type_flags &= static_cast<uint8_t>(~kAckRequested);
    if (IsSend(h.opcode))
        type_flags &= static_cast<uint8_t>(~kCarriesAck);
    if (h.opcode == Opcode::kFlush) {
        if (type_flags != kFlushPersistent && type_flags != kFlushVisibility)
            return ParseError::kBadFlags;
    } else if (type_flags != 0) {
        return ParseError::kBadFlags;
    }
    switch (h.opcode) {
        case Opcode::kConnectRequest:
        case Opcode::kAccept:
            if (h.length < kHandshakePrefixSize || h.length > kMaxHandshakePayload)
                return ParseError::kBadLength;
            break;
        case Opcode::kReject:
        case Opcode::kReadyToUse:
        case Opcode::kDisconnect:
        case Opcode::kAck:
        case Opcode::kNak:
        case Opcode::kAckRequest:
            if (h.length != 0)
                return ParseError::kBadLength;
            break;
        case Opcode::kAtomicWrite:
            if (h.length != kAtomicWriteSize)
                return ParseError::kBadLength;
            break;
        default:
            break;
    }
    *header = h;
    return ParseError::kNone;
}

const char *ParseErrorString(ParseError error) {
    switch (error) {
        case ParseError::kNone:
            return "no error";
        case ParseError::kUnknownOpcode:
            return "unknown opcode";
        case ParseError::kReservedBitsSet:
            return "reserved bits set";
        case ParseError::kBadLength:
            return "length out of range for the opcode";
        case ParseError::kBadFlags:
            return "invalid flags for the opcode";
    }
    return "unknown error";
}

uint32_t PayloadLength(const Header &header) {
    switch (header.opcode) {
        case Opcode::kReadRequest:
        case Opcode::kFlush:
            return 0;  // `length` names a remote range, nothing follows
        default:
            return header.length;
    }
}

bool IsRequest(Opcode opcode) {
    switch (opcode) {
        case Opcode::kWrite:
        case Opcode::kWriteWithImm:
        case Opcode::kReadRequest:
        case Opcode::kAtomicWrite:
        case Opcode::kFlush:
        case Opcode::kSend:
        case Opcode::kSendWithImm:
            return true;
        default:
            return false;
    }
}

bool IsSend(Opcode opcode) {
    return opcode == Opcode::kSend || opcode == Opcode::kSendWithImm;
}

bool IsAnswer(uint8_t opcode) {
    return opcode == static_cast<uint8_t>(Opcode::kAck) ||
           opcode == static_cast<uint8_t>(Opcode::kNak) ||
           opcode == static_cast<uint8_t>(Opcode::kReadResponse);
}

const char *OpcodeName(Opcode opcode) {
    switch (opcode) {
        case Opcode::kConnectRequest:
            return "CONNECT_REQUEST";
        case Opcode::kAccept:
            return "ACCEPT";
        case Opcode::kReject:
            return "REJECT";
        case Opcode::kReadyToUse:
            return "READY_TO_USE";
        case Opcode::kDisconnect:
            return "DISCONNECT";
        case Opcode::kWrite:
            return "WRITE";
        case Opcode::kWriteWithImm:
            return "WRITE_WITH_IMM";
        case Opcode::kReadRequest:
            return "READ_REQUEST";
        case Opcode::kAtomicWrite:
            return "ATOMIC_WRITE";
        case Opcode::kFlush:
            return "FLUSH";
        case Opcode::kSend:
            return "SEND";
        case Opcode::kSendWithImm:
            return "SEND_WITH_IMM";
        case Opcode::kAck:
            return "ACK";
        case Opcode::kNak:
            return "NAK";
        case Opcode::kReadResponse:
            return "READ_RESPONSE";
        case Opcode::kAckRequest:
            return "ACK_REQUEST";
    }
    return "UNKNOWN";
}

void EncodeHandshakePrefix(const HandshakePrefix &prefix, uint8_t (&out)[kHandshakePrefixSize]) {
    Store<uint32_t>(&out[0], prefix.magic);
    Store<uint16_t>(&out[4], prefix.version);
    Store<uint16_t>(&out[6], 0);
    Store<uint32_t>(&out[8], prefix.send_queue_depth);
}

bool ParseHandshakePrefix(const uint8_t *bytes, size_t length, HandshakePrefix *prefix) {
    if (length < kHandshakePrefixSize)
        return false;
    HandshakePrefix p;
    p.magic = Load<uint32_t>(&bytes[0]);
    p.version = Load<uint16_t>(&bytes[4]);
    p.send_queue_depth = Load<uint32_t>(&bytes[8]);
    if (p.magic != kMagic || p.version != kVersion)
        return false;
    *prefix = p;
    return true;
}

bool HasMagic(const uint8_t *bytes, size_t length) {
    return length >= sizeof(uint32_t) && Load<uint32_t>(bytes) == kMagic;
}

bool CouldStartHandshake(const uint8_t *bytes, size_t length, Opcode first, Opcode second) {
    if (length >= 1 && bytes[0] != static_cast<uint8_t>(first) &&
        bytes[0] != static_cast<uint8_t>(second))
        return false;
    for (size_t i = 1; i < std::min<size_t>(length, 4); ++i) {
        if (bytes[i] != 0)
            return false;
    }
    return true;
}

}  // namespace rpma::provider::tcp::wire
