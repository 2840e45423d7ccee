// A connection as target: executes the peer's requests on registered
// memory, in order and without the application — access checks, WRITE,
// READ, ATOMIC_WRITE, FLUSH (a large persist handed to a persist worker),
// SEND into posted receives (held while none is posted) — and counts them
// applied for the ACK (Acknowledgements). Once this side began to
// disconnect, or its QP went, no request is applied any more (as a verbs
// QP moved to the error state): the rest is read and dropped, unanswered.
//
// It owns the receive side of the queue pair and the request being
// applied, and nothing of the connection's: a call returns a Verdict and
// the connection acts on it (reads the payload, waits, refuses, breaks);
// no callbacks, so a request pays one switch. Its neighbours (the message
// being read, the outbound queue, the ACK policy, the handshake's peer
// depth) are the connection's, borrowed for its lifetime. Used under the
// connection's lock. Tests: tcp_target_test, tcp_remote_ops_test,
// tcp_messaging_test, tcp_persist_workers_test, tcp_hostile_peer_test.
#ifndef RPMA_CORE_SRC_PROVIDER_TCP_TCP_TARGET_H
#define RPMA_CORE_SRC_PROVIDER_TCP_TCP_TARGET_H

#include <infiniband/verbs.h>

#include <cstdint>
#include <memory>

#include "rpma_core/src/provider/tcp/tcp_acks.h"
#include "rpma_core/src/provider/tcp/tcp_connection_deps.h"
#include "rpma_core/src/provider/tcp/tcp_handshake.h"
#include "rpma_core/src/provider/tcp/tcp_inbound_message.h"
#include "rpma_core/src/provider/tcp/tcp_memory_table.h"
#include "rpma_core/src/provider/tcp/tcp_outbound_queue.h"
#include "rpma_core/src/provider/tcp/tcp_receive_queue.h"

namespace rpma::provider::tcp {

class CompletionQueue;

class Target {
  public:
    // What the connection does next.
    struct Verdict {
        enum class Kind : uint8_t {
            kDone,             // nothing (applied, or nothing to apply)
            kReadPayload,      // BeginPayload(wire::PayloadLength(header))
            kWaitForReceive,   // no receive posted: hold the message (RNR bound)
            kPersistOnWorker,  // TakePersist() goes to a persist worker
            kReject,           // NAK the request with `status` and break (`why`)
            kProtocolError,    // the peer broke the protocol (`why`)
            kCompletionLost,   // a receive's completion did not fit its CQ
        };
        Kind kind = Kind::kDone;
        ibv_wc_status status = IBV_WC_SUCCESS;
        const char *why = nullptr;
    };

    // `waiter` is resumed when a receive is posted to a queue it waited on;
    // `persist_workers`: whether large persists go to workers.
    Target(MemoryTable *memory, ReceiveWaiter *waiter, InboundMessage *in, OutboundQueue *out,
           Acknowledgements *acks, const Handshake *handshake, bool persist_workers)
        : memory_(memory),
          waiter_(waiter),
          in_(in),
          out_(out),
          acks_(acks),
          handshake_(handshake),
          persist_workers_(persist_workers) {}

    // The queue pair's receive side: its shared receive queue, or a private
    // one made here (`engine` wakes its waiters).
    void Attach(const QueuePairBinding &qp, ProgressEngine &engine);
    // The QP was destroyed: completes nothing more, and applies nothing
    // until a QP is attached again.
    Verdict Detach();
    // A private receive queue's post (`cache`: the connection's local one).
    int PostReceive(const ibv_recv_wr &wr, RegionCache *cache) { return rq_->Post(wr, cache); }

    // The header of the peer's request arrived (`live`: the connection is
    // established or disconnecting, else a request is a protocol error, as
    // after the peer's DISCONNECT); again when a receive it waited for was
    // posted.
    Verdict OnRequest(bool live);
    // The payload of the request being applied landed.
    Verdict OnRequestPayload();
    // This side begins to disconnect: a request being applied (its payload
    // arriving, or waiting for a receive) is dropped from here on, so nothing
    // more of the peer lands once this returns.
    Verdict StopApplying();

    // The payload's destination was deregistered under its reading.
    Verdict OnPayloadRevoked() const {
        return Reject(IBV_WC_REM_ACCESS_ERR, "the target memory region was deregistered");
    }
    // The RNR bound passed while the message waited for a receive: refused,
    // as a verbs requester's RNR retries run out.
    Verdict ReceiverNotReady() const {
        return Reject(IBV_WC_RNR_RETRY_EXC_ERR, "receiver not ready");
    }

    // kReject: the NAK of the request in the message, carrying `status`,
    // goes out after the ACK of what was applied before it.
    void Refuse(ibv_wc_status status);

    // The message held for want of a receive, or while a worker persists.
    bool WaitingForReceive() const {
        return in_->phase == InboundMessage::Phase::kWaitingForReceive;
    }
    bool Persisting() const { return in_->phase == InboundMessage::Phase::kPersisting; }
    // Either: the peer waits for us, and reading pauses.
    bool Holding() const { return WaitingForReceive() || Persisting(); }
    // kPersistOnWorker: the segment (owning its region) for the worker.
    MemorySegment TakePersist() { return std::move(persisting_); }
    // The worker's answer, under the lock again: kDone or kReject (a
    // persist that failed is refused, never acknowledged).
    Verdict OnPersisted(int error);

    // The connection breaks: the receive in use and the posted ones (a
    // private queue's) complete with IBV_WC_WR_FLUSH_ERR.
    void FlushReceives();

  private:
    static Verdict Reject(ibv_wc_status status, const char *why) {
        return {Verdict::Kind::kReject, status, why};
    }
    static Verdict ProtocolError(const char *why) {
        return {Verdict::Kind::kProtocolError, IBV_WC_SUCCESS, why};
    }
    // Neither applied nor answered: its payload is read and dropped.
    Verdict Drop();
    // The request being applied, if any, is dropped (StopApplying).
    Verdict DropInProgress();
    bool Applying() const { return attached_ && !stopped_; }
    // A receive for the SEND or WRITE_WITH_IMM in in_: true when it has one.
    bool AcquireReceive();
    Verdict OnSend();
    Verdict Persist(MemorySegment &&segment);
    Verdict PersistFailed(int error);
    void Applied();
    // False when a successful completion did not fit the CQ.
    bool CompleteReceive(ibv_wc_status status, ibv_wc_opcode opcode, uint32_t byte_len,
                         bool with_imm);
    // Drops the receive, keeping a payload in progress going into its buffers.
    void ReleaseReceive();

    MemoryTable *const memory_;
    ReceiveWaiter *const waiter_;
    InboundMessage *const in_;
    OutboundQueue *const out_;
    Acknowledgements *const acks_;
    const Handshake *const handshake_;
    const bool persist_workers_;

    bool attached_ = false;
    // This side began to disconnect: for good, whatever QP comes.
    bool stopped_ = false;
    uint64_t pd_id_ = 0;
    uint32_t qp_num_ = 0;
    CompletionQueue *recv_cq_ = nullptr;
    std::unique_ptr<ReceiveQueue> private_rq_;
    ReceiveQueue *rq_ = nullptr;
    RegionCache remote_regions_;
    MemorySegment persisting_;
};

}  // namespace rpma::provider::tcp

#endif  // RPMA_CORE_SRC_PROVIDER_TCP_TCP_TARGET_H
