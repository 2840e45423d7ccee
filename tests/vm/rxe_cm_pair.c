/*
 * rxe_cm_pair: an rdma_cm client/server pair, the connection model rpma is
 * built on. Private data travels both ways (client -> server in the connect
 * request, server -> client in the accept), then the client RDMA WRITEs into
 * the server's memory, READs all of it back, SENDs "done" and disconnects.
 *
 * Usage: rxe_cm_pair server|client|both <ipv4 address> <port> [timeout_s]
 *   server  listens on address:port and serves exactly one client
 *   client  connects to address:port; retries on REJECTED, UNREACHABLE,
 *           ADDR_ERROR, ROUTE_ERROR and CONNECT_ERROR until timeout_s
 *           (default 60) has passed: a server that is not listening yet
 *           rejects, so this is the readiness wait, not a sleep
 *   both    forks a server, runs the client in this process
 *
 * Prints one "RESULT <check> PASS|FAIL <detail>" line per check; exits 0
 * only if every check of this process (and, for both, of the server) passed.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <rdma/rdma_cma.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BUF_SIZE (64 * 1024) /* the server's MR; the client writes its first half */
#define HALF (BUF_SIZE / 2)
#define CQ_TIMEOUT_MS 20000
#define MAGIC_REQ 0x52504d4152455121ULL /* "RPMAREQ!" */
#define MAGIC_REP 0x52504d4152455021ULL /* "RPMAREP!" */

struct req_pdata { /* client -> server, in the CONNECT_REQUEST */
    uint64_t magic;
    uint64_t nonce;
};

struct rep_pdata { /* server -> client, in the ESTABLISHED event */
    uint64_t magic;
    uint64_t nonce_echo;
    uint64_t addr;
    uint32_t rkey;
    uint32_t len;
};

static const char *who = "rxe_cm_pair";
static int failures;

static void result(const char *check, int ok, const char *fmt, ...) {
    va_list ap;
    printf("RESULT %s %s [%s] ", check, ok ? "PASS" : "FAIL", who);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout);
    if (!ok)
        failures++;
}

static void info(const char *fmt, ...) {
    va_list ap;
    printf("[%s] ", who);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout);
}

static long long now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void fill(unsigned char *p, size_t len, unsigned seed) {
    for (size_t i = 0; i < len; i++)
        p[i] = (unsigned char)(seed + i * 13 + (i >> 9));
}

/* Next CM event before deadline (ms, CLOCK_MONOTONIC), or NULL on timeout. */
static struct rdma_cm_event *next_event(struct rdma_event_channel *ch, long long deadline) {
    for (;;) {
        long long left = deadline - now_ms();
        if (left <= 0)
            return NULL;
        struct pollfd p = {.fd = ch->fd, .events = POLLIN};
        int n = poll(&p, 1, (int)(left > 1000 ? 1000 : left));
        if (n < 0 && errno != EINTR)
            return NULL;
        if (n > 0) {
            struct rdma_cm_event *ev = NULL;
            if (rdma_get_cm_event(ch, &ev) == 0)
                return ev;
            return NULL;
        }
    }
}

/* Waits for one successful completion of the given opcode on cq. */
static int wait_wc(struct ibv_cq *cq, enum ibv_wc_opcode opcode, const char *what) {
    long long deadline = now_ms() + CQ_TIMEOUT_MS;
    struct ibv_wc wc;
    for (;;) {
        int n = ibv_poll_cq(cq, 1, &wc);
        if (n < 0) {
            info("%s: ibv_poll_cq failed", what);
            return -1;
        }
        if (n == 1)
            break;
        if (now_ms() > deadline) {
            info("%s: no completion within %d ms", what, CQ_TIMEOUT_MS);
            return -1;
        }
        sched_yield();
    }
    if (wc.status != IBV_WC_SUCCESS || wc.opcode != opcode) {
        info("%s: wc status %s (%d) opcode %d", what, ibv_wc_status_str(wc.status), wc.status,
             wc.opcode);
        return -1;
    }
    return 0;
}

/* The verbs resources of one connection. */
struct conn {
    struct ibv_pd *pd;
    struct ibv_cq *cq;
    struct ibv_mr *mr;
    unsigned char *buf;
    size_t len;
    int has_qp;
};

