/*
 * client.c -- read-volatile example, client: reads the server's whole region into local DRAM
 * with one rpma_read() and checks what arrived.
 *
 * usage: client <addr> <port>
 */
#include <stdio.h>
#include <stdlib.h>

#include "examples/02-read-volatile/protocol.h"
#include "examples/common/example_conn.h"

int main(int argc, char *argv[]) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s <addr> <port>\n", argv[0]);
        return EXIT_FAILURE;
    }
    const char *addr = argv[1];
    const char *port = argv[2];

    uint8_t *local = ex_alloc_aligned(REGION_SIZE);
    if (local == NULL)
        return EXIT_FAILURE;

    struct rpma_peer *peer = NULL;
    struct rpma_mr_local *dst = NULL;
    struct rpma_mr_remote *src = NULL;
    struct rpma_conn *conn = NULL;
    int ret = ex_peer_new(addr, RPMA_UTIL_IBV_CONTEXT_REMOTE, &peer);
    if (ret != 0)
        goto out;
    ret = rpma_mr_reg(peer, local, REGION_SIZE, RPMA_MR_USAGE_READ_DST, &dst);
    if (ret != 0) {
        ex_report("rpma_mr_reg", ret);
        goto out;
    }
    ret = ex_client_connect(peer, addr, port, NULL, NULL, &conn);
    if (ret != 0)
        goto out;

    ret = ex_descriptors_unpack(conn, &src, NULL);
    size_t size = 0;
    if (ret == 0 && (ret = rpma_mr_remote_get_size(src, &size)) != 0)
        ex_report("rpma_mr_remote_get_size", ret);
    if (ret == 0 && size != REGION_SIZE) {
        fprintf(stderr, "the server's region has %zu bytes, expected %d\n", size, REGION_SIZE);
        ret = -1;
    }

    struct rpma_cq *cq = NULL;
    if (ret == 0 && (ret = rpma_conn_get_cq(conn, &cq)) != 0)
        ex_report("rpma_conn_get_cq", ret);
    if (ret == 0) {
        ret = rpma_read(conn, dst, 0, src, 0, REGION_SIZE, RPMA_F_COMPLETION_ALWAYS, local);
        if (ret != 0)
            ex_report("rpma_read", ret);
        else
            ret = ex_wait_completion(cq, local);
    }
    if (ret == 0)
        ret = check_content(local, REGION_SIZE);
    if (ret == 0)
        printf("client: read %d bytes: \"%s\" and the expected pattern\n", REGION_SIZE,
               (const char *)local);

    if (src != NULL)
        (void)rpma_mr_remote_delete(&src);
    int closed = ex_disconnect(&conn);
    if (ret == 0)
        ret = closed;
out:
    ret = ex_mr_dereg(ret, &dst);
    ret = ex_release(ret, NULL, &peer);
    free(local);
    return ret;
}
