/*
 * fault_server.c -- the target side of the failure tests.
 *
 *   fault_server reject <addr> <port>
 *       rejects the first connection request (rpma_conn_req_delete) and exits
 *   fault_server guarded <addr> <port> rw|ro
 *       registers one page of a two-page buffer filled with GUARD_BYTE (rw: write destination
 *       and read source; ro: read source only), sends its descriptor, waits for the
 *       connection to end and checks that not one byte of the buffer changed
 *   fault_server durable <addr> <port> <file>
 *       maps file as persistent memory, declares direct write to PMem and serves one client
 *       until it disconnects (the durability and LOST tests kill it before that)
 *
 * Prints "ready" once listening; exits 0 when the scenario went as it should.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "examples/common/example_conn.h"
#include "examples/common/pmem_file.h"
#include "tests/integration/durable_record.h"
#include "tests/integration/fault_common.h"

static int listen_on(struct rpma_peer *peer, const char *addr, const char *port,
                     struct rpma_ep **ep) {
    int ret = rpma_ep_listen(peer, addr, port, ep);
    if (ret != 0)
        return ex_report("rpma_ep_listen", ret);
    ex_announce_ready();
    return 0;
}

static int reject(struct rpma_peer *peer, const char *addr, const char *port) {
    struct rpma_ep *ep = NULL;
    struct rpma_conn_req *req = NULL;
    int ret = listen_on(peer, addr, port, &ep);
    if (ret == 0 && (ret = rpma_ep_next_conn_req(ep, NULL, &req)) != 0)
        ex_report("rpma_ep_next_conn_req", ret);
    if (ret == 0 && (ret = rpma_conn_req_delete(&req)) != 0)
        ex_report("rpma_conn_req_delete", ret);
    if (ret == 0) {
        printf("rejected\n");
        fflush(stdout);
    }
    return ex_release(ret, &ep, NULL);
}

/* Waits for whatever ends the connection (the client may have broken it) and tears down. */
static int wait_for_end(struct rpma_conn **conn) {
    enum rpma_conn_event event = RPMA_CONN_UNDEFINED;
    int ret = ex_next_event(*conn, -1, &event);
    if (ret == 0) {
        printf("event: %s\n", event_name(event));
        fflush(stdout);
        if (event != RPMA_CONN_CLOSED && event != RPMA_CONN_LOST)
            ret = -1;
    }
    (void)rpma_conn_disconnect(*conn);
    int del = rpma_conn_delete(conn);
    if (del != 0)
        ret = ex_report("rpma_conn_delete", del);
    return ret;
}

/* Serves one client, sending the descriptors of mr and pcfg (may be NULL). */
static int serve_one(struct rpma_peer *peer, const char *addr, const char *port,
                     struct rpma_mr_local *mr, struct rpma_peer_cfg *pcfg) {
    struct ex_descriptors desc;
    struct rpma_conn_private_data pdata;
    struct rpma_ep *ep = NULL;
    struct rpma_conn *conn = NULL;
    int ret = ex_descriptors_pack(mr, pcfg, &desc, &pdata);
    if (ret == 0)
        ret = listen_on(peer, addr, port, &ep);
    if (ret == 0)
        ret = ex_server_accept(ep, NULL, &pdata, &conn);
    if (ret == 0) {
        printf("established\n");
        fflush(stdout);
        ret = wait_for_end(&conn);
    }
    return ex_release(ret, &ep, NULL);
}

static int guarded(struct rpma_peer *peer, const char *addr, const char *port, const char *mode) {
    int usage;
    if (strcmp(mode, "rw") == 0) {
        usage = RPMA_MR_USAGE_WRITE_DST | RPMA_MR_USAGE_READ_SRC;
    } else if (strcmp(mode, "ro") == 0) {
        usage = RPMA_MR_USAGE_READ_SRC;
    } else {
        fprintf(stderr, "guarded: mode must be rw or ro\n");
        return EXIT_FAILURE;
    }
    unsigned char *buf = ex_alloc_aligned(GUARDED_BUFFER_SIZE);
    if (buf == NULL)
        return EXIT_FAILURE;
    memset(buf, GUARD_BYTE, GUARDED_BUFFER_SIZE);

    struct rpma_mr_local *mr = NULL;
    int ret = rpma_mr_reg(peer, buf, GUARDED_REGION_SIZE, usage, &mr);
    if (ret != 0)
        ex_report("rpma_mr_reg", ret);
    else
        ret = serve_one(peer, addr, port, mr, NULL);
    ret = ex_mr_dereg(ret, &mr);

    for (size_t i = 0; ret == 0 && i < GUARDED_BUFFER_SIZE; i++) {
        if (buf[i] != GUARD_BYTE) {
            printf("target memory modified at byte %zu\n", i);
            ret = -1;
        }
    }
    if (ret == 0)
        printf("target memory unchanged\n");
    free(buf);
    return ret == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

static int durable(struct rpma_peer *peer, const char *addr, const char *port, const char *path) {
    struct ex_pmem_file file;
    if (ex_pmem_file_map(path, DURABLE_REGION_SIZE, &file) != 0)
        return EXIT_FAILURE;
    struct rpma_peer_cfg *pcfg = NULL;
    struct rpma_mr_local *mr = NULL;
    int ret = ex_pmem_peer_cfg_new(&pcfg);
    if (ret == 0 && (ret = rpma_mr_reg(
                         peer, file.addr, DURABLE_REGION_SIZE,
                         RPMA_MR_USAGE_WRITE_DST | RPMA_MR_USAGE_FLUSH_TYPE_PERSISTENT, &mr)) != 0)
        ex_report("rpma_mr_reg", ret);
    if (ret == 0)
        ret = serve_one(peer, addr, port, mr, pcfg);
    ret = ex_mr_dereg(ret, &mr);
    (void)rpma_peer_cfg_delete(&pcfg);
    if (ex_pmem_file_unmap(&file) != 0)
        ret = -1;
    return ret == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

int main(int argc, char *argv[]) {
    if (argc < 4) {
        fprintf(stderr,
                "usage: %s reject <addr> <port>\n"
                "       %s guarded <addr> <port> rw|ro\n"
                "       %s durable <addr> <port> <file>\n",
                argv[0], argv[0], argv[0]);
        return EXIT_FAILURE;
    }
    const char *scenario = argv[1];
    const char *addr = argv[2];
    const char *port = argv[3];
    struct rpma_peer *peer = NULL;
    if (ex_peer_new(addr, RPMA_UTIL_IBV_CONTEXT_LOCAL, &peer) != 0)
        return EXIT_FAILURE;

    int status;
    if (strcmp(scenario, "reject") == 0 && argc == 4) {
        status = reject(peer, addr, port);
    } else if (strcmp(scenario, "guarded") == 0 && argc == 5) {
        status = guarded(peer, addr, port, argv[4]);
    } else if (strcmp(scenario, "durable") == 0 && argc == 5) {
        status = durable(peer, addr, port, argv[4]);
    } else {
        fprintf(stderr, "%s: unknown scenario or wrong arguments\n", scenario);
        status = EXIT_FAILURE;
    }
    return ex_release(status, NULL, &peer);
}
