/*
 * client.c -- write-with-imm example, client: writes the server's region chunk by chunk with
 * rpma_write_with_imm(), each chunk when the server says so. The first go-ahead comes right
 * after the connection is established, so its receive is posted on the request, before
 * connecting (rpma_conn_req_recv()); every later one before the write it answers.
 *
 * usage: client <addr> <port>
 */
#include <stdio.h>
#include <stdlib.h>

#include "examples/13-write-with-imm/protocol.h"
#include "examples/common/completions.h"
#include "examples/common/example_conn.h"

#define GO_OFFSET WWI_REGION_SIZE
#define LOCAL_SIZE (GO_OFFSET + sizeof(struct wwi_go))

static int connect_ready_for_go(struct rpma_peer *peer, const char *addr, const char *port,
                                struct rpma_mr_local *mr, struct wwi_go *go,
                                struct rpma_conn **conn_ptr) {
    struct rpma_conn_req *req = NULL;
    int ret = rpma_conn_req_new(peer, addr, port, NULL, &req);
    if (ret != 0)
        return ex_report("rpma_conn_req_new", ret);
    if ((ret = rpma_conn_req_recv(req, mr, GO_OFFSET, sizeof(*go), go)) != 0) {
        (void)rpma_conn_req_delete(&req);
        return ex_report("rpma_conn_req_recv", ret);
    }
    return ex_conn_req_connect(&req, NULL, conn_ptr);
}

static int write_chunks(struct rpma_conn *conn, struct rpma_mr_local *mr, struct wwi_go *go) {
    static const char write_op[] = "write with imm";
    struct rpma_mr_remote *dst = NULL;
    struct ex_completions comps;
    int ret = ex_descriptors_unpack(conn, &dst, NULL);
    if (ret != 0)
        return ret;
    ret = ex_completions_init(conn, &comps);
    const void *writing = NULL; /* the write whose completion is still to come */
    for (uint32_t expected = 0; ret == 0; expected++) {
        struct ex_awaited wait[] = {
            {.op = go, .opcode = IBV_WC_RECV},
            {.op = writing, .opcode = IBV_WC_RDMA_WRITE},
        };
        if ((ret = ex_completions_await(&comps, wait, 2)) != 0)
            break;
        uint32_t chunk = go->next_chunk;
        if (wait[0].wc.byte_len != sizeof(*go) || chunk != expected) {
            fprintf(stderr, "client: the server said chunk %u (%u bytes), expected chunk %u\n",
                    (unsigned)chunk, (unsigned)wait[0].wc.byte_len, (unsigned)expected);
            ret = -1;
            break;
        }
        if (chunk == WWI_CHUNKS)
            break;
        if ((ret = rpma_recv(conn, mr, GO_OFFSET, sizeof(*go), go)) != 0) {
            ex_report("rpma_recv", ret);
            break;
        }
        size_t offset = (size_t)chunk * WWI_CHUNK_SIZE;
        ret = rpma_write_with_imm(conn, dst, offset, mr, offset, WWI_CHUNK_SIZE,
                                  RPMA_F_COMPLETION_ALWAYS, wwi_imm(chunk), write_op);
        if (ret != 0)
            ex_report("rpma_write_with_imm", ret);
        writing = write_op;
    }
    (void)rpma_mr_remote_delete(&dst);
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
    for (size_t i = 0; i < WWI_REGION_SIZE; i++)
        buf[i] = wwi_byte(i);
    struct wwi_go *go = (struct wwi_go *)(buf + GO_OFFSET);

    struct rpma_peer *peer = NULL;
    struct rpma_mr_local *mr = NULL;
    struct rpma_conn *conn = NULL;
    int ret = ex_peer_new(addr, RPMA_UTIL_IBV_CONTEXT_REMOTE, &peer);
    if (ret != 0)
        goto out;
    ret = rpma_mr_reg(peer, buf, LOCAL_SIZE, RPMA_MR_USAGE_WRITE_SRC | RPMA_MR_USAGE_RECV, &mr);
    if (ret != 0) {
        ex_report("rpma_mr_reg", ret);
        goto out;
    }
    if ((ret = connect_ready_for_go(peer, addr, port, mr, go, &conn)) != 0)
        goto out;
    ret = write_chunks(conn, mr, go);
    if (ret == 0)
        printf("client: %d chunks written with immediate data\n", WWI_CHUNKS);
    int closed = ex_disconnect(&conn);
    if (ret == 0)
        ret = closed;
out:
    ret = ex_mr_dereg(ret, &mr);
    ret = ex_release(ret, NULL, &peer);
    free(buf);
    return ret;
}
