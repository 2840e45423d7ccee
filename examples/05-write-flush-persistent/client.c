/*
 * client.c -- write-flush-persistent example, client: applies the server's peer
 * configuration, writes the whole remote region and flushes it to persistence. Once the
 * flush has completed the data is durable on the server, so the client just disconnects.
 *
 * usage: client <addr> <port>
 */
#include <stdio.h>
#include <stdlib.h>

#include "examples/05-write-flush-persistent/protocol.h"
#include "examples/common/example_conn.h"

static int write_persistent(struct rpma_conn *conn, struct rpma_mr_local *src) {
    struct rpma_mr_remote *dst = NULL;
    struct rpma_peer_cfg *pcfg = NULL;
    struct rpma_cq *cq = NULL;
    int ret = ex_descriptors_unpack(conn, &dst, &pcfg);
    if (ret != 0)
        return ret;
    /* without the server's word, a persistent flush is refused (RPMA_E_NOSUPP) */
    if ((ret = rpma_conn_apply_remote_peer_cfg(conn, pcfg)) != 0) {
        ex_report("rpma_conn_apply_remote_peer_cfg", ret);
        goto out;
    }
    if ((ret = rpma_conn_get_cq(conn, &cq)) != 0) {
        ex_report("rpma_conn_get_cq", ret);
        goto out;
    }
    /* only the flush reports success: the write needs no completion of its own */
    if ((ret = rpma_write(conn, dst, 0, src, 0, PMEM_REGION_SIZE, RPMA_F_COMPLETION_ON_ERROR,
                          NULL)) != 0) {
        ex_report("rpma_write", ret);
        goto out;
    }
    static const char flush_op[] = "flush";
    if ((ret = rpma_flush(conn, dst, 0, PMEM_REGION_SIZE, RPMA_FLUSH_TYPE_PERSISTENT,
                          RPMA_F_COMPLETION_ALWAYS, flush_op)) != 0) {
        ex_report("rpma_flush", ret);
        goto out;
    }
    ret = ex_wait_completion(cq, flush_op);
out:
    (void)rpma_peer_cfg_delete(&pcfg);
    (void)rpma_mr_remote_delete(&dst);
    return ret;
}

int main(int argc, char *argv[]) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s <addr> <port>\n", argv[0]);
        return EXIT_FAILURE;
    }
    const char *addr = argv[1];
    const char *port = argv[2];

    uint8_t *buf = ex_alloc_aligned(PMEM_REGION_SIZE);
    if (buf == NULL)
        return EXIT_FAILURE;
    for (size_t i = 0; i < PMEM_REGION_SIZE; i++)
        buf[i] = stored_byte(i);

    struct rpma_peer *peer = NULL;
    struct rpma_mr_local *src = NULL;
    struct rpma_conn *conn = NULL;
    int ret = ex_peer_new(addr, RPMA_UTIL_IBV_CONTEXT_REMOTE, &peer);
    if (ret != 0)
        goto out;
    ret = rpma_mr_reg(peer, buf, PMEM_REGION_SIZE, RPMA_MR_USAGE_WRITE_SRC, &src);
    if (ret != 0) {
        ex_report("rpma_mr_reg", ret);
        goto out;
    }
    if ((ret = ex_client_connect(peer, addr, port, NULL, NULL, &conn)) != 0)
        goto out;

    ret = write_persistent(conn, src);
    if (ret == 0)
        printf("client: %d bytes written and flushed to persistence\n", PMEM_REGION_SIZE);
    int closed = ex_disconnect(&conn);
    if (ret == 0)
        ret = closed;
out:
    ret = ex_mr_dereg(ret, &src);
    ret = ex_release(ret, NULL, &peer);
    free(buf);
    return ret;
}
