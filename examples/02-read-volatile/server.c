/*
 * server.c -- read-volatile example, server: fills a DRAM region, registers it as a read
 * source, sends its descriptor as private data and waits for the client to disconnect. Its
 * CPU takes no part in the client's read.
 *
 * usage: server <addr> <port>
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

    uint8_t *region = ex_alloc_aligned(REGION_SIZE);
    if (region == NULL)
        return EXIT_FAILURE;
    fill_content(region, REGION_SIZE);

    struct rpma_peer *peer = NULL;
    struct rpma_ep *ep = NULL;
    struct rpma_mr_local *mr = NULL;
    struct rpma_conn *conn = NULL;
    int ret = ex_peer_new(addr, RPMA_UTIL_IBV_CONTEXT_LOCAL, &peer);
    if (ret != 0)
        goto out;
    ret = rpma_mr_reg(peer, region, REGION_SIZE, RPMA_MR_USAGE_READ_SRC, &mr);
    if (ret != 0) {
        ex_report("rpma_mr_reg", ret);
        goto out;
    }
    struct ex_descriptors desc;
    struct rpma_conn_private_data pdata;
    ret = ex_descriptors_pack(mr, NULL, &desc, &pdata);
    if (ret != 0)
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
    ret = ex_release(ret, &ep, &peer);
    free(region);
    return ret;
}
