/*
 * server.c -- send-with-imm example, server: posts a receive for every message the client will
 * send before accepting it (rpma_conn_req_recv()), then checks each message: its completion
 * must have IBV_WC_WITH_IMM set, ntohl(wc.imm_data) must name it, and its payload must match.
 * Posted receives form an unordered pool, so a message is known by its immediate value, not by
 * the buffer it landed in.
 *
 * usage: server <addr> <port>
 */
#include <arpa/inet.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "examples/12-send-with-imm/protocol.h"
#include "examples/common/completions.h"
#include "examples/common/example_conn.h"

#define BUFFERS (SWI_MESSAGES + 1)

/* Checks one received message; seen[k] / *seen_no_payload record what has come. */
static int check_message(const struct ibv_wc *wc, const char *buf, bool seen[SWI_MESSAGES],
                         bool *seen_no_payload) {
    if (!(wc->wc_flags & IBV_WC_WITH_IMM)) {
        fprintf(stderr, "server: a message of %u bytes came without immediate data\n",
                (unsigned)wc->byte_len);
        return -1;
    }
    uint32_t imm = ntohl(wc->imm_data);
    if (imm == SWI_IMM_NO_PAYLOAD && wc->byte_len == 0 && !*seen_no_payload) {
        *seen_no_payload = true;
        printf("server: immediate %#x, no payload\n", (unsigned)imm);
        return 0;
    }
    uint32_t k = imm & 0xFFFFu;
    char expected[SWI_TEXT_SIZE] = {0};
    if (k < SWI_MESSAGES && imm == swi_imm(k) && !seen[k]) {
        swi_text(k, expected);
        if (wc->byte_len == SWI_TEXT_SIZE && memcmp(buf, expected, SWI_TEXT_SIZE) == 0) {
            seen[k] = true;
            printf("server: immediate %#x, payload \"%s\"\n", (unsigned)imm, buf);
            return 0;
        }
    }
    fprintf(stderr, "server: unexpected message: immediate %#x (raw %#x), %u bytes\n",
            (unsigned)imm, (unsigned)wc->imm_data, (unsigned)wc->byte_len);
    return -1;
}

static int receive_all(struct rpma_ep *ep, struct rpma_mr_local *mr, char *bufs) {
    struct rpma_conn_req *req = NULL;
    struct rpma_conn *conn = NULL;
    int ret = rpma_ep_next_conn_req(ep, NULL, &req);
    if (ret != 0)
        return ex_report("rpma_ep_next_conn_req", ret);
    struct ex_awaited receives[BUFFERS];
    for (size_t i = 0; i < BUFFERS; i++) {
        char *buf = bufs + i * SWI_TEXT_SIZE;
        receives[i] = (struct ex_awaited){.op = buf, .opcode = IBV_WC_RECV};
        if ((ret = rpma_conn_req_recv(req, mr, i * SWI_TEXT_SIZE, SWI_TEXT_SIZE, buf)) != 0) {
            (void)rpma_conn_req_delete(&req);
            return ex_report("rpma_conn_req_recv", ret);
        }
    }
    if ((ret = ex_conn_req_connect(&req, NULL, &conn)) != 0)
        return ret;

    struct ex_completions comps;
    ret = ex_completions_init(conn, &comps);
    if (ret == 0)
        ret = ex_completions_await(&comps, receives, BUFFERS);
    bool seen[SWI_MESSAGES] = {false};
    bool seen_no_payload = false;
    for (size_t i = 0; ret == 0 && i < BUFFERS; i++)
        ret = check_message(&receives[i].wc, receives[i].op, seen, &seen_no_payload);
    int closed = ex_wait_closed(&conn);
    return ret != 0 ? ret : closed;
}

int main(int argc, char *argv[]) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s <addr> <port>\n", argv[0]);
        return EXIT_FAILURE;
    }
    const char *addr = argv[1];
    const char *port = argv[2];

    char *bufs = ex_alloc_aligned(BUFFERS * SWI_TEXT_SIZE);
    if (bufs == NULL)
        return EXIT_FAILURE;
    struct rpma_peer *peer = NULL;
    struct rpma_mr_local *mr = NULL;
    struct rpma_ep *ep = NULL;
    int ret = ex_peer_new(addr, RPMA_UTIL_IBV_CONTEXT_LOCAL, &peer);
    if (ret != 0)
        goto out;
    if ((ret = rpma_mr_reg(peer, bufs, BUFFERS * SWI_TEXT_SIZE, RPMA_MR_USAGE_RECV, &mr)) != 0) {
        ex_report("rpma_mr_reg", ret);
        goto out;
    }
    if ((ret = rpma_ep_listen(peer, addr, port, &ep)) != 0) {
        ex_report("rpma_ep_listen", ret);
        goto out;
    }
    ex_announce_ready();
    ret = receive_all(ep, mr, bufs);
    if (ret == 0)
        printf("server: %d messages with immediate data verified, %d of them without payload\n",
               BUFFERS, BUFFERS - SWI_MESSAGES);
out:
    ret = ex_mr_dereg(ret, &mr);
    ret = ex_release(ret, &ep, &peer);
    free(bufs);
    return ret;
}
