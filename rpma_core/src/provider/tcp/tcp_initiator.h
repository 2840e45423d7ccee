// A connection as initiator: its outstanding work requests (SendQueue),
// what a post sends and when (at once from the posting thread when nothing
// is queued ahead of it, held for the doorbell, or queued), which request
// asks for an ACK (Acknowledgements::AskFor), and what the peer's ACK, NAK
// and READ_RESPONSE complete.
//
// It owns that state and nothing of the connection's: a call returns what
// happened and the connection acts on it (breaks, flushes, runs its
// progress); no callbacks, so a post pays one switch. Its neighbours (the
// outbound queue, the ACK policy, the inline lease) are the connection's,
// borrowed for its lifetime. Used under the connection's lock. Tests:
// tcp_initiator_test, tcp_completion_test, tcp_remote_ops_test,
// tcp_stress_test.
#ifndef RPMA_CORE_SRC_PROVIDER_TCP_TCP_INITIATOR_H
#define RPMA_CORE_SRC_PROVIDER_TCP_TCP_INITIATOR_H

#include <infiniband/verbs.h>

#include <cstdint>
#include <utility>

#include "rpma_core/src/provider/tcp/tcp_acks.h"
#include "rpma_core/src/provider/tcp/tcp_connection_state.h"
#include "rpma_core/src/provider/tcp/tcp_containers.h"
#include "rpma_core/src/provider/tcp/tcp_inline_lease.h"
#include "rpma_core/src/provider/tcp/tcp_outbound_queue.h"
#include "rpma_core/src/provider/tcp/tcp_send_queue.h"
#include "rpma_core/src/provider/tcp/tcp_wire.h"

namespace rpma::provider::tcp {

class CompletionQueue;

class Initiator {
  public:
    Initiator(OutboundQueue *out, Acknowledgements *acks, InlineLease *lease)
        : out_(out), acks_(acks), lease_(lease) {}

    // The queue pair's send side: its depth, number and send CQ.
    void Attach(uint32_t depth, uint32_t qp_num, CompletionQueue *cq) {
        sq_.Attach(depth, qp_num, cq);
        cq_ = cq;
    }
    // The QP was destroyed: nothing more is completed into its CQ.
    void Detach() {
        sq_.Detach();
        cq_ = nullptr;
    }
    SendQueue &queue() { return sq_; }
    const SendQueue &queue() const { return sq_; }

    // --- posting ---

    // 0 when a post is taken: with a QP (`has_qp`), once the connection was
    // established (what can no longer be sent: PostWhileBroken); else
    // EINVAL or ENOTCONN, with a message.
    static int CheckCanPost(bool has_qp, ConnectionState state);

    // A request posted while the connection is not established completes
    // with IBV_WC_WR_FLUSH_ERR after everything posted before it, as on a
    // QP in the error state: at once, or (`disconnecting`) when the
    // disconnect flushes the queue, since it is never sent.
    void PostWhileBroken(PendingWr &&wr, bool disconnecting);

    enum class Posted {
        kSent,         // went out whole at once: nothing left to do
        kSentPartly,   // the socket took part; the rest is queued: progress
        kParts,        // queued in parts (tcp_parts.h): check the front, progress
        kQueued,       // queued: check the front, progress, LetPollSkip
        kMayWaitBell,  // as kQueued, unless WaitForDoorbell says it may wait
        kHeld,         // queued for the next post, wait or poll (`more`)
    };
    // Posts a request on an established connection: sequences it, asks for
    // an ACK as the policy says, and sends it at once to `fd` when nothing
    // is queued ahead of it (`fd` -1: the socket takes nothing now).
    // `length`: the request's, which may span several parts. `more`: the
    // application posts another right after (RPMA_EXT_F_MORE), so a small
    // request is held to share that one's sendmsg.
    Posted Post(PendingWr &&wr, OutboundMessage &&message, uint64_t length, int fd,
                bool more = false);
    // Nothing queued: the message (with a pending ACK) goes out from here,
    // without a queue entry: one send when small (copied into one buffer),
    // else one sendmsg from registered memory. kNo leaves it to the caller;
    // kPartly: what the socket did not take is queued.
    enum class Sent { kNo, kWhole, kPartly };
    Sent SendAtOnce(OutboundMessage &message, int fd);
    // Queues a posted request's message, its segments owned (MemorySegment).
    void Enqueue(OutboundMessage &&message);
    // After a post: hands posted_since_read to the send CQ when it can skip
    // the next empty poll's drive altogether (CompletionQueue).
    void LetPollSkip();
    // True when the request just queued may wait for the next doorbell (only
    // on a `live` connection); the next poll then rings it.
    bool WaitForDoorbell(bool live);

