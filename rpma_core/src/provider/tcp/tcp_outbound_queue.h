// A connection's outbound byte stream as a queue of messages, each a header
// plus pointers into registered memory (or a few inline bytes). Payloads are
// not copied: Flush hands the kernel iovecs that point at the application's
// registered buffers. Only a queue of at most kSmallSendBytes in all (a
// header and a small message, as a verbs NIC inlines small sends) is
// gathered into one buffer first: one plain send costs the kernel less than
// importing an iovec array.
//
// Whoever holds the connection lock flushes without blocking: the posting
// thread writes what fits right away, the progress thread drains the rest
// when the socket becomes writable. No thread ever waits on a socket write,
// so two peers streaming at each other cannot deadlock.
#ifndef RPMA_CORE_SRC_PROVIDER_TCP_TCP_OUTBOUND_QUEUE_H
#define RPMA_CORE_SRC_PROVIDER_TCP_TCP_OUTBOUND_QUEUE_H

#include <sys/types.h>

#include <array>
#include <cstddef>
#include <cstdint>

#include "rpma_core/src/provider/tcp/tcp_containers.h"

#include "rpma_core/src/provider/tcp/tcp_memory_table.h"
#include "rpma_core/src/provider/tcp/tcp_wire.h"

namespace rpma::provider::tcp {

struct OutboundMessage {
    wire::Header header;
    // Small payloads (handshake, atomic value) travel from here; only the
    // first inline_length bytes are meaningful.
    std::array<uint8_t, wire::kMaxHandshakePayload> inline_payload;
    size_t inline_length = 0;
    // Larger payloads travel straight from registered memory.
    SegmentList segments;
};

class OutboundQueue {
  public:
    // A queue of at most this many bytes goes out as one plain send.
    static constexpr size_t kSmallSendBytes = 256;

    enum class FlushStatus {
        kDrained,
        kBlocked,  // the socket is full; wait for EPOLLOUT
        kRevoked,  // a payload's memory region was deregistered
        kError,    // see `error`
    };
    struct FlushResult {
        FlushStatus status;
        int error = 0;
    };

    void Push(OutboundMessage &&message);
    // ACKs are cumulative: an ACK still waiting untouched at the tail is
    // raised instead of queueing another one, and a SEND there carries it.
    void PushAck(uint64_t sequence);
    FlushResult Flush(int fd);
    // The first `bytes` of the queue went out (a send made elsewhere).
    void MarkSent(size_t bytes);

    bool Empty() const { return items_.empty(); }
    size_t Size() const { return items_.size(); }
    // Bytes queued and not yet sent.
    size_t QueuedBytes() const { return queued_bytes_; }
    // READ_RESPONSEs not yet fully sent.
    size_t PendingResponses() const { return pending_responses_; }

  private:
    struct Item {
        wire::EncodedHeader header;
        OutboundMessage message;
        size_t total = 0;
        size_t sent = 0;
    };
    struct ReleaseItem {
        void operator()(Item &item) const { item.message.segments.clear(); }
    };

    // A new item at the tail for `header` and a payload of that length;
    // the caller fills in the payload.
    Item &Append(const wire::Header &header, size_t payload_length);
    // One sendmsg of what fits into an iovec batch; 0 when nothing could
    // be sent (*revoked tells why).
    ssize_t SendSome(int fd, bool *revoked);
    // SendSome for a queue of at most kSmallSendBytes: one send.
    ssize_t SendSmall(int fd, bool *revoked);

    RingQueue<Item, ReleaseItem> items_;
    size_t pending_responses_ = 0;
    size_t queued_bytes_ = 0;
};

}  // namespace rpma::provider::tcp

#endif  // RPMA_CORE_SRC_PROVIDER_TCP_TCP_OUTBOUND_QUEUE_H
