#include "rpma_core/src/provider/verbs/verbs_work_requests.h"

#include <cerrno>
#include <cstring>

#include "rpma_core/src/log.h"

namespace rpma::provider::verbs {

namespace {

int SignaledFlag(bool signaled) {
    return signaled ? IBV_SEND_SIGNALED : 0;
}

}  // namespace

ibv_send_wr ApmFlushRead(uint64_t remote_addr, uint32_t rkey, ibv_sge *sge, bool signaled,
                         uint64_t wr_id) {
    ibv_send_wr wr{};
    wr.wr_id = wr_id;
    wr.sg_list = sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_READ;
    wr.send_flags = SignaledFlag(signaled);
    wr.wr.rdma.remote_addr = remote_addr;
    wr.wr.rdma.rkey = rkey;
    return wr;
}

ibv_send_wr FencedInlineWrite(uint64_t remote_addr, uint32_t rkey, const char value[8],
                              ibv_sge *sge, bool signaled, uint64_t wr_id) {
    *sge = ibv_sge{reinterpret_cast<uintptr_t>(value), kAtomicWriteLength, 0};
    ibv_send_wr wr{};
    wr.wr_id = wr_id;
    wr.sg_list = sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.send_flags = IBV_SEND_INLINE | IBV_SEND_FENCE | SignaledFlag(signaled);
    wr.wr.rdma.remote_addr = remote_addr;
    wr.wr.rdma.rkey = rkey;
    return wr;
}

int ReportPostFailure(int err, const char *what) {
    switch (err) {
        case 0:
            break;
        case ENOMEM:
            RPMA_LOG_ERROR(
                "posting %s failed: the queue is full (poll completions before posting "
                "more, or make the queue larger in rpma_conn_cfg / rpma_srq_cfg)",
                what);
            break;
        case EINVAL:
            RPMA_LOG_ERROR(
                "posting %s failed: %s (the queue pair is in the error state after a "
                "failed operation or a disconnection, or the request is malformed)",
                what, strerror(err));
            break;
        default:
            RPMA_LOG_ERROR("posting %s failed: %s", what, strerror(err));
            break;
    }
    return err;
}

}  // namespace rpma::provider::verbs
