// rpma_read, rpma_write, rpma_atomic_write, rpma_flush, rpma_send, rpma_recv
// and their immediate-data variants: post one work request on a connection.
#include <arpa/inet.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "librpma.h"
#include "rpma_core/src/conn.h"
#include "rpma_core/src/log.h"
#include "rpma_core/src/mr.h"
#include "rpma_core/src/mr_remote.h"
#include "rpma_core/src/provider/provider.h"
#include "rpma_ext.h"

namespace {

// A completion on success is asked for by RPMA_F_COMPLETION_ALWAYS only.
constexpr int kCompletionOnSuccess = RPMA_F_COMPLETION_ALWAYS & ~RPMA_F_COMPLETION_ON_ERROR;

bool Signaled(int flags) {
    return (flags & kCompletionOnSuccess) != 0;
}

uint64_t WrId(const void *op_context) {
    return reinterpret_cast<uintptr_t>(op_context);
}

// librpma allows an "empty" RMA operation (both regions NULL, all offsets and
// the length 0) but nothing half-specified.
bool ValidRmaArguments(const void *local, size_t local_offset, const void *remote,
                       size_t remote_offset, size_t len) {
    bool empty = local_offset == 0 && remote_offset == 0 && len == 0;
    if (local == nullptr || remote == nullptr)
        return local == nullptr && remote == nullptr && empty;
    return len <= UINT32_MAX;
}

int Posted(int err, const char *what) {
    if (err == 0)
        return 0;
    RPMA_LOG_ERROR("posting %s failed: %s", what, strerror(err));
    // RPMA_E_PROVIDER's detail is errno (as librpma's provider error), set
    // last: logging may change it.
    errno = err;
    return RPMA_E_PROVIDER;
}

// Posts `opcode` with [local_offset, +len) of local as its local side.
int PostSendWr(rpma_conn *conn, ibv_wr_opcode opcode, const rpma_mr_local *local,
               size_t local_offset, size_t len, int flags, uint32_t imm, const void *op_context,
               uint64_t remote_addr, uint32_t rkey, const char *what) {
    ibv_sge sge = rpma::MakeSge(local, local_offset, len);
    ibv_send_wr wr{};
    wr.wr_id = WrId(op_context);
    wr.sg_list = local ? &sge : nullptr;
    wr.num_sge = local ? 1 : 0;
    wr.opcode = opcode;
    wr.send_flags = (Signaled(flags) ? IBV_SEND_SIGNALED : 0) |
                    ((flags & RPMA_EXT_F_MORE) != 0 ? rpma::provider::kSendMore : 0);
    wr.imm_data = htonl(imm);
    wr.wr.rdma.remote_addr = remote_addr;
    wr.wr.rdma.rkey = rkey;
    return Posted(conn->id->Qp()->PostSend(wr), what);
}

int PostRma(rpma_conn *conn, ibv_wr_opcode opcode, const rpma_mr_local *local, size_t local_offset,
            const rpma_mr_remote *remote, size_t remote_offset, size_t len, int flags, uint32_t imm,
            const void *op_context, const char *what) {
    if (conn == nullptr || flags == 0 ||
        !ValidRmaArguments(local, local_offset, remote, remote_offset, len))
        return RPMA_E_INVAL;
    return PostSendWr(conn, opcode, local, local_offset, len, flags, imm, op_context,
                      remote ? remote->addr + remote_offset : 0, remote ? remote->rkey : 0, what);
}

int PostMessage(rpma_conn *conn, ibv_wr_opcode opcode, const rpma_mr_local *src, size_t offset,
                size_t len, int flags, uint32_t imm, const void *op_context, const char *what) {
    if (conn == nullptr || flags == 0 || (src == nullptr && (offset != 0 || len != 0)) ||
        len > UINT32_MAX)
        return RPMA_E_INVAL;
    return PostSendWr(conn, opcode, src, offset, len, flags, imm, op_context, 0, 0, what);
}

}  // namespace

int rpma_read(struct rpma_conn *conn, struct rpma_mr_local *dst, size_t dst_offset,
              const struct rpma_mr_remote *src, size_t src_offset, size_t len, int flags,
              const void *op_context) {
    return PostRma(conn, IBV_WR_RDMA_READ, dst, dst_offset, src, src_offset, len, flags, 0,
                   op_context, "a read");
}

