// The initiator's outstanding work requests, in posting order, and their
// completions. A WR occupies its send-queue slot until the target has
// answered for it: a cumulative ACK, the READ_RESPONSE of a READ, or a NAK.
// Because the target executes requests in order, an answer for request N
// also completes every request before N.
#ifndef RPMA_CORE_SRC_PROVIDER_TCP_TCP_SEND_QUEUE_H
#define RPMA_CORE_SRC_PROVIDER_TCP_TCP_SEND_QUEUE_H

#include <infiniband/verbs.h>

#include <cstdint>

#include "rpma_core/src/provider/tcp/tcp_containers.h"

#include "rpma_core/src/provider/tcp/tcp_memory_table.h"

namespace rpma::provider::tcp {

class CompletionQueue;

struct PendingWr {
    uint64_t wr_id = 0;
    // 0: never transmitted (posted with, or behind, a local error).
    uint64_t sequence = 0;
    ibv_wc_opcode opcode = IBV_WC_RDMA_WRITE;
    bool signaled = false;
    uint32_t byte_len = 0;
    bool is_read = false;
    SegmentList read_destination;
    ibv_wc_status local_error = IBV_WC_SUCCESS;
    // Longer than one wire message: sent as `parts` requests (tcp_parts.h)
    // on the sequences FirstSequence() .. sequence; the answer to the last
    // completes the WR.
    uint32_t parts = 1;
    // A READ's parts whose response arrived.
    uint32_t parts_answered = 0;

    uint64_t FirstSequence() const { return sequence - parts + 1; }
    // Send queue slots held: a READ one per part (the target answers each,
    // and bounds the answers it holds by our depth), anything else one.
    uint32_t Slots() const { return is_read ? parts : 1; }
    // The target region's, for ThreadSanitizer (tcp_tsan.h); 0 for a SEND.
    uint32_t rkey = 0;
};

class SendQueue {
  public:
    void Attach(uint32_t depth, uint32_t qp_num, CompletionQueue *cq);
    // The QP was destroyed: nothing may be completed into its CQ any more.
    void Detach();

    // No room for a WR of `slots` slots (PendingWr::Slots).
    bool Full(uint32_t slots = 1) const { return wrs_.size() + extra_slots_ + slots > depth_; }
    uint32_t Depth() const { return depth_; }
    bool Empty() const { return wrs_.empty(); }
    // The next request's sequence number; the first is 1.
    uint64_t NextSequence() const { return next_sequence_; }
    // True once a WR with a local error was posted: the QP is about to enter
    // the error state, so later WRs are not transmitted.
    bool ErrorPending() const { return error_pending_; }

    // Assigns the sequence numbers (one per part) unless the WR is not
    // transmitted.
    uint64_t Push(PendingWr &&wr);

    // Cumulative ACK. False when the peer acknowledges a request it never got
    // or a READ whose data it never sent.
    bool Acknowledge(uint64_t sequence);
    // Completes what precedes `sequence`; then the front must be the WR
    // that `sequence` is (a part of).
    // False on a protocol violation.
    bool CompleteBefore(uint64_t sequence);
    PendingWr *Front() { return wrs_.empty() ? nullptr : &wrs_.front(); }
    // Nothing when the queue is empty (the QP may have gone meanwhile).
    void CompleteFront(ibv_wc_status status);
    // IBV_WC_WR_FLUSH_ERR once a completion was lost to a full CQ (the QP
    // must enter the error state); else the front WR's local error, or
    // IBV_WC_SUCCESS.
    ibv_wc_status FrontLocalError() const;
    bool CompletionLost() const { return completion_lost_; }
    // The QP entered the error state: the front completes with
    // `first_status`, every other WR with IBV_WC_WR_FLUSH_ERR.
    void FlushAll(ibv_wc_status first_status);

    uint32_t QpNum() const { return qp_num_; }
    // Completes a WR that never entered the queue (e.g. a receive posted to
    // a QP in the error state uses the receive CQ instead). False when the
    // CQ was full and the completion is lost.
    static bool Complete(CompletionQueue *cq, uint32_t qp_num, const ibv_wc &wc);

  private:
    struct ReleaseWr {
        void operator()(PendingWr &wr) const { wr.read_destination.clear(); }
    };
    RingQueue<PendingWr, ReleaseWr> wrs_;
    uint32_t depth_ = 0;
    // Slots held beyond one per WR (multi-part READs).
    uint32_t extra_slots_ = 0;
    uint32_t qp_num_ = 0;
    CompletionQueue *cq_ = nullptr;
    uint64_t next_sequence_ = 1;
    bool error_pending_ = false;
    bool completion_lost_ = false;
};

}  // namespace rpma::provider::tcp

#endif  // RPMA_CORE_SRC_PROVIDER_TCP_TCP_SEND_QUEUE_H
