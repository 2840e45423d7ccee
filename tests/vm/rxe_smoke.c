/*
 * rxe_smoke: proves that the VM's RDMA stack (Soft-RoCE, rdma_rxe) does what
 * rpma relies on. Two RC QPs on one device are connected to each other and
 * every operation the library posts is tried once:
 *
 *   device        the device opens, port 1 is ACTIVE, a RoCE GID exists
 *   qp_connect    two RC QPs reach RTS, connected to each other
 *   write         RDMA WRITE 4 KiB, data lands in the remote MR
 *   read          RDMA READ 4 KiB, data lands in the local MR
 *   send_recv     SEND into a posted RECV (rpma_send / rpma_recv)
 *   write_imm     RDMA WRITE WITH IMM (rpma_write with immediate data)
 *   flush_read    unsignaled WRITEs then an 8-byte READ: the READ completion
 *                 proves the WRITEs are visible (the APM flush of rpma_flush)
 *   fenced_write  8-byte inline WRITE with IBV_SEND_FENCE after a READ (the
 *                 fallback of rpma_atomic_write)
 *   atomic_write  probe of the native ATOMIC WRITE: PASS or UNSUPPORTED,
 *                 never a failure (rxe in Linux 6.1 does not support it)
 *
 * Usage: rxe_smoke [device]   (default rxe0)
 * Prints one "RESULT <check> PASS|FAIL|UNSUPPORTED <detail>" line per check
 * and exits 0 only if no check failed.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BUF_SIZE (64 * 1024)
#define CQ_TIMEOUT_MS 10000

static int failures;

static void result(const char *check, const char *verdict, const char *fmt, ...) {
    va_list ap;
    printf("RESULT %s %s ", check, verdict);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout);
    if (strcmp(verdict, "FAIL") == 0)
        failures++;
}

static long long now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* One side of the loopback connection. */
struct side {
    struct ibv_cq *cq;
    struct ibv_qp *qp;
    struct ibv_mr *mr;
    unsigned char *buf;
};

/* Waits for one completion; returns 0 and fills *wc, or -1 on timeout. */
static int wait_wc(struct ibv_cq *cq, struct ibv_wc *wc) {
    long long deadline = now_ms() + CQ_TIMEOUT_MS;
    for (;;) {
        int n = ibv_poll_cq(cq, 1, wc);
        if (n < 0)
            return -1;
        if (n == 1)
            return 0;
        if (now_ms() > deadline)
            return -1;
        sched_yield(); /* rxe does its work in softirqs of this same vCPU */
    }
}

/* Waits for one successful completion of the given opcode; "" or a reason. */
static const char *expect_wc(struct ibv_cq *cq, enum ibv_wc_opcode opcode, struct ibv_wc *wc) {
    static char why[128];
    if (wait_wc(cq, wc))
        return "no completion within timeout";
    if (wc->status != IBV_WC_SUCCESS) {
        snprintf(why, sizeof why, "wc status %s (%d)", ibv_wc_status_str(wc->status), wc->status);
        return why;
    }
    if (wc->opcode != opcode) {
        snprintf(why, sizeof why, "wc opcode %d, expected %d", wc->opcode, opcode);
        return why;
    }
    return "";
}

static int post_send(struct side *s, enum ibv_wr_opcode op, size_t loff, uint32_t len,
                     const struct side *remote, size_t roff, unsigned flags, uint32_t imm) {
    struct ibv_sge sge = {.addr = (uintptr_t)(s->buf + loff), .length = len, .lkey = s->mr->lkey};
    struct ibv_send_wr wr, *bad = NULL;
    memset(&wr, 0, sizeof wr);
    wr.wr_id = op;
    wr.sg_list = &sge;
    wr.num_sge = len ? 1 : 0;
    wr.opcode = op;
    wr.send_flags = flags;
    wr.imm_data = htonl(imm);
    if (remote) {
        wr.wr.rdma.remote_addr = (uintptr_t)(remote->buf + roff);
        wr.wr.rdma.rkey = remote->mr->rkey;
    }
    return ibv_post_send(s->qp, &wr, &bad);
}