int rpma_write(struct rpma_conn *conn, struct rpma_mr_remote *dst, size_t dst_offset,
               const struct rpma_mr_local *src, size_t src_offset, size_t len, int flags,
               const void *op_context) {
    return PostRma(conn, IBV_WR_RDMA_WRITE, src, src_offset, dst, dst_offset, len, flags, 0,
                   op_context, "a write");
}

int rpma_write_with_imm(struct rpma_conn *conn, struct rpma_mr_remote *dst, size_t dst_offset,
                        const struct rpma_mr_local *src, size_t src_offset, size_t len, int flags,
                        uint32_t imm, const void *op_context) {
    return PostRma(conn, IBV_WR_RDMA_WRITE_WITH_IMM, src, src_offset, dst, dst_offset, len, flags,
                   imm, op_context, "a write with immediate data");
}

int rpma_atomic_write(struct rpma_conn *conn, struct rpma_mr_remote *dst, size_t dst_offset,
                      const char src[8], int flags, const void *op_context) {
    if (conn == nullptr || dst == nullptr || src == nullptr || flags == 0 ||
        dst_offset % RPMA_ATOMIC_WRITE_ALIGNMENT != 0)
        return RPMA_E_INVAL;
    return Posted(conn->id->Qp()->PostAtomicWrite(dst->addr + dst_offset, dst->rkey, src,
                                                  Signaled(flags), WrId(op_context)),
                  "an atomic write");
}

int rpma_flush(struct rpma_conn *conn, struct rpma_mr_remote *dst, size_t dst_offset, size_t len,
               enum rpma_flush_type type, int flags, const void *op_context) {
    if (conn == nullptr || dst == nullptr || flags == 0 ||
        (type != RPMA_FLUSH_TYPE_PERSISTENT && type != RPMA_FLUSH_TYPE_VISIBILITY))
        return RPMA_E_INVAL;
    bool persistent = type == RPMA_FLUSH_TYPE_PERSISTENT;
    if (persistent && !conn->direct_write_to_pmem) {
        RPMA_LOG_ERROR(
            "a persistent flush needs the remote peer's configuration declaring "
            "direct write to pmem (rpma_conn_apply_remote_peer_cfg)");
        return RPMA_E_NOSUPP;
    }
    int needed =
        persistent ? RPMA_MR_USAGE_FLUSH_TYPE_PERSISTENT : RPMA_MR_USAGE_FLUSH_TYPE_VISIBILITY;
    if ((dst->usage & needed) == 0) {
        RPMA_LOG_ERROR("the remote region does not support the %s flush",
                       persistent ? "persistent" : "visibility");
        return RPMA_E_NOSUPP;
    }
    auto flush_type = persistent ? rpma::provider::FlushType::kPersistent
                                 : rpma::provider::FlushType::kVisibility;
    return Posted(conn->id->Qp()->PostFlush(dst->addr + dst_offset, dst->rkey, len, flush_type,
                                            Signaled(flags), WrId(op_context)),
                  "a flush");
}

int rpma_send(struct rpma_conn *conn, const struct rpma_mr_local *src, size_t offset, size_t len,
              int flags, const void *op_context) {
    return PostMessage(conn, IBV_WR_SEND, src, offset, len, flags, 0, op_context, "a send");
}

int rpma_send_with_imm(struct rpma_conn *conn, const struct rpma_mr_local *src, size_t offset,
                       size_t len, int flags, uint32_t imm, const void *op_context) {
    return PostMessage(conn, IBV_WR_SEND_WITH_IMM, src, offset, len, flags, imm, op_context,
                       "a send with immediate data");
}

int rpma_recv(struct rpma_conn *conn, struct rpma_mr_local *dst, size_t offset, size_t len,
              const void *op_context) {
    if (conn == nullptr || (dst == nullptr && (offset != 0 || len != 0)) || len > UINT32_MAX)
        return RPMA_E_INVAL;
    ibv_sge sge;
    return Posted(conn->id->Qp()->PostRecv(rpma::MakeRecvWr(dst, offset, len, op_context, &sge)),
                  "a receive");
}