static int conn_setup(struct conn *c, struct rdma_cm_id *id, size_t len) {
    memset(c, 0, sizeof *c);
    c->len = len;
    c->pd = ibv_alloc_pd(id->verbs);
    c->cq = ibv_create_cq(id->verbs, 16, NULL, NULL, 0);
    c->buf = aligned_alloc(4096, len);
    if (!c->pd || !c->cq || !c->buf)
        return -1;
    memset(c->buf, 0, len);
    c->mr = ibv_reg_mr(c->pd, c->buf, len,
                       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
    if (!c->mr)
        return -1;
    struct ibv_qp_init_attr qa;
    memset(&qa, 0, sizeof qa);
    qa.qp_type = IBV_QPT_RC;
    qa.send_cq = c->cq;
    qa.recv_cq = c->cq;
    qa.cap.max_send_wr = 8;
    qa.cap.max_recv_wr = 8;
    qa.cap.max_send_sge = 1;
    qa.cap.max_recv_sge = 1;
    if (rdma_create_qp(id, c->pd, &qa))
        return -1;
    c->has_qp = 1;
    return 0;
}

static void conn_teardown(struct conn *c, struct rdma_cm_id *id) {
    if (c->has_qp)
        rdma_destroy_qp(id);
    if (c->mr)
        ibv_dereg_mr(c->mr);
    if (c->cq)
        ibv_destroy_cq(c->cq);
    if (c->pd)
        ibv_dealloc_pd(c->pd);
    free(c->buf);
    memset(c, 0, sizeof *c);
}

static int post(struct rdma_cm_id *id, struct conn *c, enum ibv_wr_opcode op, size_t off,
                uint32_t len, uint64_t raddr, uint32_t rkey) {
    struct ibv_sge sge = {.addr = (uintptr_t)(c->buf + off), .length = len, .lkey = c->mr->lkey};
    struct ibv_send_wr wr, *bad = NULL;
    memset(&wr, 0, sizeof wr);
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = op;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = raddr;
    wr.wr.rdma.rkey = rkey;
    return ibv_post_send(id->qp, &wr, &bad);
}

static int parse_addr(const char *addr, const char *port, struct sockaddr_in *sin) {
    memset(sin, 0, sizeof *sin);
    sin->sin_family = AF_INET;
    sin->sin_port = htons((uint16_t)atoi(port));
    return inet_pton(AF_INET, addr, &sin->sin_addr) == 1 ? 0 : -1;
}

static int run_server(struct sockaddr_in *sin, int timeout_s) {
    who = "server";
    long long deadline = now_ms() + timeout_s * 1000LL;
    struct rdma_event_channel *ch = rdma_create_event_channel();
    struct rdma_cm_id *lid = NULL, *id = NULL;
    struct rdma_cm_event *ev;
    struct conn c = {0};
    if (!ch || rdma_create_id(ch, &lid, NULL, RDMA_PS_TCP) ||
        rdma_bind_addr(lid, (struct sockaddr *)sin) || rdma_listen(lid, 1)) {
        result("cm_listen", 0, "%s", strerror(errno));
        return 1;
    }
    result("cm_listen", 1, "on %s:%u", inet_ntoa(sin->sin_addr), ntohs(sin->sin_port));

    ev = next_event(ch, deadline);
    if (!ev || ev->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
        result("cm_request", 0, "%s", ev ? rdma_event_str(ev->event) : "timeout");
        return 1;
    }
    id = ev->id;
    struct req_pdata req = {0};
    int req_len = ev->param.conn.private_data_len;
    if (ev->param.conn.private_data && req_len >= (int)sizeof req)
        memcpy(&req, ev->param.conn.private_data, sizeof req);
    rdma_ack_cm_event(ev);
    result("cm_private_data_in", req.magic == MAGIC_REQ, "%d bytes, nonce %" PRIx64, req_len,
           req.nonce);

    if (conn_setup(&c, id, BUF_SIZE)) {
        result("cm_accept", 0, "verbs setup: %s", strerror(errno));
        return 1;
    }
    fill(c.buf + HALF, HALF, 0xA5); /* what the client must read back */
    /* the client's "done" SEND lands apart from the MR it writes into */
    static unsigned char done_buf[64];
    struct ibv_mr *done_mr = ibv_reg_mr(c.pd, done_buf, sizeof done_buf, IBV_ACCESS_LOCAL_WRITE);
    if (!done_mr) {
        result("cm_accept", 0, "reg done MR: %s", strerror(errno));
        return 1;
    }
    struct ibv_sge sge = {
        .addr = (uintptr_t)done_buf, .length = sizeof done_buf, .lkey = done_mr->lkey};
    struct ibv_recv_wr rwr = {.sg_list = &sge, .num_sge = 1}, *bad = NULL;
    if (ibv_post_recv(id->qp, &rwr, &bad)) {
        result("cm_accept", 0, "ibv_post_recv: %s", strerror(errno));
        return 1;
    }
    struct rep_pdata rep = {.magic = MAGIC_REP,
                            .nonce_echo = req.nonce,
                            .addr = (uintptr_t)c.buf,
                            .rkey = c.mr->rkey,
                            .len = BUF_SIZE};
    struct rdma_conn_param param;
    memset(&param, 0, sizeof param);
    param.private_data = &rep;
    param.private_data_len = sizeof rep;
    param.responder_resources = 1;
    param.initiator_depth = 1;
    param.rnr_retry_count = 7;
    if (rdma_accept(id, &param)) {
        result("cm_accept", 0, "rdma_accept: %s", strerror(errno));
        return 1;
    }
    ev = next_event(ch, deadline);
    int ok = ev && ev->event == RDMA_CM_EVENT_ESTABLISHED;
    result("cm_accept", ok, "%s", ev ? rdma_event_str(ev->event) : "timeout");
    if (ev)
        rdma_ack_cm_event(ev);
    if (!ok)
        return 1;

    ok = wait_wc(c.cq, IBV_WC_RECV, "recv done") == 0 && memcmp(done_buf, "done", 5) == 0;
    unsigned char *expect = malloc(HALF);
    fill(expect, HALF, 0x5A);
    result("server_sees_write", ok && memcmp(c.buf, expect, HALF) == 0,
           "%d bytes written by the client are in the server's memory", HALF);
    free(expect);

    ev = next_event(ch, deadline);
    result("cm_disconnect", ev && ev->event == RDMA_CM_EVENT_DISCONNECTED, "%s",
           ev ? rdma_event_str(ev->event) : "timeout");
    if (ev)
        rdma_ack_cm_event(ev);
    ibv_dereg_mr(done_mr);
    conn_teardown(&c, id);
    rdma_destroy_id(id);
    rdma_destroy_id(lid);
    rdma_destroy_event_channel(ch);
    return failures ? 1 : 0;
}

/* One connection attempt. 1: connected; 0: retryable failure; -1: fatal. */
static int try_connect(struct sockaddr_in *sin, struct rdma_event_channel *ch,
                       struct rdma_cm_id **idp, struct conn *c, struct rep_pdata *rep,
                       uint64_t nonce, long long deadline, char *why, size_t why_len) {
    struct rdma_cm_id *id = NULL;
    struct rdma_cm_event *ev;
    int ret = 0;
    if (rdma_create_id(ch, &id, NULL, RDMA_PS_TCP)) {
        snprintf(why, why_len, "rdma_create_id: %s", strerror(errno));
        return -1;
    }
    long long step = now_ms() + 5000 < deadline ? now_ms() + 5000 : deadline;
    if (rdma_resolve_addr(id, NULL, (struct sockaddr *)sin, 2000)) {
        snprintf(why, why_len, "rdma_resolve_addr: %s", strerror(errno));
        goto retry;
    }
    ev = next_event(ch, step);
    if (!ev || ev->event != RDMA_CM_EVENT_ADDR_RESOLVED) {
        snprintf(why, why_len, "resolve addr: %s", ev ? rdma_event_str(ev->event) : "timeout");
        goto retry_ack;
    }
    rdma_ack_cm_event(ev);
    if (rdma_resolve_route(id, 2000)) {
        snprintf(why, why_len, "rdma_resolve_route: %s", strerror(errno));
        goto retry;
    }
    ev = next_event(ch, step);
    if (!ev || ev->event != RDMA_CM_EVENT_ROUTE_RESOLVED) {
        snprintf(why, why_len, "resolve route: %s", ev ? rdma_event_str(ev->event) : "timeout");
        goto retry_ack;
    }
    rdma_ack_cm_event(ev);
    if (conn_setup(c, id, BUF_SIZE)) {
        snprintf(why, why_len, "verbs setup: %s", strerror(errno));
        ret = -1;
        goto retry;
    }
    struct req_pdata req = {.magic = MAGIC_REQ, .nonce = nonce};
    struct rdma_conn_param param;
    memset(&param, 0, sizeof param);
    param.private_data = &req;
    param.private_data_len = sizeof req;
    param.responder_resources = 1;
    param.initiator_depth = 1;
    param.retry_count = 7;
    param.rnr_retry_count = 7;
    if (rdma_connect(id, &param)) {
        snprintf(why, why_len, "rdma_connect: %s", strerror(errno));
        goto retry;
    }
    ev = next_event(ch, now_ms() + 10000 < deadline ? now_ms() + 10000 : deadline);
    if (!ev || ev->event != RDMA_CM_EVENT_ESTABLISHED) {
        snprintf(why, why_len, "connect: %s status %d", ev ? rdma_event_str(ev->event) : "timeout",
                 ev ? ev->status : 0);
        goto retry_ack;
    }
    memset(rep, 0, sizeof *rep);
    if (ev->param.conn.private_data && ev->param.conn.private_data_len >= sizeof *rep)
        memcpy(rep, ev->param.conn.private_data, sizeof *rep);
    rdma_ack_cm_event(ev);
    *idp = id;
    return 1;
retry_ack:
    if (ev)
        rdma_ack_cm_event(ev);
retry:
    conn_teardown(c, id);
    rdma_destroy_id(id);
    return ret;
}

static int run_client(struct sockaddr_in *sin, int timeout_s) {
    who = "client";
    long long deadline = now_ms() + timeout_s * 1000LL;
    struct rdma_event_channel *ch = rdma_create_event_channel();
    struct rdma_cm_id *id = NULL;
    struct conn c = {0};
    struct rep_pdata rep;
    uint64_t nonce = ((uint64_t)getpid() << 32) ^ (uint64_t)now_ms();
    char why[160] = "";
    int attempts = 0, r = 0;
    if (!ch) {
        result("cm_connect", 0, "rdma_create_event_channel: %s", strerror(errno));
        return 1;
    }
    while (now_ms() < deadline) {
        attempts++;
        r = try_connect(sin, ch, &id, &c, &rep, nonce, deadline, why, sizeof why);
        if (r != 0)
            break;
        if (attempts == 1 || attempts % 10 == 0)
            info("attempt %d: %s; retrying", attempts, why);
        usleep(200 * 1000);
    }
    result("cm_connect", r == 1, "to %s:%u after %d attempt(s)%s%s", inet_ntoa(sin->sin_addr),
           ntohs(sin->sin_port), attempts, r == 1 ? "" : ", last: ", r == 1 ? "" : why);
    if (r != 1)
        return 1;
    result("cm_private_data", rep.magic == MAGIC_REP && rep.nonce_echo == nonce,
           "accept carried magic %" PRIx64 ", nonce echo %s, rkey 0x%x len %u", rep.magic,
           rep.nonce_echo == nonce ? "ok" : "WRONG", rep.rkey, rep.len);
    if (failures || rep.len < BUF_SIZE)
        return 1;

    fill(c.buf, HALF, 0x5A);
    int ok = post(id, &c, IBV_WR_RDMA_WRITE, 0, HALF, rep.addr, rep.rkey) == 0 &&
             wait_wc(c.cq, IBV_WC_RDMA_WRITE, "write") == 0;
    result("cm_write", ok, "%d bytes", HALF);

    unsigned char *expect = malloc(BUF_SIZE);
    memcpy(expect, c.buf, HALF);
    fill(expect + HALF, HALF, 0xA5);
    memset(c.buf, 0, BUF_SIZE);
    ok = post(id, &c, IBV_WR_RDMA_READ, 0, BUF_SIZE, rep.addr, rep.rkey) == 0 &&
         wait_wc(c.cq, IBV_WC_RDMA_READ, "read") == 0;
    result("cm_read", ok && memcmp(c.buf, expect, BUF_SIZE) == 0,
           "%d bytes: the written half and the server's half", BUF_SIZE);
    free(expect);

    memcpy(c.buf, "done", 5);
    ok = post(id, &c, IBV_WR_SEND, 0, 5, 0, 0) == 0 && wait_wc(c.cq, IBV_WC_SEND, "send") == 0;
    result("cm_send", ok, "\"done\" message");

    struct rdma_cm_event *ev = NULL;
    ok = rdma_disconnect(id) == 0 && (ev = next_event(ch, now_ms() + 10000)) != NULL &&
         ev->event == RDMA_CM_EVENT_DISCONNECTED;
    result("cm_disconnect", ok, "%s", ev ? rdma_event_str(ev->event) : "no event");
    if (ev)
        rdma_ack_cm_event(ev);
    conn_teardown(&c, id);
    rdma_destroy_id(id);
    rdma_destroy_event_channel(ch);
    return failures ? 1 : 0;
}

int main(int argc, char **argv) {
    struct sockaddr_in sin;
    if (argc < 4 || parse_addr(argv[2], argv[3], &sin)) {
        fprintf(stderr, "usage: %s server|client|both <ipv4 address> <port> [timeout_s]\n",
                argv[0]);
        return 2;
    }
    int timeout_s = argc > 4 ? atoi(argv[4]) : 60;
    if (strcmp(argv[1], "server") == 0)
        return run_server(&sin, timeout_s);
    if (strcmp(argv[1], "client") == 0)
        return run_client(&sin, timeout_s);
    if (strcmp(argv[1], "both") != 0) {
        fprintf(stderr, "%s: unknown role %s\n", argv[0], argv[1]);
        return 2;
    }
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        return 1;
    }
    if (pid == 0)
        _exit(run_server(&sin, timeout_s));
    int rc = run_client(&sin, timeout_s), status = 0;
    if (rc != 0)
        kill(pid, SIGTERM); /* do not leave a server waiting for a client */
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        printf("[both] server process failed (status 0x%x)\n", status);
        rc = 1;
    }
    return rc;
}
