/*
 * client.c -- write-read example, client: writes a buffer into the middle of the server's
 * region, reads the whole region back and checks it: the written bytes where they were
 * written, the untouched zeros everywhere else.
 *
 * usage: client <addr> <port>
 */
#include <stdio.h>
#include <stdlib.h>

#include "examples/04-write-read/protocol.h"
#include "examples/common/example_conn.h"

/* local layout: the bytes to write, then room for the whole region read back */
#define SRC_OFFSET 0
#define DST_OFFSET WRITE_LEN
#define LOCAL_SIZE (WRITE_LEN + REGION_SIZE)

static int write_then_read(struct rpma_conn *conn, struct rpma_mr_local *local) {
    struct rpma_mr_remote *remote = NULL;
    struct rpma_cq *cq = NULL;
    int ret = ex_descriptors_unpack(conn, &remote, NULL);
    if (ret != 0)
        return ret;
    if ((ret = rpma_conn_get_cq(conn, &cq)) != 0) {
        ex_report("rpma_conn_get_cq", ret);
        goto out;
    }

    static const char write_op[] = "write";
    ret = rpma_write(conn, remote, WRITE_OFFSET, local, SRC_OFFSET, WRITE_LEN,
                     RPMA_F_COMPLETION_ALWAYS, write_op);
    if (ret != 0) {
        ex_report("rpma_write", ret);
        goto out;
    }
    if ((ret = ex_wait_completion(cq, write_op)) != 0)
        goto out;

    /* a read posted after a write on the same connection sees the written bytes */
    static const char read_op[] = "read";
    ret = rpma_read(conn, local, DST_OFFSET, remote, 0, REGION_SIZE, RPMA_F_COMPLETION_ALWAYS,
                    read_op);
    if (ret != 0) {
        ex_report("rpma_read", ret);
        goto out;
    }
    ret = ex_wait_completion(cq, read_op);
out:
    (void)rpma_mr_remote_delete(&remote);
    return ret;
}

int main(int argc, char *argv[]) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s <addr> <port>\n", argv[0]);
        return EXIT_FAILURE;
    }
    const char *addr = argv[1];
    const char *port = argv[2];

    uint8_t *buf = ex_alloc_aligned(LOCAL_SIZE);
    if (buf == NULL)
        return EXIT_FAILURE;
    for (size_t i = 0; i < WRITE_LEN; i++)
        buf[SRC_OFFSET + i] = written_byte(i);

    struct rpma_peer *peer = NULL;
    struct rpma_mr_local *local = NULL;
    struct rpma_conn *conn = NULL;
    int ret = ex_peer_new(addr, RPMA_UTIL_IBV_CONTEXT_REMOTE, &peer);
    if (ret != 0)
        goto out;
    ret = rpma_mr_reg(peer, buf, LOCAL_SIZE, RPMA_MR_USAGE_WRITE_SRC | RPMA_MR_USAGE_READ_DST,
                      &local);
    if (ret != 0) {
        ex_report("rpma_mr_reg", ret);
        goto out;
    }
    ret = ex_client_connect(peer, addr, port, NULL, NULL, &conn);
    if (ret != 0)
        goto out;

    ret = write_then_read(conn, local);
    if (ret == 0)
        ret = check_region(buf + DST_OFFSET, "client");
    if (ret == 0)
        printf("client: wrote %d bytes at offset %d and read them back\n", WRITE_LEN, WRITE_OFFSET);

    int closed = ex_disconnect(&conn);
    if (ret == 0)
        ret = closed;
out:
    ret = ex_mr_dereg(ret, &local);
    ret = ex_release(ret, NULL, &peer);
    free(buf);
    return ret;
}
