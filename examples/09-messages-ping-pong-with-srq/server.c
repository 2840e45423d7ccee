/*
 * server.c -- ping-pong with a shared receive queue, server: one SRQ, with its own receive CQ,
 * takes the pings of every connection. Its buffers are posted (rpma_srq_recv()) before any
 * client comes, so no ping can arrive before a buffer. A receive completion names its
 * connection only by wc.qp_num, which the server matches against rpma_conn_get_qp_num() of each
 * connection. One thread, one poll loop over the endpoint, the SRQ's receive CQ and the event
 * fd of every connection. The server exits once the given number of clients has come and gone;
 * it fails if any ping was wrong or any client left early.
 *
 * usage: server <addr> <port> <clients>
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "examples/08-messages-ping-pong/ping_pong.h"
#include "examples/common/completions.h"
#include "examples/common/example_conn.h"

#define MAX_CLIENTS 16
#define MSG_SIZE sizeof(struct pp_msg)

struct client {
    struct rpma_conn *conn; /* NULL: not connected (yet or any more) */
    struct rpma_cq *cq;     /* the connection's own CQ: only its sends complete there */
    uint32_t qp_num;
    struct pp_hello hello;
    uint32_t answered;
    struct pp_msg *pong; /* the client's own send buffer */
    bool sending;        /* a pong whose send has not completed yet */
};

struct server {
    struct rpma_peer *peer;
    struct rpma_ep *ep;
    struct rpma_srq *srq;
    struct rpma_cq *rcq; /* the SRQ's */
    struct rpma_conn_cfg *cfg;
    unsigned expected; /* clients to serve */
    /*
     * msgs[0, expected): the SRQ's receive buffers, one per client: a client sends its next
     * ping only after the pong to the previous one, and the buffer of that ping is posted again
     * before the pong is sent. msgs[expected + i]: client i's pong.
     */
    struct pp_msg *msgs;
    struct rpma_mr_local *mr;
    struct client clients[MAX_CLIENTS];
    unsigned accepted;
    unsigned finished;
    unsigned failed;
    unsigned long long answered;
};

static int post_ping_buffer(struct server *s, size_t slot) {
    int ret = rpma_srq_recv(s->srq, s->mr, slot * MSG_SIZE, MSG_SIZE, &s->msgs[slot]);
    if (ret != 0)
        return ex_report("rpma_srq_recv", ret);
    return 0;
}

/* Everything the clients will share: the SRQ with its receive CQ and buffers, and the cfg. */
static int setup(struct server *s) {
    s->msgs = ex_alloc_aligned(2 * s->expected * MSG_SIZE);
    if (s->msgs == NULL)
        return -1;
    int ret = rpma_mr_reg(s->peer, s->msgs, 2 * s->expected * MSG_SIZE,
                          RPMA_MR_USAGE_RECV | RPMA_MR_USAGE_SEND, &s->mr);
    if (ret != 0)
        return ex_report("rpma_mr_reg", ret);

    struct rpma_srq_cfg *srq_cfg = NULL;
    if ((ret = rpma_srq_cfg_new(&srq_cfg)) != 0)
        return ex_report("rpma_srq_cfg_new", ret);
    if ((ret = rpma_srq_cfg_set_rq_size(srq_cfg, s->expected)) != 0)
        ex_report("rpma_srq_cfg_set_rq_size", ret);
    /* > 0: the SRQ gets a receive CQ of its own, where the pings of all clients complete */
    else if ((ret = rpma_srq_cfg_set_rcq_size(srq_cfg, s->expected)) != 0)
        ex_report("rpma_srq_cfg_set_rcq_size", ret);
    else if ((ret = rpma_srq_new(s->peer, srq_cfg, &s->srq)) != 0)
        ex_report("rpma_srq_new", ret);
    (void)rpma_srq_cfg_delete(&srq_cfg);
    if (ret != 0)
        return ret;
    if ((ret = rpma_srq_get_rcq(s->srq, &s->rcq)) != 0)
        return ex_report("rpma_srq_get_rcq", ret);
    if (s->rcq == NULL) {
        fprintf(stderr, "the SRQ has no receive CQ\n");
        return -1;
    }
    for (size_t slot = 0; slot < s->expected; slot++) {
        if ((ret = post_ping_buffer(s, slot)) != 0)
            return ret;
    }

    if ((ret = rpma_conn_cfg_new(&s->cfg)) != 0)
        return ex_report("rpma_conn_cfg_new", ret);
    if ((ret = rpma_conn_cfg_set_srq(s->cfg, s->srq)) != 0)
        return ex_report("rpma_conn_cfg_set_srq", ret);
    return 0;
}

static void client_failed(struct server *s, const struct client *c, const char *why) {
    fprintf(stderr, "server: client %u: %s\n", (unsigned)c->hello.tag, why);
    s->failed++;
}

