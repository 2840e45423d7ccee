// ibv_qp (RC) handle. The queue pair's state lives in its Connection (the
// progress thread needs it as much as the poster); this handle forwards the
// posts and, when destroyed, unbinds the state so nothing is completed into
// CQs the application may destroy next.
#ifndef RPMA_CORE_SRC_PROVIDER_TCP_TCP_QUEUE_PAIR_H
#define RPMA_CORE_SRC_PROVIDER_TCP_TCP_QUEUE_PAIR_H

#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_set>

#include "rpma_core/src/provider/provider.h"

namespace rpma::provider::tcp {

class Connection;

// QP numbers: 24 bits, non-zero, unique among the live QPs of the process.
class QpNumberAllocator {
  public:
    static constexpr uint32_t kMaxQpNum = (1u << 24) - 1;

    // 0 when all numbers are taken.
    uint32_t Allocate();
    void Release(uint32_t qp_num);

  private:
    std::mutex mu_;
    std::unordered_set<uint32_t> live_;
    uint32_t next_ = 1;
};

class QueuePair final : public provider::QueuePair {
  public:
    QueuePair(std::shared_ptr<Connection> connection, uint32_t qp_num,
              QpNumberAllocator &qp_numbers);
    ~QueuePair() override;
    QueuePair(const QueuePair &) = delete;
    QueuePair &operator=(const QueuePair &) = delete;

    uint32_t QpNum() const override { return qp_num_; }
    int PostSend(const ibv_send_wr &wr) override;
    int PostRecv(const ibv_recv_wr &wr) override;
    int PostFlush(uint64_t remote_addr, uint32_t rkey, size_t length, FlushType type, bool signaled,
                  uint64_t wr_id) override;
    int PostAtomicWrite(uint64_t remote_addr, uint32_t rkey, const char value[8], bool signaled,
                        uint64_t wr_id) override;
    void RingDoorbell() override;

  private:
    const std::shared_ptr<Connection> connection_;
    const uint32_t qp_num_;
    QpNumberAllocator &qp_numbers_;
};

}  // namespace rpma::provider::tcp

#endif  // RPMA_CORE_SRC_PROVIDER_TCP_TCP_QUEUE_PAIR_H
