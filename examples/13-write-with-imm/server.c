/*
 * server.c -- write-with-imm example, server (the target): exposes a zeroed region and, for
 * each chunk, posts a zero-length receive (rpma_recv(conn, NULL, 0, 0, ...): a write with
 * immediate data puts nothing into the receive buffer, it only needs one to complete) and then
 * tells the client to write the chunk. The write's completion on this side,
 * IBV_WC_RECV_RDMA_WITH_IMM, carries the immediate value (ntohl(wc.imm_data)) and the number of
 * bytes written (wc.byte_len); once it is there, the bytes are, and the server checks them.
 *
 * usage: server <addr> <port>
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>

#include "examples/13-write-with-imm/protocol.h"
#include "examples/common/completions.h"
#include "examples/common/example_conn.h"

struct target {
    uint8_t *region;
    struct rpma_mr_local *region_mr;
    struct wwi_go *go;
    struct rpma_mr_local *go_mr;
};

static int send_go(struct rpma_conn *conn, struct target *t, uint32_t next_chunk) {
    t->go->next_chunk = next_chunk;
    int ret = rpma_send(conn, t->go_mr, 0, sizeof(*t->go), RPMA_F_COMPLETION_ALWAYS, t->go);
    if (ret != 0)
        return ex_report("rpma_send", ret);
    return 0;
}

static int check_chunk(const struct target *t, const struct ibv_wc *wc, uint32_t chunk) {
    uint32_t imm = ntohl(wc->imm_data);
    if (!(wc->wc_flags & IBV_WC_WITH_IMM) || imm != wwi_imm(chunk) ||
        wc->byte_len != WWI_CHUNK_SIZE) {
        fprintf(stderr, "server: chunk %u: flags %#x, immediate %#x (expected %#x), %u bytes\n",
                (unsigned)chunk, (unsigned)wc->wc_flags, (unsigned)imm, (unsigned)wwi_imm(chunk),
                (unsigned)wc->byte_len);
        return -1;
    }
    if (wwi_check_chunks(t->region, chunk, 1) != 0)
        return -1;
    printf("server: chunk %u arrived with immediate %#x, its %u bytes are right\n", (unsigned)chunk,
           (unsigned)imm, (unsigned)wc->byte_len);
    return 0;
}

static int receive_chunks(struct rpma_conn *conn, struct target *t) {
    static const char written_op[] = "chunk written";
    struct ex_completions comps;
    int ret = ex_completions_init(conn, &comps);
    for (uint32_t chunk = 0; ret == 0 && chunk < WWI_CHUNKS; chunk++) {
        /* the receive first: the client writes as soon as it is told to */
        if ((ret = rpma_recv(conn, NULL, 0, 0, written_op)) != 0) {
            ex_report("rpma_recv", ret);
            break;
        }
        if ((ret = send_go(conn, t, chunk)) != 0)
            break;
        struct ex_awaited wait[] = {
            {.op = t->go, .opcode = IBV_WC_SEND},
            {.op = written_op, .opcode = IBV_WC_RECV_RDMA_WITH_IMM},
        };
        if ((ret = ex_completions_await(&comps, wait, 2)) == 0)
            ret = check_chunk(t, &wait[1].wc, chunk);
    }
    if (ret == 0)
        ret = send_go(conn, t, WWI_CHUNKS);
    if (ret == 0) {
        struct ex_awaited done = {.op = t->go, .opcode = IBV_WC_SEND};
        ret = ex_completions_await(&comps, &done, 1);
    }
    return ret;
}

int main(int argc, char *argv[]) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s <addr> <port>\n", argv[0]);
        return EXIT_FAILURE;
    }
    const char *addr = argv[1];
    const char *port = argv[2];

    struct target t = {0};
    t.region = ex_alloc_aligned(WWI_REGION_SIZE);
    t.go = ex_alloc_aligned(sizeof(*t.go));
    struct rpma_peer *peer = NULL;
    struct rpma_ep *ep = NULL;
    struct rpma_conn *conn = NULL;
    int ret = t.region == NULL || t.go == NULL ? -1 : 0;
    if (ret == 0)
        ret = ex_peer_new(addr, RPMA_UTIL_IBV_CONTEXT_LOCAL, &peer);
    if (ret != 0)
        goto out;
    ret = rpma_mr_reg(peer, t.region, WWI_REGION_SIZE, RPMA_MR_USAGE_WRITE_DST, &t.region_mr);
    if (ret == 0)
        ret = rpma_mr_reg(peer, t.go, sizeof(*t.go), RPMA_MR_USAGE_SEND, &t.go_mr);
    if (ret != 0) {
        ex_report("rpma_mr_reg", ret);
        goto out;
    }
    struct ex_descriptors desc;
    struct rpma_conn_private_data pdata;
    if ((ret = ex_descriptors_pack(t.region_mr, NULL, &desc, &pdata)) != 0)
        goto out;
    if ((ret = rpma_ep_listen(peer, addr, port, &ep)) != 0) {
        ex_report("rpma_ep_listen", ret);
        goto out;
    }
    ex_announce_ready();

    if ((ret = ex_server_accept(ep, NULL, &pdata, &conn)) != 0)
        goto out;
    ret = receive_chunks(conn, &t);
    int closed = ex_wait_closed(&conn);
    if (ret == 0)
        ret = closed;
    if (ret == 0 && (ret = wwi_check_chunks(t.region, 0, WWI_CHUNKS)) == 0)
        printf("server: all %d chunks written with immediate data, the region is right\n",
               WWI_CHUNKS);
out:
    ret = ex_mr_dereg(ret, &t.go_mr);
    ret = ex_mr_dereg(ret, &t.region_mr);
    ret = ex_release(ret, &ep, &peer);
    free(t.go);
    free(t.region);
    return ret;
}
