#include "rpma_core/src/provider/tcp/tcp_send_queue.h"

#include "rpma_core/src/provider/tcp/tcp_completion_queue.h"
#include "rpma_core/src/provider/tcp/tcp_tsan.h"

namespace rpma::provider::tcp {

void SendQueue::Attach(uint32_t depth, uint32_t qp_num, CompletionQueue *cq) {
    depth_ = depth;
    qp_num_ = qp_num;
    cq_ = cq;
}

void SendQueue::Detach() {
    cq_ = nullptr;
    wrs_.clear();
    extra_slots_ = 0;
}

uint64_t SendQueue::Push(PendingWr &&wr) {
    if (wr.local_error != IBV_WC_SUCCESS)
        error_pending_ = true;
    if (!error_pending_) {
        next_sequence_ += wr.parts;
        wr.sequence = next_sequence_ - 1;
    } else {
        wr.sequence = 0;
    }
    const uint64_t sequence = wr.sequence;
    extra_slots_ += wr.Slots() - 1;
    wrs_.emplace_back() = std::move(wr);
    return sequence;
}

bool SendQueue::Acknowledge(uint64_t sequence) {
    if (sequence >= next_sequence_)
        return false;
    while (!wrs_.empty() && wrs_.front().sequence != 0) {
        const PendingWr &front = wrs_.front();
        // A READ's part is answered by its response, never by an ACK.
        if (front.is_read)
            return front.FirstSequence() + front.parts_answered > sequence;
        if (front.sequence > sequence)
            break;
        CompleteFront(IBV_WC_SUCCESS);
    }
    return true;
}

bool SendQueue::CompleteBefore(uint64_t sequence) {
    if (sequence == 0 || sequence >= next_sequence_)
        return false;
    while (!wrs_.empty() && wrs_.front().sequence != 0 && wrs_.front().sequence < sequence) {
        if (wrs_.front().is_read)
            return false;
        CompleteFront(IBV_WC_SUCCESS);
    }
    return !wrs_.empty() && wrs_.front().sequence != 0 &&
           wrs_.front().FirstSequence() <= sequence && sequence <= wrs_.front().sequence;
}

void SendQueue::CompleteFront(ibv_wc_status status) {
    if (wrs_.empty()) [[unlikely]]
        return;
    const PendingWr &wr = wrs_.front();
    if (status == IBV_WC_SUCCESS)
        tsan::Observe(wr.rkey);  // what the target did for it
    if (wr.signaled || status != IBV_WC_SUCCESS) {
        ibv_wc wc{};
        wc.wr_id = wr.wr_id;
        wc.status = status;
        wc.opcode = wr.opcode;
        wc.byte_len = wr.byte_len;
        if (!Complete(cq_, qp_num_, wc)) [[unlikely]]
            completion_lost_ = true;
    }
    extra_slots_ -= wr.Slots() - 1;
    wrs_.pop_front();
}

ibv_wc_status SendQueue::FrontLocalError() const {
    if (completion_lost_) [[unlikely]]
        return IBV_WC_WR_FLUSH_ERR;
    return wrs_.empty() ? IBV_WC_SUCCESS : wrs_.front().local_error;
}

void SendQueue::FlushAll(ibv_wc_status first_status) {
    ibv_wc_status status = first_status;
    while (!wrs_.empty()) {
        CompleteFront(status);
        status = IBV_WC_WR_FLUSH_ERR;
    }
    error_pending_ = true;
}

bool SendQueue::Complete(CompletionQueue *cq, uint32_t qp_num, const ibv_wc &wc) {
    if (cq == nullptr)
        return true;  // the QP is gone: nothing to report, nothing lost
    ibv_wc completed = wc;
    completed.qp_num = qp_num;
    return cq->Push(completed);
}

}  // namespace rpma::provider::tcp