static int post_recv(struct side *s, size_t off, uint32_t len) {
    struct ibv_sge sge = {.addr = (uintptr_t)(s->buf + off), .length = len, .lkey = s->mr->lkey};
    struct ibv_recv_wr wr = {.wr_id = 1, .sg_list = &sge, .num_sge = len ? 1 : 0}, *bad = NULL;
    return ibv_post_recv(s->qp, &wr, &bad);
}

static void fill(unsigned char *p, size_t len, unsigned seed) {
    for (size_t i = 0; i < len; i++)
        p[i] = (unsigned char)(seed + i * 7 + (i >> 8));
}

/* Picks the GID to address the device by: RoCE v2 with an IPv4 address first. */
static int pick_gid(struct ibv_context *ctx, int tbl_len, struct ibv_gid_entry *out) {
    int best = -1, best_score = -1;
    for (int i = 0; i < tbl_len; i++) {
        struct ibv_gid_entry e;
        if (ibv_query_gid_ex(ctx, 1, i, &e, 0))
            continue;
        static const unsigned char v4mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
        int score = (e.gid_type == IBV_GID_TYPE_ROCE_V2 ? 2 : 0) +
                    (memcmp(e.gid.raw, v4mapped, sizeof v4mapped) == 0 ? 1 : 0);
        if (score > best_score) {
            best_score = score;
            best = i;
            *out = e;
        }
    }
    return best;
}

static struct ibv_qp *create_qp(struct ibv_pd *pd, struct ibv_cq *cq) {
    struct ibv_qp_init_attr a;
    memset(&a, 0, sizeof a);
    a.qp_type = IBV_QPT_RC;
    a.send_cq = cq;
    a.recv_cq = cq;
    a.cap.max_send_wr = 16;
    a.cap.max_recv_wr = 16;
    a.cap.max_send_sge = 1;
    a.cap.max_recv_sge = 1;
    a.cap.max_inline_data = 64;
    return ibv_create_qp(pd, &a);
}

