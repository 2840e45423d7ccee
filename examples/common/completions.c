/*
 * completions.c -- collecting the completions of one connection (see completions.h)
 */
#define _POSIX_C_SOURCE 200809L

#include "examples/common/completions.h"

#include <inttypes.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "examples/common/example_conn.h"

const char *ex_wc_opcode_str(enum ibv_wc_opcode opcode) {
    switch (opcode) {
        case IBV_WC_SEND:
            return "SEND";
        case IBV_WC_RDMA_WRITE:
            return "RDMA_WRITE";
        case IBV_WC_RDMA_READ:
            return "RDMA_READ";
        case IBV_WC_RECV:
            return "RECV";
        case IBV_WC_RECV_RDMA_WITH_IMM:
            return "RECV_RDMA_WITH_IMM";
        default:
            return "another opcode";
    }
}

int ex_conn_cfg_new(uint32_t rcq_size, bool shared_channel, struct rpma_conn_cfg **cfg_ptr) {
    int ret = rpma_conn_cfg_new(cfg_ptr);
    if (ret != 0)
        return ex_report("rpma_conn_cfg_new", ret);
    if ((ret = rpma_conn_cfg_set_rcq_size(*cfg_ptr, rcq_size)) != 0)
        ex_report("rpma_conn_cfg_set_rcq_size", ret);
    else if ((ret = rpma_conn_cfg_set_compl_channel(*cfg_ptr, shared_channel)) != 0)
        ex_report("rpma_conn_cfg_set_compl_channel", ret);
    if (ret != 0)
        (void)rpma_conn_cfg_delete(cfg_ptr);
    return ret;
}

int ex_completions_init(struct rpma_conn *conn, struct ex_completions *comps) {
    memset(comps, 0, sizeof(*comps));
    comps->conn = conn;
    int ret = rpma_conn_get_cq(conn, &comps->cq);
    if (ret != 0)
        return ex_report("rpma_conn_get_cq", ret);
    ret = rpma_conn_get_rcq(conn, &comps->rcq);
    if (ret != 0)
        return ex_report("rpma_conn_get_rcq", ret);
    int fd;
    ret = rpma_conn_get_compl_fd(conn, &fd);
    if (ret == 0)
        comps->shared = true;
    else if (ret != RPMA_E_NOT_SHARED_CHNL)
        return ex_report("rpma_conn_get_compl_fd", ret);
    /* whoever used the queues before may have consumed events of completions still there */
    comps->drain_cq = true;
    comps->drain_rcq = comps->rcq != NULL;
    return 0;
}

/* A completion fd polled as an error, not as readable: waiting on it would block. */
static int fd_failed(short revents) {
    fprintf(stderr, "a completion fd reports an error (poll revents %#x)\n", (unsigned)revents);
    return -1;
}

/* Shared channel: the next event names the queue that fired. */
static int wait_shared(struct ex_completions *comps, int timeout_ms) {
    struct pollfd pfd;
    int ret = rpma_conn_get_compl_fd(comps->conn, &pfd.fd);
    if (ret != 0)
        return ex_report("rpma_conn_get_compl_fd", ret);
    if (ex_poll_readable(&pfd, 1, timeout_ms, "a completion") != 0)
        return -1;
    if (!(pfd.revents & POLLIN))
        return fd_failed(pfd.revents);
    struct rpma_cq *cq = NULL;
    bool is_rcq = false;
    ret = rpma_conn_wait(comps->conn, 0, &cq, &is_rcq);
    if (ret == RPMA_E_NO_COMPLETION)
        return 0;
    if (ret != 0)
        return ex_report("rpma_conn_wait", ret);
    if (cq == NULL || cq != (is_rcq ? comps->rcq : comps->cq)) {
        fprintf(stderr, "rpma_conn_wait() reported is_rcq=%d with a queue that is not the %s\n",
                is_rcq, is_rcq ? "connection's receive CQ" : "connection's CQ");
        return -1;
    }
    if (is_rcq)
        comps->drain_rcq = true;
    else
        comps->drain_cq = true;
    return 0;
}

/* A channel per queue: wait on both fds, then acknowledge each queue that fired. */
static int wait_separate(struct ex_completions *comps, int timeout_ms) {
    struct rpma_cq *cqs[2] = {comps->cq, comps->rcq};
    struct pollfd pfds[2];
    size_t n = comps->rcq != NULL ? 2 : 1;
    for (size_t i = 0; i < n; i++) {
        int ret = rpma_cq_get_fd(cqs[i], &pfds[i].fd);
        if (ret != 0)
            return ex_report("rpma_cq_get_fd", ret);
    }
    if (ex_poll_readable(pfds, n, timeout_ms, "a completion") != 0)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (pfds[i].revents != 0 && !(pfds[i].revents & POLLIN))
            return fd_failed(pfds[i].revents);
        if (pfds[i].revents == 0)
            continue;
        int ret = rpma_cq_wait(cqs[i]);
        if (ret != 0 && ret != RPMA_E_NO_COMPLETION)
            return ex_report("rpma_cq_wait", ret);
        if (i == 0)
            comps->drain_cq = true;
        else
            comps->drain_rcq = true;
    }
    return 0;
}