/* Takes the next request; a client that cannot be served is rejected and counts as gone. */
static void on_endpoint(struct server *s) {
    struct client *c = &s->clients[s->accepted++];
    c->pong = &s->msgs[s->expected + (size_t)(c - s->clients)];
    struct rpma_conn_req *req = NULL;
    int ret = rpma_ep_next_conn_req(s->ep, s->cfg, &req);
    if (ret != 0) {
        ex_report("rpma_ep_next_conn_req", ret);
        s->failed++;
        s->finished++;
        return;
    }
    struct rpma_conn_private_data pdata;
    if ((ret = rpma_conn_req_get_private_data(req, &pdata)) != 0)
        ex_report("rpma_conn_req_get_private_data", ret);
    else
        ret = pp_hello_decode(&pdata, &c->hello);
    if (ret != 0)
        (void)rpma_conn_req_delete(&req); /* rejects it */
    else
        ret = ex_conn_req_connect(&req, NULL, &c->conn);
    if (ret == 0 && (ret = rpma_conn_get_qp_num(c->conn, &c->qp_num)) != 0)
        ex_report("rpma_conn_get_qp_num", ret);
    if (ret == 0 && (ret = rpma_conn_get_cq(c->conn, &c->cq)) != 0)
        ex_report("rpma_conn_get_cq", ret);
    if (ret != 0) {
        if (c->conn != NULL) {
            (void)rpma_conn_disconnect(c->conn);
            (void)rpma_conn_delete(&c->conn);
        }
        s->failed++;
        s->finished++;
        return;
    }
    printf("server: client %u connected, qp %u\n", (unsigned)c->hello.tag, (unsigned)c->qp_num);
}

static struct client *client_of_qp(struct server *s, uint32_t qp_num) {
    for (unsigned i = 0; i < s->accepted; i++) {
        if (s->clients[i].conn != NULL && s->clients[i].qp_num == qp_num)
            return &s->clients[i];
    }
    return NULL;
}

/* Before a client's pong buffer is written again, its previous send must have completed. */
static int finish_sending(struct client *c) {
    if (!c->sending)
        return 0;
    c->sending = false;
    return ex_wait_completion(c->cq, c->pong);
}

static void on_ping(struct server *s, const struct ibv_wc *wc) {
    if (wc->status != IBV_WC_SUCCESS || wc->opcode != IBV_WC_RECV) {
        fprintf(stderr, "server: a receive on qp %u completed as %s: %s\n", (unsigned)wc->qp_num,
                ex_wc_opcode_str(wc->opcode), ibv_wc_status_str(wc->status));
        s->failed++;
        return;
    }
    struct pp_msg *ping = (struct pp_msg *)(uintptr_t)wc->wr_id;
    size_t slot = (size_t)(ping - s->msgs);
    struct client *c = client_of_qp(s, wc->qp_num);
    if (slot >= s->expected || c == NULL) {
        fprintf(stderr, "server: a ping came on qp %u into buffer %zu: no such client or buffer\n",
                (unsigned)wc->qp_num, slot);
        s->failed++;
        return;
    }
    uint32_t seq = c->answered;
    if (wc->byte_len != MSG_SIZE ||
        pp_check_msg("ping", ping, c->hello.tag, seq, pp_ping_value(c->hello.tag, seq)) != 0) {
        client_failed(s, c, "wrong ping");
        return;
    }
    uint64_t value = ping->value;
    if (post_ping_buffer(s, slot) != 0 || finish_sending(c) != 0) {
        client_failed(s, c, "cannot answer");
        return;
    }
    *c->pong = (struct pp_msg){.tag = c->hello.tag, .seq = seq, .value = value + 1};
    int ret = rpma_send(c->conn, s->mr, (size_t)(c->pong - s->msgs) * MSG_SIZE, MSG_SIZE,
                        RPMA_F_COMPLETION_ALWAYS, c->pong);
    if (ret != 0) {
        ex_report("rpma_send", ret);
        client_failed(s, c, "cannot answer");
        return;
    }
    c->sending = true;
    c->answered++;
    s->answered++;
}

static void on_receive_cq(struct server *s) {
    /* acknowledge and re-arm first: completions from now on raise a new event */
    int ret = rpma_cq_wait(s->rcq);
    if (ret != 0 && ret != RPMA_E_NO_COMPLETION) {
        ex_report("rpma_cq_wait", ret);
        s->failed++;
    }
    for (;;) {
        struct ibv_wc wc;
        ret = rpma_cq_get_wc(s->rcq, 1, &wc, NULL);
        if (ret == RPMA_E_NO_COMPLETION)
            return;
        if (ret != 0) {
            ex_report("rpma_cq_get_wc", ret);
            s->failed++;
            return;
        }
        on_ping(s, &wc);
    }
}

