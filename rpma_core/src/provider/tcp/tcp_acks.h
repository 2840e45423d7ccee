// Acknowledgements of one connection, both ways: which of the peer's
// requests this side applied and owes an ACK for (as target), and which of
// its own requests ask the peer for an ACK at once (as initiator). The whole
// ACK coalescing policy is here; the connection only calls it under its
// lock, at the points named below.
//
// Target: a request flagged wire::kAckRequested is acknowledged at the next
// chance (from the thread that applied it, ahead of nothing else); every
// other one lets its cumulative ACK ride along with the next message this
// side sends (in a SEND's header or in front of the message). An
// ACK_REQUEST, or a heartbeat while a message waits for a receive (Force),
// is answered even when it repeats the last ACK.
//
// Initiator: a request asks for an ACK when the application will see its
// completion (signaled), when it travels in parts, or when half the send
// queue would otherwise wait for one; a READ's response answers for every
// request before it.
#ifndef RPMA_CORE_SRC_PROVIDER_TCP_TCP_ACKS_H
#define RPMA_CORE_SRC_PROVIDER_TCP_TCP_ACKS_H

#include <algorithm>
#include <cstdint>

#include "rpma_core/src/provider/tcp/tcp_outbound_queue.h"

namespace rpma::provider::tcp {

class Acknowledgements {
  public:
    // --- target: the peer's requests ---

    // Whether `sequence` is the request expected next (requests are applied
    // in order, each exactly once).
    bool InOrder(uint64_t sequence) const { return sequence == expected_; }
    // The expected request was applied; `ack_requested`: it was flagged
    // wire::kAckRequested.
    void Applied(bool ack_requested) {
        applied_ = expected_++;
        requested_ = requested_ || ack_requested;
    }
    // The peer asked whether we live (ACK_REQUEST), or must hear it while a
    // message waits for a receive: an ACK goes at the next chance even if it
    // repeats the last.
    void Force() { requested_ = forced_ = true; }
    // An ACK must go now rather than wait for a message to ride along with.
    bool Requested() const { return requested_; }
    // Requests were applied since the last ACK: one would tell news.
    bool Owed() const { return applied_ > acknowledged_; }
    // The ACK that rides along with a message now: everything applied
    // counts as acknowledged. Returns the sequence it acknowledges.
    uint64_t Take() {
        acknowledged_ = applied_;
        requested_ = forced_ = false;
        return applied_;
    }

    // Queues the ACK that is due (owed or forced), if any, at the tail of
    // `out`, where it merges with an ACK waiting untouched there.
    void Queue(OutboundQueue &out);
    // After progress, before the queue is flushed to `fd`: the ACK rides
    // along with whatever is queued, or, when nothing is and one was
    // requested, goes out at once with one send (what the socket does not
    // take is queued).
    void BeforeFlush(int fd, OutboundQueue &out);

    // --- initiator: this side's requests ---

    // Whether a request being posted asks the peer for an ACK at once
    // (kAckRequested; a READ never carries the flag: its response answers).
    // `sq_size`: the send queue's depth.
    bool AskFor(bool signaled, uint32_t parts, bool is_read, uint32_t sq_size) {
        const bool ask =
            signaled || parts > 1 || ++unrequested_ >= std::max<uint32_t>(1, sq_size / 2);
        if (ask || is_read)
            unrequested_ = 0;
        return ask;
    }

  private:
    // BeforeFlush with nothing queued: one send of the ACK. False when the
    // socket took nothing (the caller queues it).
    bool SendNow(int fd, OutboundQueue &out);
    bool Due() const { return Owed() || forced_; }

    uint64_t expected_ = 1;
    uint64_t applied_ = 0;
    uint64_t acknowledged_ = 0;
    bool requested_ = false;
    bool forced_ = false;
    // Requests posted since the last one that asked for an ACK.
    uint32_t unrequested_ = 0;
};

}  // namespace rpma::provider::tcp

#endif  // RPMA_CORE_SRC_PROVIDER_TCP_TCP_ACKS_H
