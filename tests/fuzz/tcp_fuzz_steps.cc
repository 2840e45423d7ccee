// The script's steps: each decodes its fields from the input and sends one
// message of the wire format (or raw bytes, or a free-form header), or acts
// as the provider's application, updating the model of a correct peer's
// conversation as it goes.

#include "tests/fuzz/tcp_fuzz_session.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "rpma_core/src/provider/tcp/tcp_listener.h"
#include "tests/fuzz/fuzz_support.h"

namespace tcp_fuzz {

void Session::RunStep(Script &script) {
    switch (script.U8() % kStepCount) {
        case kStepConnectRequest:
            return SendConnectRequest(script);
        case kStepReadyToUse:
            return SendHeaderOnly(script, wire::Opcode::kReadyToUse);
        case kStepWrite:
            return SendRequest(script, wire::Opcode::kWrite);
        case kStepWriteWithImm:
            return SendRequest(script, wire::Opcode::kWriteWithImm);
        case kStepReadRequest:
            return SendRequest(script, wire::Opcode::kReadRequest);
        case kStepAtomicWrite:
            return SendRequest(script, wire::Opcode::kAtomicWrite);
        case kStepFlush:
            return SendRequest(script, wire::Opcode::kFlush);
        case kStepSend:
            return SendRequest(script, wire::Opcode::kSend);
        case kStepSendWithImm:
            return SendRequest(script, wire::Opcode::kSendWithImm);
        case kStepAck:
            return SendAnswer(script, wire::Opcode::kAck);
        case kStepNak:
            return SendAnswer(script, wire::Opcode::kNak);
        case kStepReadResponse:
            return SendAnswer(script, wire::Opcode::kReadResponse);
        case kStepAckRequest:
            return SendHeaderOnly(script, wire::Opcode::kAckRequest);
        case kStepDisconnect:
            return SendHeaderOnly(script, wire::Opcode::kDisconnect);
        case kStepRawBytes:
            return SendRawBytes(script);
        case kStepFreeHeader:
            return SendFreeHeader(script);
        case kStepProviderPost:
            return ProviderPost(script);
        case kStepProviderDisconnect:
            if (id_)
                id_->Disconnect();
            Unpredictable();  // the provider ends the conversation
            return;
        case kStepDeregister:
            // After the next message's first piece: a payload may be
            // arriving into the region.
            deregister_next_ = true;
            Unpredictable();  // requests to the region now fail
            return;
        case kStepDestroyQp:
            // The same, for the application destroying its queue pair: a
            // READ_RESPONSE arriving then has no WR and no memory to go to.
            destroy_qp_next_ = true;
            Unpredictable();  // the connection is cut
            return;
    }
}

std::vector<uint8_t> Encode(const wire::Header &header) {
    const wire::EncodedHeader encoded = wire::EncodeHeader(header);
    return std::vector<uint8_t>(encoded.begin(), encoded.end());
}

// Fields: depth, private data length, corruption, pieces (2). The
// handshake message this side sends: CONNECT_REQUEST to a passive provider;
// ACCEPT (or REJECT, when the setup says so) to an active one.
void Session::SendConnectRequest(Script &script) {
    const uint8_t depth = script.U8();
    const uint8_t private_length = script.U8() % 72;  // beyond 56 is too long
    const uint8_t corruption = script.U8() % 8;
    const uint8_t first_piece = script.U8();
    const uint8_t other_pieces = script.U8();

    wire::HandshakePrefix prefix;
    prefix.send_queue_depth = depth == 255 ? UINT32_MAX : depth;
    if (corruption == 5)
        prefix.magic ^= 1u << (depth % 32);
    if (corruption == 6)
        prefix.version = static_cast<uint16_t>(wire::kVersion + 1 + depth);
    uint8_t encoded_prefix[wire::kHandshakePrefixSize];
    wire::EncodeHandshakePrefix(prefix, encoded_prefix);
    std::vector<uint8_t> payload(encoded_prefix, encoded_prefix + sizeof(encoded_prefix));
    payload.resize(payload.size() + private_length);
    FillPattern(payload.data() + sizeof(encoded_prefix), private_length, depth);

    wire::Header header;
    header.opcode = active_ ? wire::Opcode::kAccept : wire::Opcode::kConnectRequest;
    header.length = static_cast<uint32_t>(payload.size());
    if (corruption == 7)
        header.length = depth;  // the payload that follows is not what it says
    if (active_ && reject_)
        header = wire::Header{.opcode = wire::Opcode::kReject};
    std::vector<uint8_t> bytes = Encode(header);
    if (header.opcode != wire::Opcode::kReject)
        bytes.insert(bytes.end(), payload.begin(), payload.end());

    if (active_ && predictable_ && !Ended()) {
        // The application's Connect sent its request at once.
        FUZZ_CHECK(WaitUntil([&] { return request_seen_ || Ended(); }, kBoundMs));
    }
    const bool correct = corruption < 5 && private_length <= wire::kMaxPrivateData && depth > 0 &&
                         header.opcode != wire::Opcode::kReject;
    const size_t expected_messages = active_ ? 1 : 0;
    if (!correct || request_sent_ || provider_messages_ != expected_messages)
        Unpredictable();
    request_sent_ = true;
    declared_depth_ = std::min<uint32_t>(prefix.send_queue_depth, kQueueDepth);
    Deliver(bytes, first_piece, other_pieces);
    if (active_) {
        handshake_done_ = true;  // the provider answers with READY_TO_USE
    } else if (predictable_ && !Ended()) {
        // A correct request is answered: the application takes it at once.
        FUZZ_CHECK(WaitUntil([&] { return accept_seen_ || Ended(); }, kBoundMs));
    }
}

// Fields: pieces (2). READY_TO_USE, ACK_REQUEST and DISCONNECT.
void Session::SendHeaderOnly(Script &script, wire::Opcode opcode) {
    const uint8_t first_piece = script.U8();
    const uint8_t other_pieces = script.U8();
    wire::Header header;
    header.opcode = opcode;
    if (opcode == wire::Opcode::kReadyToUse) {
        if (active_ || !accept_seen_ || handshake_done_)
            Unpredictable();
        handshake_done_ = true;
    } else if (opcode == wire::Opcode::kDisconnect) {
        Unpredictable();
    } else if (!handshake_done_) {
        Unpredictable();
    }
    Deliver(Encode(header), first_piece, other_pieces);
}

namespace {

uint64_t TargetAddress(const GuardedMemory &target, uint8_t mode, uint16_t offset, uint64_t length,
                       uint32_t raw) {
    const uint64_t start = target.addr();
    const uint64_t end = target.addr(target.size());
    switch (mode % 8) {
        case 4:  // ending exactly at the end
            return end - std::min<uint64_t>(length, target.size());
        case 5:  // ending just past the end
            return end - std::min<uint64_t>(length, target.size()) + 1 + offset % 8;
        case 6:  // starting just before the start
            return start - 1 - offset % 64;
        case 7:  // anywhere, wrap-around included
            return (static_cast<uint64_t>(raw) << 32 | offset) ^ (raw & 1 ? start : ~0ull);
        default:
            return start + (mode % 8 < 2 ? offset : offset * 4ull) % target.size();
    }
}

uint32_t RequestLength(wire::Opcode opcode, uint8_t mode, uint16_t raw) {
    if (opcode == wire::Opcode::kAtomicWrite && mode % 8 < 6)
        return wire::kAtomicWriteSize;
    if ((opcode == wire::Opcode::kSend || opcode == wire::Opcode::kSendWithImm) && mode % 8 < 6)
        return raw % (2 * kReceiveSize);
    switch (mode % 8) {
        case 4:
            return 0;
        case 5:
            return 8;
        case 6:
            return kTargetSize;
        case 7: {
            constexpr uint32_t kLarge[] = {kTargetSize + 1, 1u << 31, (1u << 31) + 1, UINT32_MAX};
            return kLarge[raw % 4];
        }
        default:
            return (mode % 8 < 2 ? raw : raw * 4u) % (kTargetSize + 1);
    }
}

}  // namespace

// Fields: sequence mode, raw sequence (2), key mode, raw key (4), address
// mode, offset (2), length mode, raw length (2), flags, immediate (4),
// payload seed, pieces (2).
void Session::SendRequest(Script &script, wire::Opcode opcode) {
    const uint8_t sequence_mode = script.U8();
    const uint16_t raw_sequence = script.U16();
    const uint8_t key_mode = script.U8();
    const uint32_t raw_key = script.U32();
    const uint8_t address_mode = script.U8();
    const uint16_t offset = script.U16();
    const uint8_t length_mode = script.U8();
    const uint16_t raw_length = script.U16();
    const uint8_t flags = script.U8();
    const uint32_t imm = script.U32();
    const uint8_t payload_seed = script.U8();
    const uint8_t first_piece = script.U8();
    const uint8_t other_pieces = script.U8();

    wire::Header header;
    header.opcode = opcode;
    header.imm = imm;
    if (sequence_mode < 224) {
        header.sequence = next_sequence_;
    } else {
        const uint64_t wrong[] = {next_sequence_ + 1, next_sequence_ - 1, 0, raw_sequence};
        header.sequence = wrong[sequence_mode % 4];
    }
    const uint32_t target_rkey = target_mr_ ? target_mr_->Rkey() : raw_key;
    header.rkey = key_mode < 208 ? target_rkey : key_mode < 232 ? local_mr_->Rkey() : raw_key;
    header.length = RequestLength(opcode, length_mode, raw_length);
    const bool sends = opcode == wire::Opcode::kSend || opcode == wire::Opcode::kSendWithImm;
    header.remote_addr =
        sends ? 0 : TargetAddress(p_.target, address_mode, offset, header.length, raw_key);

    // Flags: what the opcode allows, else (1 in 8) anything.
    bool flags_correct = true;
    if ((flags & 0x70) == 0x70) {
        header.flags = static_cast<uint8_t>(raw_key >> 8);
        flags_correct = false;
    } else {
        header.flags = flags & wire::kAckRequested;
        if (opcode == wire::Opcode::kFlush) {
            constexpr uint8_t kTypes[] = {wire::kFlushPersistent, wire::kFlushVisibility, 0, 3};
            header.flags |= kTypes[(flags >> 1) % 4];
            flags_correct = (flags >> 1) % 4 < 2;
        }
        if (sends && (flags & 0x08)) {
            header.flags |= wire::kCarriesAck;
            header.remote_addr =
                provider_requests_.empty() ? raw_sequence : provider_requests_.back().sequence;
            flags_correct = false;  // whether it acknowledges well is the provider's to judge
        }
    }

    // Would a correct target apply it? Anything unsure ends the model.
    const uint64_t start = p_.target.addr();
    const bool in_region = header.remote_addr >= start && header.length > 0 &&
                           header.remote_addr - start <=
                               kTargetSize - std::min<uint64_t>(header.length, kTargetSize) &&
                           header.length <= kTargetSize;
    bool valid = handshake_done_ && header.sequence == next_sequence_ && flags_correct;
    switch (opcode) {
        case wire::Opcode::kSend:
        case wire::Opcode::kSendWithImm:
            valid = valid && header.length <= kReceiveSize;
            break;
        case wire::Opcode::kAtomicWrite:
            valid = valid && in_region && header.rkey == target_rkey && target_mr_ &&
                    header.length == wire::kAtomicWriteSize && header.remote_addr % 8 == 0;
            break;
        case wire::Opcode::kReadRequest:
            valid = valid && in_region && header.rkey == target_rkey && target_mr_ &&
                    reads_.size() < declared_depth_;
            break;
        default:
            valid = valid && in_region && header.rkey == target_rkey && target_mr_;
            break;
    }
    if (opcode == wire::Opcode::kWriteWithImm)
        valid = valid && receives_ > 0;
    if (header.sequence == next_sequence_)
        ++next_sequence_;
    if (!valid)
        Unpredictable();

    std::vector<uint8_t> bytes = Encode(header);
    const uint32_t payload_length = wire::PayloadLength(header);
    const size_t sent_payload = std::min<size_t>(payload_length, kMaxPayloadSent);
    if (sent_payload < payload_length)
        Unpredictable();
    const size_t header_end = bytes.size();
    bytes.resize(header_end + sent_payload);
    FillPattern(bytes.data() + header_end, sent_payload, payload_seed);

    if (predictable_) {
        const size_t at = header.remote_addr - start;
        if (opcode == wire::Opcode::kWrite || opcode == wire::Opcode::kWriteWithImm ||
            opcode == wire::Opcode::kAtomicWrite) {
            memcpy(shadow_.data() + at, bytes.data() + header_end, header.length);
            for (OutstandingRead &read : reads_)
                read.tainted = true;  // answered from memory as the queue gets to it
        } else if (opcode == wire::Opcode::kReadRequest) {
            reads_.push_back(
                {header.sequence, header.length,
                 std::vector<uint8_t>(shadow_.begin() + at, shadow_.begin() + at + header.length),
                 false});
        }
        if (opcode != wire::Opcode::kWrite && opcode != wire::Opcode::kAtomicWrite &&
            opcode != wire::Opcode::kReadRequest && opcode != wire::Opcode::kFlush) {
            const bool with_payload = opcode != wire::Opcode::kWriteWithImm;
            receives_expected_.push_back(
                {opcode, header.length, header.imm,
                 with_payload ? std::vector<uint8_t>(bytes.begin() + header_end, bytes.end())
                              : std::vector<uint8_t>()});
        }
    }
    Deliver(bytes, first_piece, other_pieces);
}

// Fields: sequence mode, raw (4), pieces (2). ACK, NAK and READ_RESPONSE
// answer the provider's own requests (ProviderPost).
void Session::SendAnswer(Script &script, wire::Opcode opcode) {
    const uint8_t mode = script.U8();
    const uint32_t raw = script.U32();
    const uint8_t first_piece = script.U8();
    const uint8_t other_pieces = script.U8();

    wire::Header header;
    header.opcode = opcode;
    const ProviderRequest *oldest_read = nullptr;
    for (const ProviderRequest &request : provider_requests_)
        if (request.opcode == wire::Opcode::kReadRequest) {
            oldest_read = &request;
            break;
        }
    const uint64_t last = provider_requests_.empty() ? 0 : provider_requests_.back().sequence;
    const uint64_t right = opcode == wire::Opcode::kReadResponse && oldest_read != nullptr
                               ? oldest_read->sequence
                               : last;
    header.sequence = mode < 192 ? right : mode % 2 ? right + 1 + raw % 4 : raw;
    if (opcode == wire::Opcode::kNak)
        header.rkey = raw % (IBV_WC_TM_RNDV_INCOMPLETE + 2);  // the status to report
    if (opcode == wire::Opcode::kReadResponse) {
        const uint32_t length = oldest_read != nullptr ? oldest_read->length : raw % 256;
        header.length = mode % 8 == 7   ? length + 1
                        : mode % 8 == 6 ? raw % (kLocalSize + 2)
                                        : length;
    }
    if (opcode == wire::Opcode::kAck) {
        // The provider's requests it answers are done; READs stay until
        // their responses come.
        std::erase_if(provider_requests_, [&](const ProviderRequest &request) {
            return request.sequence <= header.sequence &&
                   request.opcode != wire::Opcode::kReadRequest;
        });
    } else if (opcode == wire::Opcode::kReadResponse && oldest_read != nullptr &&
               header.sequence == oldest_read->sequence) {
        provider_requests_.erase(provider_requests_.begin() +
                                 (oldest_read - provider_requests_.data()));
    }
    if (!handshake_done_)
        Unpredictable();

    std::vector<uint8_t> bytes = Encode(header);
    const size_t payload = std::min<size_t>(wire::PayloadLength(header), kMaxPayloadSent);
    const size_t header_end = bytes.size();
    bytes.resize(header_end + payload);
    FillPattern(bytes.data() + header_end, payload, raw);
    Deliver(bytes, first_piece, other_pieces);
}

// Fields: length, bytes, pieces (2).
void Session::SendRawBytes(Script &script) {
    std::vector<uint8_t> bytes(script.U8());
    for (uint8_t &byte : bytes)
        byte = script.U8();
    const uint8_t first_piece = script.U8();
    const uint8_t other_pieces = script.U8();
    Unpredictable();
    Deliver(bytes, first_piece, other_pieces);
}

// Fields: opcode, flags, length (4), address (8 as 2 x 4), rkey (4), imm
// (4), sequence (4), reserved byte index and value, payload length, pieces
// (2). Whatever ParseHeader makes of it.
void Session::SendFreeHeader(Script &script) {
    wire::Header header;
    header.opcode = static_cast<wire::Opcode>(script.U8());
    header.flags = script.U8();
    header.length = script.U32();
    header.remote_addr = script.U32() | static_cast<uint64_t>(script.U32()) << 32;
    header.rkey = script.U32();
    header.imm = script.U32();
    header.sequence = script.U32();
    const uint8_t reserved_index = script.U8();
    const uint8_t reserved_value = script.U8();
    const uint16_t payload = script.U16();
    const uint8_t first_piece = script.U8();
    const uint8_t other_pieces = script.U8();
    std::vector<uint8_t> bytes = Encode(header);
    if (reserved_index % 16 == 0)  // a reserved byte (2, 3 or 32..63) set
        bytes[reserved_index % 2 == 0 ? 2 + reserved_value % 2 : 32 + reserved_value % 32] =
            reserved_value | 1;
    const size_t header_end = bytes.size();
    bytes.resize(header_end + payload);
    FillPattern(bytes.data() + header_end, payload, header.rkey);
    Unpredictable();
    Deliver(bytes, first_piece, other_pieces);
}

// Fields: kind, offset, length (2), signaled. The application posts a work
// request towards the peer from its local buffers; the peer's answers are
// the ACK, NAK and READ_RESPONSE steps.
void Session::ProviderPost(Script &script) {
    const uint8_t kind = script.U8();
    const uint8_t offset = script.U8();
    const uint16_t raw_length = script.U16();
    const bool signaled = script.U8() & 1;
    if (!id_ || id_->Qp() == nullptr)
        return;
    provider::QueuePair &qp = *id_->Qp();
    const size_t at = static_cast<size_t>(offset) * 64;
    const uint32_t length = static_cast<uint32_t>(raw_length % (kLocalSize / 2 - at + 1));
    ibv_sge sge{p_.local.addr(at), length, local_mr_->Lkey()};
    ibv_send_wr wr{};
    wr.wr_id = next_wr_id_++;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.send_flags = signaled ? IBV_SEND_SIGNALED : 0;
    wr.wr.rdma.remote_addr = 0x1000 + raw_length;
    wr.wr.rdma.rkey = 0x5eed;
    switch (kind % 6) {
        case 0:
            wr.opcode = IBV_WR_RDMA_READ;
            break;
        case 1:
            wr.opcode = IBV_WR_RDMA_WRITE;
            break;
        case 2:
            wr.opcode = IBV_WR_SEND;
            break;
        case 3:
            wr.opcode = IBV_WR_SEND_WITH_IMM;
            break;
        case 4:
            qp.PostFlush(
                0x1000, 0x5eed, length,
                kind & 0x80 ? provider::FlushType::kPersistent : provider::FlushType::kVisibility,
                signaled, wr.wr_id);
            return;
        case 5: {
            const char value[8] = {1, 2, 3, 4, 5, 6, 7, 8};
            qp.PostAtomicWrite(0x1000, 0x5eed, value, signaled, wr.wr_id);
            return;
        }
    }
    qp.PostSend(wr);  // may rightly fail: queue full, not connected
}

}  // namespace tcp_fuzz
