/*
 * gpspm_client.c -- the client of the GPSPM examples (see gpspm_client.h)
 */
#include "examples/10-gpspm/gpspm_client.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "examples/common/completions.h"
#include "examples/common/example_conn.h"

#define MSG_REGION_SIZE (sizeof(struct gpspm_flush_request) + sizeof(struct gpspm_flush_response))
#define RESPONSE_OFFSET sizeof(struct gpspm_flush_request)

int gpspm_client_open(struct gpspm_client *clt, const char *addr, const char *port,
                      const struct rpma_conn_cfg *cfg) {
    memset(clt, 0, sizeof(*clt));
    clt->src = ex_alloc_aligned(GPSPM_REGION_SIZE);
    clt->request = ex_alloc_aligned(MSG_REGION_SIZE);
    if (clt->src == NULL || clt->request == NULL)
        return -1;
    clt->response = (struct gpspm_flush_response *)((char *)clt->request + RESPONSE_OFFSET);
    for (size_t i = 0; i < GPSPM_REGION_SIZE; i++)
        clt->src[i] = gpspm_byte(i);

    int ret = ex_peer_new(addr, RPMA_UTIL_IBV_CONTEXT_REMOTE, &clt->peer);
    if (ret != 0)
        return ret;
    ret =
        rpma_mr_reg(clt->peer, clt->src, GPSPM_REGION_SIZE, RPMA_MR_USAGE_WRITE_SRC, &clt->src_mr);
    if (ret == 0)
        ret = rpma_mr_reg(clt->peer, clt->request, MSG_REGION_SIZE,
                          RPMA_MR_USAGE_SEND | RPMA_MR_USAGE_RECV, &clt->msg_mr);
    if (ret != 0)
        return ex_report("rpma_mr_reg", ret);
    if ((ret = ex_client_connect(clt->peer, addr, port, cfg, NULL, &clt->conn)) != 0)
        return ret;
    /* only the region: no peer configuration, the server does not claim direct write to PMem */
    return ex_descriptors_unpack(clt->conn, &clt->dst, NULL);
}

/* Writes chunk op and has the server make it durable. */
static int write_and_flush(struct gpspm_client *clt, struct ex_completions *comps, uint64_t op) {
    size_t offset = op * GPSPM_CHUNK_SIZE;
    /* a failure would still complete (with wr_id 0) and end the wait below */
    int ret = rpma_write(clt->conn, clt->dst, offset, clt->src_mr, offset, GPSPM_CHUNK_SIZE,
                         RPMA_F_COMPLETION_ON_ERROR, NULL);
    if (ret != 0)
        return ex_report("rpma_write", ret);
    ret = rpma_recv(clt->conn, clt->msg_mr, RESPONSE_OFFSET, sizeof(*clt->response), clt->response);
    if (ret != 0)
        return ex_report("rpma_recv", ret);
    *clt->request =
        (struct gpspm_flush_request){.op_id = op, .offset = offset, .length = GPSPM_CHUNK_SIZE};
    /* sends are ordered after the write: the server sees the request after the bytes */
    ret = rpma_send(clt->conn, clt->msg_mr, 0, sizeof(*clt->request), RPMA_F_COMPLETION_ALWAYS,
                    clt->request);
    if (ret != 0)
        return ex_report("rpma_send", ret);
    struct ex_awaited wait[] = {
        {.op = clt->request, .opcode = IBV_WC_SEND},
        {.op = clt->response, .opcode = IBV_WC_RECV},
    };
    if ((ret = ex_completions_await(comps, wait, 2)) != 0)
        return ret;
    if (wait[1].wc.byte_len != sizeof(*clt->response) || clt->response->op_id != op ||
        clt->response->status != 0) {
        fprintf(stderr, "client: flush %llu: response of %u bytes: op %llu, status %lld\n",
                (unsigned long long)op, (unsigned)wait[1].wc.byte_len,
                (unsigned long long)clt->response->op_id, (long long)clt->response->status);
        return -1;
    }
    return 0;
}

int gpspm_client_write(struct gpspm_client *clt) {
    struct ex_completions comps;
    int ret = ex_completions_init(clt->conn, &comps);
    for (uint64_t op = 0; ret == 0 && op < GPSPM_CHUNKS; op++)
        ret = write_and_flush(clt, &comps, op);
    if (ret == 0)
        printf("client: %d bytes written in %d chunks, each made durable by the server\n",
               GPSPM_REGION_SIZE, GPSPM_CHUNKS);
    return ret;
}

int gpspm_client_close(struct gpspm_client *clt, int ret) {
    (void)rpma_mr_remote_delete(&clt->dst);
    if (clt->conn != NULL) {
        int closed = ex_disconnect(&clt->conn);
        if (ret == 0)
            ret = closed;
    }
    ret = ex_mr_dereg(ret, &clt->msg_mr);
    ret = ex_mr_dereg(ret, &clt->src_mr);
    free(clt->request);
    free(clt->src);
    return ex_release(ret, NULL, &clt->peer);
}
