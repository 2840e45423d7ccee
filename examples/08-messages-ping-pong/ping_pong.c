/*
 * ping_pong.c -- both halves of the ping-pong conversation (see ping_pong.h)
 */
#include "examples/08-messages-ping-pong/ping_pong.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "examples/common/example_conn.h"

#define MSG_SIZE sizeof(struct pp_msg)
#define IN_OFFSET 0
#define OUT_OFFSET MSG_SIZE

int pp_buffers_new(struct rpma_peer *peer, struct pp_buffers *bufs) {
    memset(bufs, 0, sizeof(*bufs));
    bufs->in = ex_alloc_aligned(2 * MSG_SIZE);
    if (bufs->in == NULL)
        return -1;
    bufs->out = bufs->in + 1;
    int ret = rpma_mr_reg(peer, bufs->in, 2 * MSG_SIZE, RPMA_MR_USAGE_SEND | RPMA_MR_USAGE_RECV,
                          &bufs->mr);
    if (ret != 0) {
        free(bufs->in);
        bufs->in = NULL;
        return ex_report("rpma_mr_reg", ret);
    }
    return 0;
}

int pp_buffers_delete(int ret, struct pp_buffers *bufs) {
    ret = ex_mr_dereg(ret, &bufs->mr);
    free(bufs->in);
    bufs->in = NULL;
    bufs->out = NULL;
    return ret;
}

int pp_hello_decode(const struct rpma_conn_private_data *pdata, struct pp_hello *hello) {
    if (ex_private_data_check(pdata, sizeof(*hello), "a client's hello") != 0)
        return -1;
    memcpy(hello, pdata->ptr, sizeof(*hello));
    if (hello->rounds < 1 || hello->rounds > PP_MAX_ROUNDS) {
        fprintf(stderr, "a client asked for %u rounds (1..%d)\n", (unsigned)hello->rounds,
                PP_MAX_ROUNDS);
        return -1;
    }
    return 0;
}

/* Checks that a completed receive delivered exactly one message. */
static int check_length(const struct ibv_wc *wc) {
    if (wc->byte_len != MSG_SIZE) {
        fprintf(stderr, "received %u bytes, expected a %zu-byte message\n", (unsigned)wc->byte_len,
                MSG_SIZE);
        return -1;
    }
    return 0;
}

int pp_client_play(struct ex_completions *comps, struct pp_buffers *bufs,
                   const struct pp_hello *hello) {
    uint64_t value = pp_ping_value(hello->tag, 0);
    for (uint32_t seq = 0; seq < hello->rounds; seq++) {
        *bufs->out = (struct pp_msg){.tag = hello->tag, .seq = seq, .value = value};
        /* first the buffer for the pong: the server answers as soon as the ping is there */
        int ret = rpma_recv(comps->conn, bufs->mr, IN_OFFSET, MSG_SIZE, bufs->in);
        if (ret != 0)
            return ex_report("rpma_recv", ret);
        ret = rpma_send(comps->conn, bufs->mr, OUT_OFFSET, MSG_SIZE, RPMA_F_COMPLETION_ALWAYS,
                        bufs->out);
        if (ret != 0)
            return ex_report("rpma_send", ret);
        struct ex_awaited round[] = {
            {.op = bufs->out, .opcode = IBV_WC_SEND},
            {.op = bufs->in, .opcode = IBV_WC_RECV},
        };
        if ((ret = ex_completions_await(comps, round, 2)) != 0)
            return ret;
        if ((ret = check_length(&round[1].wc)) != 0 ||
            (ret = pp_check_msg("pong", bufs->in, hello->tag, seq, value + 1)) != 0)
            return ret;
        value = bufs->in->value;
    }
    return 0;
}

int pp_server_accept(struct rpma_ep *ep, const struct rpma_conn_cfg *cfg, struct pp_buffers *bufs,
                     struct pp_hello *hello, struct rpma_conn **conn_ptr) {
    struct rpma_conn_req *req = NULL;
    int ret = rpma_ep_next_conn_req(ep, cfg, &req);
    if (ret != 0)
        return ex_report("rpma_ep_next_conn_req", ret);
    struct rpma_conn_private_data pdata;
    ret = rpma_conn_req_get_private_data(req, &pdata);
    if (ret != 0)
        ex_report("rpma_conn_req_get_private_data", ret);
    else
        ret = pp_hello_decode(&pdata, hello);
    if (ret == 0 && (ret = rpma_conn_req_recv(req, bufs->mr, IN_OFFSET, MSG_SIZE, bufs->in)) != 0)
        ex_report("rpma_conn_req_recv", ret);
    if (ret != 0) {
        (void)rpma_conn_req_delete(&req); /* rejects the client */
        return ret;
    }
    return ex_conn_req_connect(&req, NULL, conn_ptr);
}

int pp_server_play(struct ex_completions *comps, struct pp_buffers *bufs,
                   const struct pp_hello *hello) {
    const void *sending = NULL; /* the pong whose send has not completed yet */
    for (uint32_t seq = 0; seq < hello->rounds; seq++) {
        /* the out buffer is written again only after its previous send completed */
        struct ex_awaited wait[] = {
            {.op = bufs->in, .opcode = IBV_WC_RECV},
            {.op = sending, .opcode = IBV_WC_SEND},
        };
        int ret = ex_completions_await(comps, wait, 2);
        if (ret != 0)
            return ret;
        uint64_t value = pp_ping_value(hello->tag, seq);
        if ((ret = check_length(&wait[0].wc)) != 0 ||
            (ret = pp_check_msg("ping", bufs->in, hello->tag, seq, value)) != 0)
            return ret;
        if (seq + 1 < hello->rounds &&
            (ret = rpma_recv(comps->conn, bufs->mr, IN_OFFSET, MSG_SIZE, bufs->in)) != 0)
            return ex_report("rpma_recv", ret);
        *bufs->out = (struct pp_msg){.tag = hello->tag, .seq = seq, .value = value + 1};
        ret = rpma_send(comps->conn, bufs->mr, OUT_OFFSET, MSG_SIZE, RPMA_F_COMPLETION_ALWAYS,
                        bufs->out);
        if (ret != 0)
            return ex_report("rpma_send", ret);
        sending = bufs->out;
    }
    struct ex_awaited last = {.op = sending, .opcode = IBV_WC_SEND};
    return ex_completions_await(comps, &last, 1);
}
