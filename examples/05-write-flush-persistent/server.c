/*
 * server.c -- write-flush-persistent example, server: maps a file as persistent memory,
 * declares direct write to PMem in its peer configuration, sends the peer configuration and
 * region descriptors as private data, and after the client has disconnected checks the
 * file's content through the file system.
 *
 * usage: server <addr> <port> <file>
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "examples/05-write-flush-persistent/protocol.h"
#include "examples/common/example_conn.h"
#include "examples/common/pmem_file.h"

/* Serves one client; returns once it has disconnected. */
static int serve(const char *addr, const char *port, struct ex_pmem_file *file) {
    struct rpma_peer *peer = NULL;
    struct rpma_peer_cfg *pcfg = NULL;
    struct rpma_ep *ep = NULL;
    struct rpma_mr_local *mr = NULL;
    struct rpma_conn *conn = NULL;
    int ret = ex_peer_new(addr, RPMA_UTIL_IBV_CONTEXT_LOCAL, &peer);
    if (ret != 0)
        return ret;
    if ((ret = ex_pmem_peer_cfg_new(&pcfg)) != 0)
        goto out;
    ret = rpma_mr_reg(peer, file->addr, PMEM_REGION_SIZE,
                      RPMA_MR_USAGE_WRITE_DST | RPMA_MR_USAGE_FLUSH_TYPE_PERSISTENT, &mr);
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
    ret = ex_server_accept(ep, NULL, &pdata, &conn);
    if (ret == 0)
        ret = ex_wait_closed(&conn);
out:
    ret = ex_mr_dereg(ret, &mr);
    (void)rpma_peer_cfg_delete(&pcfg);
    return ex_release(ret, &ep, &peer);
}

int main(int argc, char *argv[]) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s <addr> <port> <file>\n", argv[0]);
        return EXIT_FAILURE;
    }
    const char *path = argv[3];

    struct ex_pmem_file file;
    if (ex_pmem_file_map(path, PMEM_REGION_SIZE, &file) != 0)
        return EXIT_FAILURE;
    /* start from a known state, so that the check below proves the client's work */
    memset(file.addr, 0, PMEM_REGION_SIZE);
    file.persist(file.addr, PMEM_REGION_SIZE);

    int ret = serve(argv[1], argv[2], &file);
    if (ex_pmem_file_unmap(&file) != 0)
        ret = -1;
    if (ret != 0)
        return EXIT_FAILURE;

    /* the client's flush made the bytes durable: they are in the file */
    uint8_t *check = ex_alloc_aligned(PMEM_REGION_SIZE);
    ret = check == NULL ? -1 : ex_file_pread(path, 0, check, PMEM_REGION_SIZE);
    if (ret == 0)
        ret = check_stored(check);
    if (ret == 0)
        printf("server: %s holds the client's %d bytes: \"%s\" and the expected pattern\n", path,
               PMEM_REGION_SIZE, (const char *)check);
    free(check);
    return ret == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
