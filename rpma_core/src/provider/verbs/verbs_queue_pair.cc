#include "rpma_core/src/provider/verbs/verbs_queue_pair.h"

#include <cerrno>
#include <cstring>

#include "rpma_core/src/log.h"
#include "rpma_core/src/provider/verbs/verbs_capabilities.h"
#include "rpma_core/src/provider/verbs/verbs_completion_queue.h"
#include "rpma_core/src/provider/verbs/verbs_device.h"
#include "rpma_core/src/provider/verbs/verbs_native_ops.h"
#include "rpma_core/src/provider/verbs/verbs_protection_domain.h"
#include "rpma_core/src/provider/verbs/verbs_shared_receive_queue.h"
#include "rpma_core/src/provider/verbs/verbs_work_requests.h"

namespace rpma::provider::verbs {

namespace {

// librpma's queue pair: one SGE per work request, completions only where
// asked for (sq_sig_all = 0), and room for the 8 inline bytes of the
// atomic-write fallback.
ibv_qp_init_attr_ex QpAttributes(ibv_pd *pd, ibv_cq *send_cq, ibv_cq *recv_cq, ibv_srq *srq,
                                 const QueuePairInit &init, const Capabilities &caps) {
    ibv_qp_init_attr_ex attr{};
    attr.send_cq = send_cq;
    attr.recv_cq = recv_cq;
    attr.srq = srq;
    attr.cap.max_send_wr = init.sq_size;
    attr.cap.max_recv_wr = init.rq_size;
    attr.cap.max_send_sge = 1;
    attr.cap.max_recv_sge = 1;
    attr.cap.max_inline_data = kAtomicWriteLength;
    attr.qp_type = IBV_QPT_RC;
    attr.sq_sig_all = 0;
    attr.comp_mask = IBV_QP_INIT_ATTR_PD;
    attr.pd = pd;
    // The extended API is needed only for the native operations; every
    // other request goes through ibv_post_send, as in librpma.
    uint64_t send_ops = (caps.native_flush ? native::kSendOpsFlush : 0) |
                        (caps.native_atomic_write ? native::kSendOpsAtomicWrite : 0);
    if (send_ops != 0) {
        attr.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
        attr.send_ops_flags = send_ops;
    }
    return attr;
}

}  // namespace

int QueuePair::Create(rdma_cm_id *id, ProtectionDomain &pd, const QueuePairInit &init,
                      std::unique_ptr<QueuePair> *qp) {
    auto *send_cq = dynamic_cast<CompletionQueue *>(init.send_cq);
    auto *recv_cq = dynamic_cast<CompletionQueue *>(init.recv_cq);
    auto *srq = dynamic_cast<SharedReceiveQueue *>(init.srq);
    if (send_cq == nullptr || recv_cq == nullptr || (init.srq != nullptr && srq == nullptr)) {
        RPMA_LOG_ERROR(
            "a verbs queue pair needs completion queues (and an SRQ) of the verbs "
            "provider");
        return EINVAL;
    }
    const Device &device = pd.device();
    const Capabilities &caps = device.Caps();
    ibv_qp_init_attr_ex attr = QpAttributes(pd.Raw(), send_cq->Raw(), recv_cq->Raw(),
                                            srq ? srq->Raw() : nullptr, init, caps);

    auto created = std::make_unique<QueuePair>(id);
    errno = 0;
    if (rdma_create_qp_ex(id, &attr) != 0) {
        int err = ErrnoOr(ENOMEM);
        const ibv_device_attr &limits = device.Attributes();
        RPMA_LOG_ERROR(
            "rdma_create_qp(RC, sq_size=%u, rq_size=%u) on %s failed: %s (%s allows "
            "at most %d work requests per queue)",
            init.sq_size, init.rq_size, device.Name(), strerror(err), device.Name(),
            limits.max_qp_wr);
        return err;
    }
    created->has_qp_ = true;
    if (caps.native_flush || caps.native_atomic_write) {
        created->qp_ex_ = ibv_qp_to_qp_ex(id->qp);
        if (created->qp_ex_ == nullptr) {
            RPMA_LOG_ERROR(
                "%s reports native flush or atomic write but gives no extended "
                "queue pair to post them on",
                device.Name());
            return EOPNOTSUPP;
        }
        created->native_flush_ = caps.native_flush;
        created->native_atomic_write_ = caps.native_atomic_write;
    }
    if (!created->native_flush_) {
        int err = ApmBuffer::Create(pd, &created->apm_buffer_);
        if (err != 0)
            return err;
    }
    *qp = std::move(created);
    return 0;
}

QueuePair::~QueuePair() {
    // Before the APM buffer: nothing may land in it once it is gone.
    if (has_qp_)
        rdma_destroy_qp(id_);
}

int QueuePair::Post(ibv_send_wr *wr, const char *what) {
    ibv_send_wr *bad = nullptr;
    return ReportPostFailure(ibv_post_send(id_->qp, wr, &bad), what);
}

int QueuePair::PostSend(const ibv_send_wr &wr) {
    ibv_send_wr one = wr;
    one.next = nullptr;
    one.send_flags &= ~kSendMore;  // a hint for the tcp provider only
    return Post(&one, "a work request");
}

int QueuePair::PostRecv(const ibv_recv_wr &wr) {
    ibv_recv_wr one = wr;
    one.next = nullptr;
    ibv_recv_wr *bad = nullptr;
    return ReportPostFailure(ibv_post_recv(id_->qp, &one, &bad), "a receive");
}

int QueuePair::PostFlush(uint64_t remote_addr, uint32_t rkey, size_t length, FlushType type,
                         bool signaled, uint64_t wr_id) {
    if (native_flush_)
        return ReportPostFailure(
            native::PostFlush(qp_ex_, wr_id, signaled, rkey, remote_addr, length, type), "a flush");
    // APM reads the same bytes for both types: whether placed data is also
    // persistent is up to the target, which said so in its peer config.
    ibv_sge sge = apm_buffer_->Sge();
    ibv_send_wr wr = ApmFlushRead(remote_addr, rkey, &sge, signaled, wr_id);
    return Post(&wr, "the read of an APM flush");
}

int QueuePair::PostAtomicWrite(uint64_t remote_addr, uint32_t rkey, const char value[8],
                               bool signaled, uint64_t wr_id) {
    if (native_atomic_write_)
        return ReportPostFailure(
            native::PostAtomicWrite(qp_ex_, wr_id, signaled, rkey, remote_addr, value),
            "an atomic write");
    ibv_sge sge;
    ibv_send_wr wr = FencedInlineWrite(remote_addr, rkey, value, &sge, signaled, wr_id);
    return Post(&wr, "the write of an atomic write");
}

}  // namespace rpma::provider::verbs
