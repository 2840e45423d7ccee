// InboundReader (tcp_inbound_reader.h): reading and framing.
#include "rpma_core/src/provider/tcp/tcp_inbound_reader.h"

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>

#include "rpma_core/src/provider/tcp/tcp_socket.h"

namespace rpma::provider::tcp {

InboundReader::Framed InboundReader::Next(int fd, Budget *budget) {
    for (;;) {
        std::optional<Framed> framed;
        if (!stage_.Empty()) {
            framed = ConsumeStaged();
        } else {
            stage_.Clear();
            if (budget->drained || budget->bytes == 0)
                return Framed::kStop;
            const bool direct = in_.phase == InboundMessage::Phase::kPayload && !in_.discard &&
                                in_.payload_length - in_.payload_received >= kDirectPayloadBytes;
            framed = direct ? ReadPayloadDirect(fd, budget) : FillStage(fd, budget);
        }
        if (framed)
            return *framed;
    }
}

bool InboundReader::Received(ssize_t result, bool *closed) {
    *closed = false;
    if (result > 0) {
        stage_.Filled(static_cast<size_t>(result));
        return true;
    }
    if (result < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        return false;
    peer_error_ = result == 0 ? 0 : errno;
    *closed = true;
    return false;
}

std::optional<InboundReader::Framed> InboundReader::FillStage(int fd, Budget *budget) {
    const ssize_t got = SocketRecv(fd, stage_.Buffer(), Stage::kSize, MSG_DONTWAIT);
    bool closed;
    if (!Received(got, &closed))
        return closed ? Framed::kClosed : Framed::kStop;
    const auto length = static_cast<size_t>(got);
    budget->bytes -= std::min(budget->bytes, length);
    budget->drained = length < Stage::kSize;
    return std::nullopt;
}

std::optional<InboundReader::Framed> InboundReader::PayloadAdvanced(size_t length) {
    in_.payload_received += length;
    if (in_.payload_received < in_.payload_length)
        return std::nullopt;
    in_.phase = InboundMessage::Phase::kHeader;
    return Framed::kPayload;
}

std::optional<InboundReader::Framed> InboundReader::ConsumeStaged() {
    const uint8_t *data = stage_.Data();
    const size_t available = stage_.Available();
    if (in_.phase == InboundMessage::Phase::kPayload) {
        const size_t length = std::min(available, in_.payload_length - in_.payload_received);
        if (!CopyPayload(data, length))
            return Framed::kRevoked;
        stage_.Consume(length);
        return PayloadAdvanced(length);
    }
    const size_t length = std::min(available, wire::kHeaderSize - in_.header_received);
    memcpy(in_.header_bytes + in_.header_received, data, length);
    stage_.Consume(length);
    in_.header_received += length;
    if (in_.header_received < wire::kHeaderSize)
        return Framed::kPartialHeader;  // rare: a header split across reads
    in_.header_received = 0;
    wire::Header header;
    if (const wire::ParseError error = wire::ParseHeader(in_.header_bytes, &header);
        error != wire::ParseError::kNone) {
        error_ = wire::ParseErrorString(error);
        return Framed::kMalformed;
    }
    in_.header = header;
    return Framed::kHeader;
}

bool InboundReader::DestinationWindow(size_t length, iovec *iov, int *count) const {
    size_t skip = in_.payload_received;
    *count = 0;
    for (const MemorySegment &segment : in_.Destination()) {
        if (length == 0)
            break;
        if (skip >= segment.length) {
            skip -= segment.length;
            continue;
        }
        if (segment.region->Revoked())
            return false;
        const size_t part = std::min(segment.length - skip, length);
        iov[*count].iov_base = segment.addr + skip;
        iov[*count].iov_len = part;
        ++*count;
        length -= part;
        skip = 0;
    }
    return true;
}

bool InboundReader::CopyPayload(const uint8_t *data, size_t length) {
    if (in_.Destination().empty()) {
        if (!in_.discard)
            memcpy(in_.small.data() + in_.payload_received, data, length);
        return true;
    }
    iovec iov[kMaxSge];
    int count = 0;
    if (!DestinationWindow(length, iov, &count))
        return false;
    for (int i = 0; i < count; ++i) {
        memcpy(iov[i].iov_base, data, iov[i].iov_len);
        data += iov[i].iov_len;
    }
    return true;
}

std::optional<InboundReader::Framed> InboundReader::ReadPayloadDirect(int fd, Budget *budget) {
    // The payload's destination, then room in the stage for the next header
    // only: a large payload is usually followed by another, whose bytes
    // should go straight to their destination too, not through the stage.
    const size_t remaining = in_.payload_length - in_.payload_received;
    iovec iov[kMaxSge + 1];
    int count = 0;
    if (!DestinationWindow(remaining, iov, &count))
        return Framed::kRevoked;
    iov[count].iov_base = stage_.Buffer();
    iov[count].iov_len = wire::kHeaderSize;
    ++count;
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = static_cast<size_t>(count);
    const ssize_t got = SocketRecvMsg(fd, &msg, MSG_DONTWAIT);
    bool closed;
    if (got <= 0 && !Received(got, &closed))
        return closed ? Framed::kClosed : Framed::kStop;
    const auto total = static_cast<size_t>(got);
    const size_t to_payload = std::min(total, remaining);
    stage_.Filled(total - to_payload);
    budget->bytes -= std::min(budget->bytes, total);
    budget->drained = total < remaining + wire::kHeaderSize;
    return PayloadAdvanced(to_payload);
}

bool InboundReader::BeginPayload(size_t length) {
    if (in_.Destination().empty() && length > in_.small.size() && !in_.discard)
        return false;
    in_.payload_length = length;
    in_.payload_received = 0;
    in_.phase = length == 0 ? InboundMessage::Phase::kHeader : InboundMessage::Phase::kPayload;
    return true;
}

void InboundReader::Reset() {
    stage_.Clear();
    in_.phase = InboundMessage::Phase::kHeader;
    in_.destination.clear();
    in_.atomic_target = {};
}

}  // namespace rpma::provider::tcp
