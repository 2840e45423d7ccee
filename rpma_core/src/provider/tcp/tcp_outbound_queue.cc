#include "rpma_core/src/provider/tcp/tcp_outbound_queue.h"

#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "rpma_core/src/provider/tcp/tcp_socket.h"

namespace rpma::provider::tcp {
namespace {

constexpr size_t kMaxIovPerSend = 64;

// Collects the unsent part of a message into iovecs, skipping `skip` bytes.
class IovecBuilder {
  public:
    bool Full() const { return count_ == kMaxIovPerSend; }
    size_t Count() const { return count_; }
    iovec *Data() { return iov_.data(); }

    // False when a region was revoked (what came before it is kept).
    bool Add(const void *base, size_t length, size_t *skip, Region *region) {
        if (*skip >= length) {
            *skip -= length;
            return true;
        }
        if (Full())
            return true;
        if (region != nullptr && region->Revoked())
            return false;
        iov_[count_].iov_base = const_cast<uint8_t *>(static_cast<const uint8_t *>(base)) + *skip;
        iov_[count_].iov_len = length - *skip;
        ++count_;
        *skip = 0;
        return true;
    }

  private:
    std::array<iovec, kMaxIovPerSend> iov_;  // [0, count_) in use; no need to zero it
    size_t count_ = 0;
};

bool IsResponse(const wire::Header &header) {
    return header.opcode == wire::Opcode::kReadResponse;
}

}  // namespace

OutboundQueue::Item &OutboundQueue::Append(const wire::Header &header, size_t payload_length) {
    // A slot comes back released (no segments); the rest is set here.
    Item &item = items_.emplace_back();
    item.header = wire::EncodeHeader(header);
    item.message.header = header;
    item.message.inline_length = 0;
    item.total = wire::kHeaderSize + payload_length;
    item.sent = 0;
    if (IsResponse(header))
        ++pending_responses_;
    queued_bytes_ += item.total;
    return item;
}

void OutboundQueue::Push(OutboundMessage &&message) {
    size_t payload_length = message.inline_length;
    for (const MemorySegment &segment : message.segments)
        payload_length += segment.length;
    Item &item = Append(message.header, payload_length);
    // Only the bytes in use: the inline buffer is sized for a handshake.
    item.message.inline_length = message.inline_length;
    memcpy(item.message.inline_payload.data(), message.inline_payload.data(),
           message.inline_length);
    if (!message.segments.empty())
        item.message.segments = std::move(message.segments);
}

void OutboundQueue::PushAck(uint64_t sequence) {
    if (!items_.empty()) {
        Item &tail = items_.back();
        wire::Header &header = tail.message.header;
        if (header.opcode == wire::Opcode::kAck && tail.sent == 0) {
            header.sequence = sequence;
            tail.header = wire::EncodeHeader(header);
            return;
        }
        if (wire::IsSend(header.opcode) && tail.sent == 0) {
            header.flags |= wire::kCarriesAck;
            header.remote_addr = sequence;
            tail.header = wire::EncodeHeader(header);
            return;
        }
    }
    Append(wire::AckHeader(sequence), 0);
}

ssize_t OutboundQueue::SendSmall(int fd, bool *revoked) {
    uint8_t bytes[kSmallSendBytes];
    size_t length = 0;
    const auto append = [&](const void *data, size_t size, size_t *skip) {
        const size_t from = std::min(*skip, size);
        memcpy(bytes + length, static_cast<const uint8_t *>(data) + from, size - from);
        length += size - from;
        *skip -= from;
    };
    for (size_t i = 0; i < items_.size(); ++i) {
        Item &item = items_[i];
        size_t skip = item.sent;
        append(item.header.data(), item.header.size(), &skip);
        append(item.message.inline_payload.data(), item.message.inline_length, &skip);
        for (const MemorySegment &segment : item.message.segments) {
            if (segment.region->Revoked()) {
                *revoked = true;
                break;
            }
            append(segment.addr, segment.length, &skip);
        }
        if (*revoked)
            break;
    }
    if (length == 0)
        return 0;
    return SocketSend(fd, bytes, length, MSG_NOSIGNAL | MSG_DONTWAIT);
}

ssize_t OutboundQueue::SendSome(int fd, bool *revoked) {
    if (queued_bytes_ <= kSmallSendBytes)
        return SendSmall(fd, revoked);
    IovecBuilder iov;
    for (size_t i = 0; i < items_.size(); ++i) {
        Item &item = items_[i];
        size_t skip = item.sent;
        iov.Add(item.header.data(), item.header.size(), &skip, nullptr);
        iov.Add(item.message.inline_payload.data(), item.message.inline_length, &skip, nullptr);
        for (const MemorySegment &segment : item.message.segments) {
            if (!iov.Add(segment.addr, segment.length, &skip, segment.region)) {
                *revoked = true;
                break;
            }
        }
        if (*revoked || iov.Full())
            break;
    }
    if (iov.Count() == 0)
        return 0;
    msghdr msg{};
    msg.msg_iov = iov.Data();
    msg.msg_iovlen = iov.Count();
    return SocketSendMsg(fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
}

OutboundQueue::FlushResult OutboundQueue::Flush(int fd) {
    while (!items_.empty()) {
        bool revoked = false;
        const ssize_t written = SendSome(fd, &revoked);
        if (written < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return {FlushStatus::kBlocked};
            return {FlushStatus::kError, errno};
        }
        if (written == 0)
            return {revoked ? FlushStatus::kRevoked : FlushStatus::kDrained};
        MarkSent(static_cast<size_t>(written));
    }
    return {FlushStatus::kDrained};
}

void OutboundQueue::MarkSent(size_t bytes) {
    queued_bytes_ -= bytes;
    while (bytes > 0) {
        Item &front = items_.front();
        const size_t unsent = front.total - front.sent;
        if (bytes < unsent) {
            front.sent += bytes;
            return;
        }
        bytes -= unsent;
        if (IsResponse(front.message.header))
            --pending_responses_;
        items_.pop_front();
    }
}

}  // namespace rpma::provider::tcp
