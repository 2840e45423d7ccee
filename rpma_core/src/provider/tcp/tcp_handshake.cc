// Handshake (tcp_handshake.h).
#include "rpma_core/src/provider/tcp/tcp_handshake.h"

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "rpma_core/src/log.h"
#include "rpma_core/src/provider/tcp/tcp_protection_domain.h"

namespace rpma::provider::tcp {
namespace {

OutboundMessage Message(wire::Opcode opcode, uint32_t send_queue_depth, const void *data,
                        size_t length) {
    OutboundMessage message;
    message.header.opcode = opcode;
    wire::HandshakePrefix prefix;
    prefix.send_queue_depth = send_queue_depth;
    uint8_t encoded[wire::kHandshakePrefixSize];
    wire::EncodeHandshakePrefix(prefix, encoded);
    memcpy(message.inline_payload.data(), encoded, sizeof(encoded));
    if (length > 0)
        memcpy(message.inline_payload.data() + sizeof(encoded), data, length);
    message.inline_length = sizeof(encoded) + length;
    message.header.length = static_cast<uint32_t>(message.inline_length);
    return message;
}

}  // namespace

int Handshake::CheckPrivateData(const void *data, uint8_t length, const char *what) {
    if (length > wire::kMaxPrivateData || (length > 0 && data == nullptr)) {
        RPMA_LOG_ERROR("cannot %s: private data of %u bytes (at most %zu)", what, length,
                       wire::kMaxPrivateData);
        return EINVAL;
    }
    return 0;
}

UniqueFd Handshake::ConnectNext(std::string *peer) {
    while (next_address_ < addresses_.size()) {
        const SocketAddress &address = addresses_[next_address_++];
        *peer = address.ToString();
        UniqueFd socket;
        if (OpenStreamSocket(address.Family(), &socket) != 0)
            continue;
        if (connect(socket.Get(), address.Get(), address.length) != 0 && errno != EINPROGRESS) {
            RPMA_LOG_INFO("connect to %s failed: %s", peer->c_str(), strerror(errno));
            continue;
        }
        return socket;
    }
    return UniqueFd();
}

void Handshake::SetConnectData(const void *data, uint8_t length) {
    const auto *bytes = static_cast<const uint8_t *>(data);
    connect_data_.assign(bytes, bytes + length);
}

OutboundMessage Handshake::ConnectRequest(uint32_t send_queue_depth) const {
    return Message(wire::Opcode::kConnectRequest, send_queue_depth, connect_data_.data(),
                   connect_data_.size());
}

OutboundMessage Handshake::Accept(uint32_t send_queue_depth, const void *data, size_t length) {
    return Message(wire::Opcode::kAccept, send_queue_depth, data, length);
}

Handshake::Peer Handshake::Take(const InboundMessage &message) {
    const uint8_t *payload = message.small.data();
    wire::HandshakePrefix prefix;
    if (!wire::ParseHandshakePrefix(payload, message.payload_length, &prefix))
        return wire::HasMagic(payload, message.payload_length) ? Peer::kOtherVersion
                                                               : Peer::kOtherProtocol;
    peer_send_queue_depth_ = std::clamp<uint32_t>(prefix.send_queue_depth, 1, kMaxQueueDepth);
    peer_private_data_.assign(payload + wire::kHandshakePrefixSize,
                              payload + message.payload_length);
    return Peer::kRpma;
}

bool Handshake::Plausible(ConnectionState state, const InboundMessage &message) {
    if (state == ConnectionState::kAwaitingRequest)
        return wire::CouldStartHandshake(message.header_bytes, message.header_received,
                                         wire::Opcode::kConnectRequest,
                                         wire::Opcode::kConnectRequest);
    if (state == ConnectionState::kAwaitingReply)
        return wire::CouldStartHandshake(message.header_bytes, message.header_received,
                                         wire::Opcode::kAccept, wire::Opcode::kReject);
    return true;
}

}  // namespace rpma::provider::tcp