    // Since the socket was last read, a request was posted while none was in
    // flight: a non-blocking poll skips one read, which could only come back
    // empty that soon. The reader clears it (Read) or takes it (TakeSkip).
    void Read() { posted_since_read_ = false; }
    bool TakeSkip() { return std::exchange(posted_since_read_, false); }

    // --- the peer's answers ---

    // What the connection does with an answer (it acts, under its lock).
    struct Verdict {
        enum class Kind : uint8_t {
            kDone,            // nothing more: what it answered completed
            kReadPayload,     // read the READ_RESPONSE's payload into *destination
            kDropPayload,     // read it and drop it: the QP was destroyed meanwhile
            kRefused,         // a NAK: break the connection, the front with `status`
            kFail,            // a local error (`why`, if not the front's own): break with `status`
            kCompletionLost,  // a completion did not fit its CQ: break
            kProtocolError,   // the peer broke the protocol (`why`)
        };
        Kind kind = Kind::kDone;
        ibv_wc_status status = IBV_WC_SUCCESS;
        const char *why = nullptr;
    };
    // `live`: the connection is established or disconnecting, else any
    // answer is a protocol error.
    // A cumulative ACK (alone, or carried by a request of the peer): an ACK
    // of a request never sent, or of a READ whose data never came, is a
    // protocol error (never an underflow of the send queue).
    Verdict OnAck(uint64_t sequence, bool live);
    // A NAK completes what precedes it and refuses its own request.
    Verdict OnNak(const wire::Header &header, bool live);
    // A READ_RESPONSE's header (`has_qp`: the QP still exists). A response
    // whose READ is no longer outstanding (flushed) is a protocol error.
    Verdict OnReadResponse(const wire::Header &header, bool live, bool has_qp,
                           SegmentList *destination);
    // Its payload landed: the READ completes once its last part did.
    Verdict OnReadResponsePayload();
    // The READ's destination was deregistered under its payload.
    Verdict OnPayloadRevoked() const {
        return {Verdict::Kind::kFail, IBV_WC_LOC_PROT_ERR,
                "the destination of a READ was deregistered while the READ was in flight"};
    }
    // kDone, or how the front's local error breaks the connection (a
    // request posted with one fails when it reaches the front, as a NIC
    // fails it when it gets to it).
    Verdict CheckFront() const {
        const ibv_wc_status status = sq_.FrontLocalError();
        if (status == IBV_WC_SUCCESS) [[likely]]
            return {};
        return {sq_.CompletionLost() ? Verdict::Kind::kCompletionLost : Verdict::Kind::kFail,
                status};
    }

  private:
    static Verdict ProtocolError(const char *why) {
        return {Verdict::Kind::kProtocolError, IBV_WC_SUCCESS, why};
    }
    // Queues a request of `parts` parts (tcp_parts.h): `whole` with the last
    // part's sequence, and the request's `length`.
    void EnqueueParts(const OutboundMessage &whole, uint32_t parts, uint64_t length);

    OutboundQueue *const out_;
    Acknowledgements *const acks_;
    InlineLease *const lease_;
    SendQueue sq_;
    CompletionQueue *cq_ = nullptr;
    bool posted_since_read_ = false;
};

}  // namespace rpma::provider::tcp

#endif  // RPMA_CORE_SRC_PROVIDER_TCP_TCP_INITIATOR_H
