/*
 * client.c -- read-to-persistent example, client: maps a file as persistent memory with
 * libpmem2, reads the server's region straight into the mapping, persists it, and checks the
 * file's content through the file system.
 *
 * usage: client <addr> <port> <file>
 */
#include <stdio.h>
#include <stdlib.h>

#include "examples/02-read-volatile/protocol.h"
#include "examples/common/example_conn.h"
#include "examples/common/pmem_file.h"

/* Reads the whole remote region into dst and waits for the completion. */
static int read_region(struct rpma_conn *conn, struct rpma_mr_local *dst) {
    struct rpma_mr_remote *src = NULL;
    int ret = ex_descriptors_unpack(conn, &src, NULL);
    if (ret != 0)
        return ret;
    size_t size = 0;
    if ((ret = rpma_mr_remote_get_size(src, &size)) != 0)
        ex_report("rpma_mr_remote_get_size", ret);
    if (ret == 0 && size != REGION_SIZE) {
        fprintf(stderr, "the server's region has %zu bytes, expected %d\n", size, REGION_SIZE);
        ret = -1;
    }
    struct rpma_cq *cq = NULL;
    if (ret == 0 && (ret = rpma_conn_get_cq(conn, &cq)) != 0)
        ex_report("rpma_conn_get_cq", ret);
    if (ret == 0 &&
        (ret = rpma_read(conn, dst, 0, src, 0, REGION_SIZE, RPMA_F_COMPLETION_ALWAYS, dst)) != 0)
        ex_report("rpma_read", ret);
    if (ret == 0)
        ret = ex_wait_completion(cq, dst);
    (void)rpma_mr_remote_delete(&src);
    return ret;
}

int main(int argc, char *argv[]) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s <addr> <port> <file>\n", argv[0]);
        return EXIT_FAILURE;
    }
    const char *addr = argv[1];
    const char *port = argv[2];
    const char *path = argv[3];

    struct ex_pmem_file file;
    if (ex_pmem_file_map(path, REGION_SIZE, &file) != 0)
        return EXIT_FAILURE;

    struct rpma_peer *peer = NULL;
    struct rpma_mr_local *dst = NULL;
    struct rpma_conn *conn = NULL;
    int ret = ex_peer_new(addr, RPMA_UTIL_IBV_CONTEXT_REMOTE, &peer);
    if (ret != 0)
        goto out;
    ret = rpma_mr_reg(peer, file.addr, REGION_SIZE, RPMA_MR_USAGE_READ_DST, &dst);
    if (ret != 0) {
        ex_report("rpma_mr_reg", ret);
        goto out;
    }
    ret = ex_client_connect(peer, addr, port, NULL, NULL, &conn);
    if (ret != 0)
        goto out;

    ret = read_region(conn, dst);
    /* the read's completion means the bytes are in memory; persisting them is our job */
    if (ret == 0)
        file.persist(file.addr, REGION_SIZE);

    int closed = ex_disconnect(&conn);
    if (ret == 0)
        ret = closed;
out:
    ret = ex_mr_dereg(ret, &dst);
    if (ex_pmem_file_unmap(&file) != 0 && ret == 0)
        ret = -1;

    /* what the file holds now, read back through the file system */
    if (ret == 0) {
        uint8_t *check = ex_alloc_aligned(REGION_SIZE);
        ret = check == NULL ? -1 : ex_file_pread(path, 0, check, REGION_SIZE);
        if (ret == 0)
            ret = check_content(check, REGION_SIZE);
        if (ret == 0)
            printf("client: %s holds the %d bytes read: \"%s\" and the expected pattern\n", path,
                   REGION_SIZE, (const char *)check);
        free(check);
    }
    return ex_release(ret, NULL, &peer);
}
