/*
 * gpspm_server.c -- the server of the GPSPM examples (see gpspm_server.h)
 */
#include "examples/10-gpspm/gpspm_server.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "examples/common/completions.h"

#define MSG_REGION_SIZE (sizeof(struct gpspm_flush_request) + sizeof(struct gpspm_flush_response))
#define RESPONSE_OFFSET sizeof(struct gpspm_flush_request)

int gpspm_server_open(struct gpspm_server *srv, const char *addr, const char *port,
                      const char *path) {
    memset(srv, 0, sizeof(*srv));
    srv->path = path;
    srv->file.fd = -1;
    if (ex_pmem_file_map(path, GPSPM_REGION_SIZE, &srv->file) != 0)
        return -1;
    memset(srv->file.addr, 0, GPSPM_REGION_SIZE);
    srv->file.persist(srv->file.addr, GPSPM_REGION_SIZE);

    int ret = ex_peer_new(addr, RPMA_UTIL_IBV_CONTEXT_LOCAL, &srv->peer);
    if (ret != 0)
        return ret;
    /* no RPMA_MR_USAGE_FLUSH_TYPE_*: the client cannot flush here, it has to ask */
    ret = rpma_mr_reg(srv->peer, srv->file.addr, GPSPM_REGION_SIZE, RPMA_MR_USAGE_WRITE_DST,
                      &srv->region_mr);
    if (ret != 0)
        return ex_report("rpma_mr_reg", ret);
    srv->request = ex_alloc_aligned(MSG_REGION_SIZE);
    if (srv->request == NULL)
        return -1;
    srv->response = (struct gpspm_flush_response *)((char *)srv->request + RESPONSE_OFFSET);
    ret = rpma_mr_reg(srv->peer, srv->request, MSG_REGION_SIZE,
                      RPMA_MR_USAGE_RECV | RPMA_MR_USAGE_SEND, &srv->msg_mr);
    if (ret != 0)
        return ex_report("rpma_mr_reg", ret);
    if ((ret = rpma_ep_listen(srv->peer, addr, port, &srv->ep)) != 0)
        return ex_report("rpma_ep_listen", ret);
    ex_announce_ready();
    return 0;
}

int gpspm_server_accept(struct gpspm_server *srv, const struct rpma_conn_cfg *cfg,
                        struct rpma_conn **conn_ptr) {
    struct rpma_conn_private_data pdata;
    /* no peer configuration: this server does not declare direct write to PMem */
    int ret = ex_descriptors_pack(srv->region_mr, NULL, &srv->desc, &pdata);
    if (ret != 0)
        return ret;
    struct rpma_conn_req *req = NULL;
    if ((ret = rpma_ep_next_conn_req(srv->ep, cfg, &req)) != 0)
        return ex_report("rpma_ep_next_conn_req", ret);
    ret = rpma_conn_req_recv(req, srv->msg_mr, 0, sizeof(*srv->request), srv->request);
    if (ret != 0) {
        (void)rpma_conn_req_delete(&req);
        return ex_report("rpma_conn_req_recv", ret);
    }
    return ex_conn_req_connect(&req, &pdata, conn_ptr);
}

/* Makes the requested range durable; the response says whether the request was valid. */
static int persist(struct gpspm_server *srv, const struct ibv_wc *wc, uint64_t expected_op) {
    struct gpspm_flush_request req = *srv->request;
    bool valid = wc->byte_len == sizeof(req) && req.op_id == expected_op && req.length > 0 &&
                 req.offset < GPSPM_REGION_SIZE && req.length <= GPSPM_REGION_SIZE - req.offset;
    *srv->response = (struct gpspm_flush_response){.op_id = req.op_id, .status = valid ? 0 : -1};
    if (!valid) {
        fprintf(stderr,
                "server: invalid flush request (%u bytes): op %llu, offset %llu, length %llu\n",
                (unsigned)wc->byte_len, (unsigned long long)req.op_id,
                (unsigned long long)req.offset, (unsigned long long)req.length);
        return -1;
    }
    /*
     * The request came after the client's write on the same connection, so the written bytes
     * are in the mapping now; the persist function makes them durable.
     */
    srv->file.persist(srv->file.addr + req.offset, req.length);
    srv->flushed++;
    return 0;
}

int gpspm_server_serve(struct gpspm_server *srv, struct rpma_conn **conn_ptr) {
    struct ex_completions comps;
    int ret = ex_completions_init(*conn_ptr, &comps);
    const void *sending = NULL; /* the response whose send has not completed yet */
    for (uint64_t op = 0; ret == 0 && op < GPSPM_CHUNKS; op++) {
        struct ex_awaited wait[] = {
            {.op = srv->request, .opcode = IBV_WC_RECV},
            {.op = sending, .opcode = IBV_WC_SEND},
        };
        if ((ret = ex_completions_await(&comps, wait, 2)) != 0)
            break;
        int persisted = persist(srv, &wait[0].wc, op);
        /* the next request may follow our response at once: its buffer goes first */
        if (op + 1 < GPSPM_CHUNKS && (ret = rpma_recv(*conn_ptr, srv->msg_mr, 0,
                                                      sizeof(*srv->request), srv->request)) != 0) {
            ex_report("rpma_recv", ret);
            break;
        }
        ret = rpma_send(*conn_ptr, srv->msg_mr, RESPONSE_OFFSET, sizeof(*srv->response),
                        RPMA_F_COMPLETION_ALWAYS, srv->response);
        if (ret != 0) {
            ex_report("rpma_send", ret);
            break;
        }
        sending = srv->response;
        ret = persisted; /* an invalid request was answered, but ends the service */
    }
    if (ret == 0) {
        struct ex_awaited last = {.op = sending, .opcode = IBV_WC_SEND};
        ret = ex_completions_await(&comps, &last, 1);
    }
    if (ret == 0) {
        printf("server: %u flush requests served (completions: %u on the CQ", srv->flushed,
               comps.from_cq);
        if (comps.rcq != NULL)
            printf(", %u on the receive CQ%s", comps.from_rcq,
                   comps.shared ? ", both on one shared channel" : "");
        printf(")\n");
    }
    int closed = ex_wait_closed(conn_ptr);
    return ret != 0 ? ret : closed;
}

int gpspm_server_close(struct gpspm_server *srv, int ret) {
    ret = ex_mr_dereg(ret, &srv->msg_mr);
    ret = ex_mr_dereg(ret, &srv->region_mr);
    free(srv->request);
    ret = ex_release(ret, &srv->ep, &srv->peer) == EXIT_SUCCESS ? 0 : -1;
    if (srv->file.map != NULL && ex_pmem_file_unmap(&srv->file) != 0)
        ret = -1;
    if (ret != 0)
        return EXIT_FAILURE;

    /* every range was persisted on request: the bytes are in the file */
    uint8_t *check = ex_alloc_aligned(GPSPM_REGION_SIZE);
    ret = check == NULL ? -1 : ex_file_pread(srv->path, 0, check, GPSPM_REGION_SIZE);
    if (ret == 0)
        ret = gpspm_check_region(check);
    if (ret == 0)
        printf("server: %s holds the client's %d bytes, made durable by %u flush requests\n",
               srv->path, GPSPM_REGION_SIZE, srv->flushed);
    free(check);
    return ret == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
