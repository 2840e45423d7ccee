/*
 * client.c -- send-with-imm example, client: posts all its messages back to back with
 * rpma_send_with_imm() -- SWI_MESSAGES with a payload, then one of zero bytes (src NULL) whose
 * immediate value is the whole message -- and waits for all their completions.
 *
 * usage: client <addr> <port>
 */
#include <stdio.h>
#include <stdlib.h>

#include "examples/12-send-with-imm/protocol.h"
#include "examples/common/completions.h"
#include "examples/common/example_conn.h"

static int send_all(struct rpma_conn *conn, struct rpma_mr_local *mr, char *texts) {
    static const char no_payload_op[] = "no payload";
    struct ex_awaited sends[SWI_MESSAGES + 1];
    int ret = 0;
    for (uint32_t k = 0; ret == 0 && k < SWI_MESSAGES; k++) {
        char *text = texts + k * SWI_TEXT_SIZE;
        swi_text(k, text);
        sends[k] = (struct ex_awaited){.op = text, .opcode = IBV_WC_SEND};
        ret = rpma_send_with_imm(conn, mr, k * SWI_TEXT_SIZE, SWI_TEXT_SIZE,
                                 RPMA_F_COMPLETION_ALWAYS, swi_imm(k), text);
    }
    if (ret == 0) {
        sends[SWI_MESSAGES] = (struct ex_awaited){.op = no_payload_op, .opcode = IBV_WC_SEND};
        ret = rpma_send_with_imm(conn, NULL, 0, 0, RPMA_F_COMPLETION_ALWAYS, SWI_IMM_NO_PAYLOAD,
                                 no_payload_op);
    }
    if (ret != 0)
        return ex_report("rpma_send_with_imm", ret);
    struct ex_completions comps;
    if ((ret = ex_completions_init(conn, &comps)) != 0)
        return ret;
    return ex_completions_await(&comps, sends, SWI_MESSAGES + 1);
}

int main(int argc, char *argv[]) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s <addr> <port>\n", argv[0]);
        return EXIT_FAILURE;
    }
    const char *addr = argv[1];
    const char *port = argv[2];

    char *texts = ex_alloc_aligned(SWI_MESSAGES * SWI_TEXT_SIZE);
    if (texts == NULL)
        return EXIT_FAILURE;
    struct rpma_peer *peer = NULL;
    struct rpma_mr_local *mr = NULL;
    struct rpma_conn *conn = NULL;
    int ret = ex_peer_new(addr, RPMA_UTIL_IBV_CONTEXT_REMOTE, &peer);
    if (ret != 0)
        goto out;
    if ((ret = rpma_mr_reg(peer, texts, SWI_MESSAGES * SWI_TEXT_SIZE, RPMA_MR_USAGE_SEND, &mr)) !=
        0) {
        ex_report("rpma_mr_reg", ret);
        goto out;
    }
    if ((ret = ex_client_connect(peer, addr, port, NULL, NULL, &conn)) != 0)
        goto out;
    ret = send_all(conn, mr, texts);
    if (ret == 0)
        printf("client: %d messages sent with immediate data\n", SWI_MESSAGES + 1);
    int closed = ex_disconnect(&conn);
    if (ret == 0)
        ret = closed;
out:
    ret = ex_mr_dereg(ret, &mr);
    ret = ex_release(ret, NULL, &peer);
    free(texts);
    return ret;
}
