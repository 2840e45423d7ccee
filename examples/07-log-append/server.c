/*
 * server.c -- log-append example, server: keeps a log in a file mapped as persistent memory
 * and lets clients, one after the other, append to it with one-sided writes. It checks the
 * log when it starts and again, through the file system, after the last client has left.
 *
 * usage: server <addr> <port> <file> <clients>
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "examples/07-log-append/protocol.h"
#include "examples/common/example_conn.h"
#include "examples/common/pmem_file.h"

/* Serves `clients` clients, one at a time. */
static int serve(const char *addr, const char *port, int clients, struct ex_pmem_file *log) {
    struct rpma_peer *peer = NULL;
    struct rpma_peer_cfg *pcfg = NULL;
    struct rpma_ep *ep = NULL;
    struct rpma_mr_local *mr = NULL;
    int ret = ex_peer_new(addr, RPMA_UTIL_IBV_CONTEXT_LOCAL, &peer);
    if (ret != 0)
        return ret;
    if ((ret = ex_pmem_peer_cfg_new(&pcfg)) != 0)
        goto out;
    ret = rpma_mr_reg(
        peer, log->addr, LOG_SIZE,
        RPMA_MR_USAGE_READ_SRC | RPMA_MR_USAGE_WRITE_DST | RPMA_MR_USAGE_FLUSH_TYPE_PERSISTENT,
        &mr);
    if (ret != 0) {
        ex_report("rpma_mr_reg", ret);
        goto out;
    }
    struct ex_descriptors desc;
    struct rpma_conn_private_data pdata;
    if ((ret = ex_descriptors_pack(mr, pcfg, &desc, &pdata)) != 0)
        goto out;

    ret = rpma_ep_listen(peer, addr, port, &ep);
    if (ret != 0) {
        ex_report("rpma_ep_listen", ret);
        goto out;
    }
    ex_announce_ready();
    for (int i = 0; ret == 0 && i < clients; i++) {
        struct rpma_conn *conn = NULL;
        ret = ex_server_accept(ep, NULL, &pdata, &conn);
        if (ret == 0)
            ret = ex_wait_closed(&conn);
        if (ret == 0)
            printf("server: client %d done\n", i + 1);
    }
out:
    ret = ex_mr_dereg(ret, &mr);
    (void)rpma_peer_cfg_delete(&pcfg);
    return ex_release(ret, &ep, &peer);
}

int main(int argc, char *argv[]) {
    if (argc != 5) {
        fprintf(stderr, "usage: %s <addr> <port> <file> <clients>\n", argv[0]);
        return EXIT_FAILURE;
    }
    const char *path = argv[3];
    int clients = atoi(argv[4]);
    if (clients < 1) {
        fprintf(stderr, "clients must be at least 1\n");
        return EXIT_FAILURE;
    }

    /* a new file is all zeros: an empty log */
    struct ex_pmem_file log;
    if (ex_pmem_file_map(path, LOG_SIZE, &log) != 0)
        return EXIT_FAILURE;
    uint64_t records = 0;
    int ret = check_log((const uint8_t *)log.addr, &records);
    if (ret == 0) {
        printf("server: the log has %llu records\n", (unsigned long long)records);
        ret = serve(argv[1], argv[2], clients, &log);
    }
    if (ex_pmem_file_unmap(&log) != 0)
        ret = -1;
    if (ret != 0)
        return EXIT_FAILURE;

    uint8_t *copy = ex_alloc_aligned(LOG_SIZE);
    ret = copy == NULL ? -1 : ex_file_pread(path, 0, copy, LOG_SIZE);
    if (ret == 0)
        ret = check_log(copy, &records);
    if (ret == 0)
        printf("server: log verified: %llu records\n", (unsigned long long)records);
    free(copy);
    return ret == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