int ex_completions_next(struct ex_completions *comps, int timeout_ms, struct ibv_wc *wc,
                        bool *from_rcq) {
    int64_t deadline = ex_now_ms() + timeout_ms;
    for (;;) {
        if (comps->drain_cq || comps->drain_rcq) {
            bool rcq = comps->drain_rcq;
            int ret = rpma_cq_get_wc(rcq ? comps->rcq : comps->cq, 1, wc, NULL);
            if (ret == 0) {
                if (rcq)
                    comps->from_rcq++;
                else
                    comps->from_cq++;
                if (from_rcq != NULL)
                    *from_rcq = rcq;
                return 0;
            }
            if (ret != RPMA_E_NO_COMPLETION)
                return ex_report("rpma_cq_get_wc", ret);
            if (rcq)
                comps->drain_rcq = false;
            else
                comps->drain_cq = false;
            continue;
        }
        int left = -1;
        if (timeout_ms >= 0) {
            int64_t rest = deadline - ex_now_ms();
            if (rest <= 0) {
                fprintf(stderr, "timed out after %d ms waiting for a completion\n", timeout_ms);
                return -1;
            }
            left = (int)rest;
        }
        int ret = comps->shared ? wait_shared(comps, left) : wait_separate(comps, left);
        if (ret != 0)
            return ret;
    }
}

static bool is_receive(enum ibv_wc_opcode opcode) {
    return (opcode & IBV_WC_RECV) != 0;
}

/* Checks wc against what is awaited; returns the entry it completes or NULL after saying why. */
static struct ex_awaited *match(const struct ex_completions *comps, struct ex_awaited *ops,
                                size_t n, const struct ibv_wc *wc, bool from_rcq) {
    if (wc->status != IBV_WC_SUCCESS) {
        fprintf(stderr, "operation %#" PRIx64 " failed: %s\n", wc->wr_id,
                ibv_wc_status_str(wc->status));
        return NULL;
    }
    struct ex_awaited *awaited = NULL;
    for (size_t i = 0; i < n && awaited == NULL; i++) {
        if (ops[i].op != NULL && !ops[i].arrived && (uintptr_t)ops[i].op == wc->wr_id)
            awaited = &ops[i];
    }
    if (awaited == NULL) {
        fprintf(stderr, "unexpected completion: %s of operation %#" PRIx64 "\n",
                ex_wc_opcode_str(wc->opcode), wc->wr_id);
        return NULL;
    }
    if (wc->opcode != awaited->opcode) {
        fprintf(stderr, "operation %#" PRIx64 " completed as %s, expected %s\n", wc->wr_id,
                ex_wc_opcode_str(wc->opcode), ex_wc_opcode_str(awaited->opcode));
        return NULL;
    }
    if (comps->rcq != NULL && is_receive(wc->opcode) != from_rcq) {
        fprintf(stderr, "a %s completion arrived on the %s, but with a receive CQ %s\n",
                ex_wc_opcode_str(wc->opcode), from_rcq ? "receive CQ" : "main CQ",
                from_rcq ? "only receives complete there" : "receives complete only there");
        return NULL;
    }
    return awaited;
}

int ex_completions_await(struct ex_completions *comps, struct ex_awaited *ops, size_t n) {
    size_t missing = 0;
    for (size_t i = 0; i < n; i++) {
        ops[i].arrived = false;
        if (ops[i].op != NULL)
            missing++;
    }
    int64_t deadline = ex_now_ms() + EX_TIMEOUT_MS;
    while (missing > 0) {
        int64_t left = deadline - ex_now_ms();
        if (left <= 0) {
            fprintf(stderr, "timed out after %d ms waiting for %zu completion(s)\n", EX_TIMEOUT_MS,
                    missing);
            return -1;
        }
        struct ibv_wc wc;
        bool from_rcq = false;
        if (ex_completions_next(comps, (int)left, &wc, &from_rcq) != 0)
            return -1;
        struct ex_awaited *awaited = match(comps, ops, n, &wc, from_rcq);
        if (awaited == NULL)
            return -1;
        awaited->wc = wc;
        awaited->arrived = true;
        missing--;
    }
    return 0;
}