/* Moves qp to RTS, connected to the QP dqpn on the same device (via gid). */
static int connect_qp(struct ibv_qp *qp, uint32_t dqpn, const struct ibv_gid_entry *gid) {
    struct ibv_qp_attr a;
    memset(&a, 0, sizeof a);
    a.qp_state = IBV_QPS_INIT;
    a.port_num = 1;
    a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
    if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
        return -1;
    memset(&a, 0, sizeof a);
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = IBV_MTU_1024;
    a.dest_qp_num = dqpn;
    a.max_dest_rd_atomic = 4;
    a.min_rnr_timer = 12;
    a.ah_attr.is_global = 1;
    a.ah_attr.grh.dgid = gid->gid;
    a.ah_attr.grh.sgid_index = gid->gid_index;
    a.ah_attr.grh.hop_limit = 1;
    a.ah_attr.port_num = 1;
    if (ibv_modify_qp(qp, &a,
                      IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                          IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
        return -1;
    memset(&a, 0, sizeof a);
    a.qp_state = IBV_QPS_RTS;
    a.timeout = 14;
    a.retry_cnt = 7;
    a.rnr_retry = 7;
    a.max_rd_atomic = 4;
    return ibv_modify_qp(qp, &a,
                         IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                             IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

static void check_write(struct side *a, struct side *b) {
    struct ibv_wc wc;
    fill(a->buf, 4096, 1);
    memset(b->buf, 0, 4096);
    if (post_send(a, IBV_WR_RDMA_WRITE, 0, 4096, b, 0, IBV_SEND_SIGNALED, 0)) {
        result("write", "FAIL", "ibv_post_send: %s", strerror(errno));
        return;
    }
    const char *why = expect_wc(a->cq, IBV_WC_RDMA_WRITE, &wc);
    if (*why)
        result("write", "FAIL", "%s", why);
    else if (memcmp(a->buf, b->buf, 4096) != 0)
        result("write", "FAIL", "remote buffer differs after completion");
    else
        result("write", "PASS", "4096 bytes");
}

static void check_read(struct side *a, struct side *b) {
    struct ibv_wc wc;
    fill(b->buf + 4096, 4096, 2);
    memset(a->buf + 4096, 0, 4096);
    if (post_send(a, IBV_WR_RDMA_READ, 4096, 4096, b, 4096, IBV_SEND_SIGNALED, 0)) {
        result("read", "FAIL", "ibv_post_send: %s", strerror(errno));
        return;
    }
    const char *why = expect_wc(a->cq, IBV_WC_RDMA_READ, &wc);
    if (*why)
        result("read", "FAIL", "%s", why);
    else if (memcmp(a->buf + 4096, b->buf + 4096, 4096) != 0)
        result("read", "FAIL", "local buffer differs after completion");
    else
        result("read", "PASS", "4096 bytes");
}

static void check_send_recv(struct side *a, struct side *b) {
    struct ibv_wc wc;
    const uint32_t len = 1000;
    fill(a->buf + 8192, len, 3);
    memset(b->buf + 8192, 0, 4096);
    if (post_recv(b, 8192, 4096) ||
        post_send(a, IBV_WR_SEND, 8192, len, NULL, 0, IBV_SEND_SIGNALED, 0)) {
        result("send_recv", "FAIL", "post: %s", strerror(errno));
        return;
    }
    const char *why = expect_wc(a->cq, IBV_WC_SEND, &wc);
    if (*why) {
        result("send_recv", "FAIL", "send: %s", why);
        return;
    }
    why = expect_wc(b->cq, IBV_WC_RECV, &wc);
    if (*why)
        result("send_recv", "FAIL", "recv: %s", why);
    else if (wc.byte_len != len)
        result("send_recv", "FAIL", "recv byte_len %u, expected %u", wc.byte_len, len);
    else if (memcmp(a->buf + 8192, b->buf + 8192, len) != 0)
        result("send_recv", "FAIL", "received data differs");
    else
        result("send_recv", "PASS", "%u bytes", len);
}

static void check_write_imm(struct side *a, struct side *b) {
    struct ibv_wc wc;
    const uint32_t imm = 0x12345678;
    fill(a->buf + 12288, 512, 4);
    memset(b->buf + 12288, 0, 512);
    if (post_recv(b, 0, 0) ||
        post_send(a, IBV_WR_RDMA_WRITE_WITH_IMM, 12288, 512, b, 12288, IBV_SEND_SIGNALED, imm)) {
        result("write_imm", "FAIL", "post: %s", strerror(errno));
        return;
    }
    const char *why = expect_wc(a->cq, IBV_WC_RDMA_WRITE, &wc);
    if (*why) {
        result("write_imm", "FAIL", "write: %s", why);
        return;
    }
    why = expect_wc(b->cq, IBV_WC_RECV_RDMA_WITH_IMM, &wc);
    if (*why)
        result("write_imm", "FAIL", "recv: %s", why);
    else if (!(wc.wc_flags & IBV_WC_WITH_IMM) || ntohl(wc.imm_data) != imm)
        result("write_imm", "FAIL", "imm_data 0x%x, expected 0x%x", ntohl(wc.imm_data), imm);
    else if (memcmp(a->buf + 12288, b->buf + 12288, 512) != 0)
        result("write_imm", "FAIL", "remote buffer differs");
    else
        result("write_imm", "PASS", "512 bytes imm=0x%x", imm);
}

static void check_flush_read(struct side *a, struct side *b) {
    struct ibv_wc wc;
    const size_t off = 16384, n = 3, len = 2048;
    fill(a->buf + off, n * len, 5);
    memset(b->buf + off, 0, n * len);
    memset(a->buf + off + n * len, 0, 8);
    for (size_t i = 0; i < n; i++) {
        if (post_send(a, IBV_WR_RDMA_WRITE, off + i * len, len, b, off + i * len, 0, 0)) {
            result("flush_read", "FAIL", "post write: %s", strerror(errno));
            return;
        }
    }
    /* the flush: an 8-byte READ of the written range, into a spare area */
    if (post_send(a, IBV_WR_RDMA_READ, off + n * len, 8, b, off, IBV_SEND_SIGNALED, 0)) {
        result("flush_read", "FAIL", "post read: %s", strerror(errno));
        return;
    }
    const char *why = expect_wc(a->cq, IBV_WC_RDMA_READ, &wc);
    if (*why)
        result("flush_read", "FAIL", "%s", why);
    else if (memcmp(a->buf + off, b->buf + off, n * len) != 0)
        result("flush_read", "FAIL", "writes not all visible when the read completed");
    else if (memcmp(a->buf + off + n * len, a->buf + off, 8) != 0)
        result("flush_read", "FAIL", "the 8 bytes read differ from the written ones");
    else
        result("flush_read", "PASS", "%zu unsignaled writes flushed by an 8-byte read", n);
}

static void check_fenced_write(struct side *a, struct side *b) {
    struct ibv_wc wc;
    const size_t off = 24576;
    uint64_t v = 0x1122334455667788ULL;
    memcpy(a->buf + off, &v, 8);
    memset(b->buf + off, 0, 16);
    /* a read in flight, then the fenced write that must wait for it */
    if (post_send(a, IBV_WR_RDMA_READ, off + 64, 8, b, off + 8, 0, 0) ||
        post_send(a, IBV_WR_RDMA_WRITE, off, 8, b, off,
                  IBV_SEND_SIGNALED | IBV_SEND_FENCE | IBV_SEND_INLINE, 0)) {
        result("fenced_write", "FAIL", "post: %s", strerror(errno));
        return;
    }
    const char *why = expect_wc(a->cq, IBV_WC_RDMA_WRITE, &wc);
    uint64_t got;
    memcpy(&got, b->buf + off, 8);
    if (*why)
        result("fenced_write", "FAIL", "%s", why);
    else if (got != v)
        result("fenced_write", "FAIL", "remote value 0x%llx", (unsigned long long)got);
    else
        result("fenced_write", "PASS", "8-byte inline write with IBV_SEND_FENCE");
}

/* Native ATOMIC WRITE on its own QP pair, so an error state does not leak. */
static void probe_atomic_write(struct ibv_context *ctx, struct ibv_pd *pd, struct side *b_data,
                               const struct ibv_gid_entry *gid) {
    struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
    struct ibv_qp_init_attr_ex x;
    memset(&x, 0, sizeof x);
    x.qp_type = IBV_QPT_RC;
    x.send_cq = cq;
    x.recv_cq = cq;
    x.cap.max_send_wr = 4;
    x.cap.max_recv_wr = 4;
    x.cap.max_send_sge = 1;
    x.cap.max_recv_sge = 1;
    x.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
    x.pd = pd;
    x.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_ATOMIC_WRITE;
    struct ibv_qp *qa = cq ? ibv_create_qp_ex(ctx, &x) : NULL;
    if (!qa) {
        result("atomic_write", "UNSUPPORTED", "ibv_create_qp_ex(IBV_QP_EX_WITH_ATOMIC_WRITE): %s",
               strerror(errno));
        if (cq)
            ibv_destroy_cq(cq);
        return;
    }
    struct ibv_qp *qb = create_qp(pd, cq);
    if (!qb || connect_qp(qa, qb->qp_num, gid) || connect_qp(qb, qa->qp_num, gid)) {
        result("atomic_write", "FAIL", "second QP pair: %s", strerror(errno));
        goto out;
    }
    const size_t off = 32768;
    uint64_t v = 0x0102030405060708ULL, got = 0;
    memset(b_data->buf + off, 0, 8);
    struct ibv_qp_ex *qx = ibv_qp_to_qp_ex(qa);
    ibv_wr_start(qx);
    qx->wr_id = 99;
    qx->wr_flags = IBV_SEND_SIGNALED;
    ibv_wr_atomic_write(qx, b_data->mr->rkey, (uintptr_t)(b_data->buf + off), &v);
    int rc = ibv_wr_complete(qx);
    if (rc) {
        result("atomic_write", "UNSUPPORTED", "ibv_wr_complete: %s", strerror(rc));
        goto out;
    }
    struct ibv_wc wc;
    if (wait_wc(cq, &wc)) {
        result("atomic_write", "UNSUPPORTED", "no completion");
        goto out;
    }
    memcpy(&got, b_data->buf + off, 8);
    if (wc.status != IBV_WC_SUCCESS)
        result("atomic_write", "UNSUPPORTED", "wc status %s (%d)", ibv_wc_status_str(wc.status),
               wc.status);
    else if (got != v)
        result("atomic_write", "FAIL", "completed but remote value is 0x%llx",
               (unsigned long long)got);
    else
        result("atomic_write", "PASS", "native 8-byte atomic write");
out:
    if (qb)
        ibv_destroy_qp(qb);
    ibv_destroy_qp(qa);
    ibv_destroy_cq(cq);
}

int main(int argc, char **argv) {
    const char *devname = argc > 1 ? argv[1] : "rxe0";
    int num = 0;
    struct ibv_device **list = ibv_get_device_list(&num);
    struct ibv_device *dev = NULL;
    for (int i = 0; list && i < num; i++)
        if (strcmp(ibv_get_device_name(list[i]), devname) == 0)
            dev = list[i];
    struct ibv_context *ctx = dev ? ibv_open_device(dev) : NULL;
    struct ibv_port_attr port;
    if (!ctx || ibv_query_port(ctx, 1, &port)) {
        result("device", "FAIL", "%s: not found or cannot be opened (%d devices): %s", devname, num,
               strerror(errno));
        return 1;
    }
    struct ibv_gid_entry gid;
    int gid_idx = pick_gid(ctx, port.gid_tbl_len, &gid);
    char gs[INET6_ADDRSTRLEN] = "?";
    if (gid_idx >= 0)
        inet_ntop(AF_INET6, gid.gid.raw, gs, sizeof gs);
    if (port.state != IBV_PORT_ACTIVE || gid_idx < 0) {
        result("device", "FAIL", "%s port 1 state %s, gid index %d", devname,
               ibv_port_state_str(port.state), gid_idx);
        return 1;
    }
    result("device", "PASS", "%s port 1 ACTIVE active_mtu=%d gid[%d]=%s type=%s", devname,
           128 << port.active_mtu, gid_idx, gs,
           gid.gid_type == IBV_GID_TYPE_ROCE_V2 ? "RoCEv2" : "RoCEv1");

    struct ibv_pd *pd = ibv_alloc_pd(ctx);
    struct side a = {0}, b = {0};
    struct side *sides[2] = {&a, &b};
    const int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                       IBV_ACCESS_REMOTE_ATOMIC;
    for (int i = 0; pd && i < 2; i++) {
        struct side *s = sides[i];
        s->buf = aligned_alloc(4096, BUF_SIZE);
        s->mr = s->buf ? ibv_reg_mr(pd, s->buf, BUF_SIZE, access) : NULL;
        s->cq = ibv_create_cq(ctx, 32, NULL, NULL, 0);
        s->qp = s->cq ? create_qp(pd, s->cq) : NULL;
    }
    if (!pd || !a.mr || !b.mr || !a.qp || !b.qp || connect_qp(a.qp, b.qp->qp_num, &gid) ||
        connect_qp(b.qp, a.qp->qp_num, &gid)) {
        result("qp_connect", "FAIL", "PD/MR/CQ/QP setup: %s", strerror(errno));
        return 1;
    }
    result("qp_connect", "PASS", "qpn %u <-> %u", a.qp->qp_num, b.qp->qp_num);

    check_write(&a, &b);
    check_read(&a, &b);
    check_send_recv(&a, &b);
    check_write_imm(&a, &b);
    check_flush_read(&a, &b);
    check_fenced_write(&a, &b);
    probe_atomic_write(ctx, pd, &b, &gid);

    for (int i = 0; i < 2; i++) {
        ibv_destroy_qp(sides[i]->qp);
        ibv_destroy_cq(sides[i]->cq);
        ibv_dereg_mr(sides[i]->mr);
        free(sides[i]->buf);
    }
    ibv_dealloc_pd(pd);
    ibv_close_device(ctx);
    ibv_free_device_list(list);
    printf("rxe_smoke: %s (%d failed)\n", failures ? "FAILED" : "PASSED", failures);
    return failures ? 1 : 0;
}
