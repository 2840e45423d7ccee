// The inbound stream of a connection: reads its socket through the stage
// (one recv takes a header with a small payload, or several messages), or
// straight into a large payload's destination, and frames the bytes into
// messages, a header then its payload, whatever their split across reads.
//
// It owns the framing and nothing else: what a header means, where its
// payload goes (message().destination, or message().small) and what a
// complete message does are its owner's, the connection's. Next() says what
// happened, and the owner acts on it before it asks again; no callbacks, so
// the hot path pays one switch per message. Used under the owner's lock.
// Tests: tcp_inbound_reader_test.
#ifndef RPMA_CORE_SRC_PROVIDER_TCP_TCP_INBOUND_READER_H
#define RPMA_CORE_SRC_PROVIDER_TCP_TCP_INBOUND_READER_H

#include <sys/types.h>
#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <optional>

#include "rpma_core/src/provider/tcp/tcp_inbound_message.h"
#include "rpma_core/src/provider/tcp/tcp_stage.h"

namespace rpma::provider::tcp {

class InboundReader {
  public:
    // Bytes read from one connection per wake-up, so one busy peer cannot
    // starve the others (the socket stays readable and epoll brings us
    // back).
    static constexpr size_t kReadBudgetBytes = size_t{4} << 20;
    // What is left of a payload at least this long is read straight into
    // its destination (with the stage behind it for what follows).
    static constexpr size_t kDirectPayloadBytes = size_t{8} << 10;

    enum class Framed {
        kHeader,         // message().header is whole and parsed
        kPayload,        // message()'s payload is complete
        kPartialHeader,  // part of a header arrived (message().header_bytes)
        kMalformed,      // bytes that are no header: error() says why
        kRevoked,        // the payload's destination was deregistered under it
        kClosed,         // end of stream (peer_error() 0) or a socket error
        kStop,           // nothing more now: would block, drained or budget spent
    };

    // One wake-up's reading: `drained` when the last read came back short
    // already (another would only say EAGAIN).
    struct Budget {
        size_t bytes = kReadBudgetBytes;
        bool drained = false;
    };

    // What is staged first, then `fd`, until something happened.
    Framed Next(int fd, Budget *budget);

    // The header's payload of `length` bytes follows (into message()'s
    // destination, or message().small when it has none). False when it
    // has nowhere to go. A payload of 0 bytes is complete at once: the
    // owner completes it without Next().
    bool BeginPayload(size_t length);

    // A blocking read of the owner's own (WaitDirect: without the lock,
    // while nobody else reads) goes into StageBuffer() when nothing is
    // staged; Received takes its result (errno set when negative): true
    // when bytes were staged; false with *closed set at the end of the
    // stream or on an error (peer_error()), unset when it would block.
    size_t StagedBytes() const { return stage_.Available(); }
    uint8_t *StageBuffer() { return stage_.Buffer(); }
    bool Received(ssize_t result, bool *closed);

    // The connection closes or its reading starts over: what is staged and
    // where a payload in progress was going are dropped.
    void Reset();

    InboundMessage &message() { return in_; }
    const InboundMessage &message() const { return in_; }
    const char *error() const { return error_; }
    int peer_error() const { return peer_error_; }

  private:
    // Each step returns what happened, or nothing when reading goes on.
    // Feeds staged bytes to the current header or payload.
    std::optional<Framed> ConsumeStaged();
    // A recv into the stage (`fd` non-blocking).
    std::optional<Framed> FillStage(int fd, Budget *budget);
    // readv into the payload's destination and room for the next header.
    std::optional<Framed> ReadPayloadDirect(int fd, Budget *budget);
    // The next `length` bytes of the payload's destination (registered
    // memory) as iovecs, at most kMaxSge; false when a region was
    // deregistered (used under the lock, as any access; see MemoryTable).
    bool DestinationWindow(size_t length, iovec *iov, int *count) const;
    // False when a region was deregistered.
    bool CopyPayload(const uint8_t *data, size_t length);
    // `length` more bytes of the payload arrived: kPayload when that
    // completes it.
    std::optional<Framed> PayloadAdvanced(size_t length);

    InboundMessage in_;
    Stage stage_;
    const char *error_ = "";
    int peer_error_ = 0;
};

}  // namespace rpma::provider::tcp

#endif  // RPMA_CORE_SRC_PROVIDER_TCP_TCP_INBOUND_READER_H
