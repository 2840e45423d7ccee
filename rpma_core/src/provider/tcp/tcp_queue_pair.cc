#include "rpma_core/src/provider/tcp/tcp_queue_pair.h"

#include "rpma_core/src/provider/tcp/tcp_connection.h"

namespace rpma::provider::tcp {

uint32_t QpNumberAllocator::Allocate() {
    std::lock_guard lock(mu_);
    if (live_.size() >= kMaxQpNum)
        return 0;
    for (;;) {
        const uint32_t candidate = next_;
        next_ = next_ % kMaxQpNum + 1;
        if (live_.insert(candidate).second)
            return candidate;
    }
}

void QpNumberAllocator::Release(uint32_t qp_num) {
    std::lock_guard lock(mu_);
    live_.erase(qp_num);
}

QueuePair::QueuePair(std::shared_ptr<Connection> connection, uint32_t qp_num,
                     QpNumberAllocator &qp_numbers)
    : connection_(std::move(connection)), qp_num_(qp_num), qp_numbers_(qp_numbers) {}

QueuePair::~QueuePair() {
    connection_->UnbindQp(this);
    qp_numbers_.Release(qp_num_);
}

int QueuePair::PostSend(const ibv_send_wr &wr) {
    return connection_->PostSend(wr);
}

void QueuePair::RingDoorbell() {
    connection_->SendHeld();
}

int QueuePair::PostRecv(const ibv_recv_wr &wr) {
    return connection_->PostRecv(wr);
}

int QueuePair::PostFlush(uint64_t remote_addr, uint32_t rkey, size_t length, FlushType type,
                         bool signaled, uint64_t wr_id) {
    return connection_->PostFlush(remote_addr, rkey, length, type, signaled, wr_id);
}

int QueuePair::PostAtomicWrite(uint64_t remote_addr, uint32_t rkey, const char value[8],
                               bool signaled, uint64_t wr_id) {
    return connection_->PostAtomicWrite(remote_addr, rkey, value, signaled, wr_id);
}

}  // namespace rpma::provider::tcp
