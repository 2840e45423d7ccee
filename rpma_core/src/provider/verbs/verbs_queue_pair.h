// The RC queue pair of an rdma_cm id (rdma_create_qp / rdma_destroy_qp).
// Besides passing the caller's work requests straight to ibverbs, it posts
// flushes and atomic writes natively where the build and the device allow,
// and otherwise as librpma's fallbacks (verbs_work_requests.h), for which
// it owns the APM landing buffer.
#ifndef RPMA_CORE_SRC_PROVIDER_VERBS_VERBS_QUEUE_PAIR_H
#define RPMA_CORE_SRC_PROVIDER_VERBS_VERBS_QUEUE_PAIR_H

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <memory>

#include "rpma_core/src/provider/provider.h"
#include "rpma_core/src/provider/verbs/verbs_apm_buffer.h"

namespace rpma::provider::verbs {

class ProtectionDomain;

class QueuePair final : public provider::QueuePair {
  public:
    // Creates the QP of `id`, which must not have one yet and must outlive
    // the QueuePair. The CQs and the SRQ of `init` must be this provider's.
    static int Create(rdma_cm_id *id, ProtectionDomain &pd, const QueuePairInit &init,
                      std::unique_ptr<QueuePair> *qp);

    explicit QueuePair(rdma_cm_id *id) : id_(id) {}
    ~QueuePair() override;
    QueuePair(const QueuePair &) = delete;
    QueuePair &operator=(const QueuePair &) = delete;

    uint32_t QpNum() const override { return id_->qp->qp_num; }
    // ENOMEM when the queue is full, as ibverbs reports it.
    int PostSend(const ibv_send_wr &wr) override;
    int PostRecv(const ibv_recv_wr &wr) override;
    int PostFlush(uint64_t remote_addr, uint32_t rkey, size_t length, FlushType type, bool signaled,
                  uint64_t wr_id) override;
    int PostAtomicWrite(uint64_t remote_addr, uint32_t rkey, const char value[8], bool signaled,
                        uint64_t wr_id) override;

  private:
    int Post(ibv_send_wr *wr, const char *what);

    rdma_cm_id *id_;
    bool has_qp_ = false;
    // Set when a native operation is posted through the extended API.
    ibv_qp_ex *qp_ex_ = nullptr;
    bool native_flush_ = false;
    bool native_atomic_write_ = false;
    std::unique_ptr<ApmBuffer> apm_buffer_;  // null when flushes are native
};

}  // namespace rpma::provider::verbs

#endif  // RPMA_CORE_SRC_PROVIDER_VERBS_VERBS_QUEUE_PAIR_H