static void on_conn_event(struct server *s, struct client *c) {
    enum rpma_conn_event event = RPMA_CONN_UNDEFINED;
    int ret = rpma_conn_next_event(c->conn, &event);
    if (ret == 0 && event == RPMA_CONN_ESTABLISHED)
        return;
    if (ret != 0)
        ex_report("rpma_conn_next_event", ret);
    else if (event != RPMA_CONN_CLOSED)
        fprintf(stderr, "server: client %u: unexpected event %s\n", (unsigned)c->hello.tag,
                rpma_utils_conn_event_2str(event));
    if (ret != 0 || event != RPMA_CONN_CLOSED)
        s->failed++;
    /* the client leaves after the last pong: all its pings have been answered by now */
    if (finish_sending(c) != 0)
        client_failed(s, c, "the last pong failed");
    if (c->answered != c->hello.rounds)
        client_failed(s, c, "left before all rounds were played");
    if ((ret = rpma_conn_disconnect(c->conn)) != 0) {
        ex_report("rpma_conn_disconnect", ret);
        s->failed++;
    }
    if ((ret = rpma_conn_delete(&c->conn)) != 0) {
        ex_report("rpma_conn_delete", ret);
        s->failed++;
    }
    printf("server: client %u gone after %u pings\n", (unsigned)c->hello.tag,
           (unsigned)c->answered);
    s->finished++;
}

/* The poll loop: until every expected client has come and gone. */
static int run(struct server *s) {
    while (s->finished < s->expected) {
        struct pollfd fds[2 + MAX_CLIENTS];
        struct client *owners[2 + MAX_CLIENTS];
        size_t n = 0;
        int ret = rpma_cq_get_fd(s->rcq, &fds[n].fd);
        if (ret != 0)
            return ex_report("rpma_cq_get_fd", ret);
        owners[n++] = NULL;
        bool accepting = s->accepted < s->expected;
        if (accepting) {
            if ((ret = rpma_ep_get_fd(s->ep, &fds[n].fd)) != 0)
                return ex_report("rpma_ep_get_fd", ret);
            owners[n++] = NULL;
        }
        for (unsigned i = 0; i < s->accepted; i++) {
            if (s->clients[i].conn == NULL)
                continue;
            if ((ret = rpma_conn_get_event_fd(s->clients[i].conn, &fds[n].fd)) != 0)
                return ex_report("rpma_conn_get_event_fd", ret);
            owners[n++] = &s->clients[i];
        }
        /* the clients decide how long they play */
        if (ex_poll_readable(fds, n, -1, "clients") != 0)
            return -1;
        /* pings first: a client's CLOSED comes only after its last ping was answered */
        if (fds[0].revents != 0)
            on_receive_cq(s);
        if (accepting && fds[1].revents != 0)
            on_endpoint(s);
        for (size_t i = accepting ? 2 : 1; i < n; i++) {
            if (fds[i].revents != 0)
                on_conn_event(s, owners[i]);
        }
    }
    return 0;
}

static int teardown(struct server *s, int ret) {
    for (unsigned i = 0; i < s->accepted; i++) {
        struct client *c = &s->clients[i];
        if (c->conn != NULL) {
            (void)rpma_conn_disconnect(c->conn);
            (void)rpma_conn_delete(&c->conn);
        }
    }
    (void)rpma_conn_cfg_delete(&s->cfg);
    int del = rpma_srq_delete(&s->srq); /* after the connections using it */
    if (del != 0 && ret == 0)
        ret = ex_report("rpma_srq_delete", del);
    ret = ex_mr_dereg(ret, &s->mr);
    free(s->msgs);
    return ex_release(ret, &s->ep, &s->peer);
}

int main(int argc, char *argv[]) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s <addr> <port> <clients>\n", argv[0]);
        return EXIT_FAILURE;
    }
    const char *addr = argv[1];
    const char *port = argv[2];
    int clients = atoi(argv[3]);
    if (clients < 1 || clients > MAX_CLIENTS) {
        fprintf(stderr, "clients must be 1..%d\n", MAX_CLIENTS);
        return EXIT_FAILURE;
    }

    struct server s = {.expected = (unsigned)clients};
    int ret = ex_peer_new(addr, RPMA_UTIL_IBV_CONTEXT_LOCAL, &s.peer);
    if (ret != 0)
        return EXIT_FAILURE;
    if ((ret = setup(&s)) != 0)
        return teardown(&s, ret);
    if ((ret = rpma_ep_listen(s.peer, addr, port, &s.ep)) != 0)
        return teardown(&s, ex_report("rpma_ep_listen", ret));
    ex_announce_ready();

    ret = run(&s);
    if (ret == 0 && s.failed == 0)
        printf(
            "server: %u clients served through one shared receive queue, %llu pings "
            "answered\n",
            s.expected, s.answered);
    else
        fprintf(stderr, "server: %u failures\n", s.failed);
    return teardown(&s, ret != 0 ? ret : (s.failed == 0 ? 0 : -1));
}
