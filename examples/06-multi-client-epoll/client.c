/*
 * client.c -- multi-client example, client: fills its slot of the server's memory chunk by
 * chunk, reading every chunk back and checking it, then tells the server it is done with a
 * message and disconnects. Run several at once against one server.
 *
 * usage: client <addr> <port> <id>
 */
#include <stdio.h>
#include <stdlib.h>

#include "examples/06-multi-client-epoll/protocol.h"
#include "examples/common/example_conn.h"

/* local layout: the chunk to write, the chunk read back, the message */
#define SRC_OFFSET 0
#define DST_OFFSET CHUNK_SIZE
#define MSG_OFFSET (2 * CHUNK_SIZE)
#define LOCAL_SIZE (MSG_OFFSET + sizeof(struct done_msg))

static int post_and_wait(int ret, const char *what, struct rpma_cq *cq, const void *op) {
    if (ret != 0)
        return ex_report(what, ret);
    return ex_wait_completion(cq, op);
}

static int fill_slot(struct rpma_conn *conn, uint32_t id, uint8_t *buf,
                     struct rpma_mr_local *local) {
    struct rpma_mr_remote *slot = NULL;
    struct rpma_cq *cq = NULL;
    size_t size = 0;
    int ret = ex_descriptors_unpack(conn, &slot, NULL);
    if (ret != 0)
        return ret;
    if ((ret = rpma_mr_remote_get_size(slot, &size)) != 0)
        ex_report("rpma_mr_remote_get_size", ret);
    if (ret == 0 && size != SLOT_SIZE) {
        fprintf(stderr, "client %u: the slot has %zu bytes, expected %d\n", (unsigned)id, size,
                SLOT_SIZE);
        ret = -1;
    }
    if (ret == 0 && (ret = rpma_conn_get_cq(conn, &cq)) != 0)
        ex_report("rpma_conn_get_cq", ret);

    for (size_t round = 0; ret == 0 && round < ROUNDS; round++) {
        size_t offset = round * CHUNK_SIZE;
        for (size_t i = 0; i < CHUNK_SIZE; i++)
            buf[SRC_OFFSET + i] = slot_byte(id, offset + i);
        ret = post_and_wait(rpma_write(conn, slot, offset, local, SRC_OFFSET, CHUNK_SIZE,
                                       RPMA_F_COMPLETION_ALWAYS, buf + SRC_OFFSET),
                            "rpma_write", cq, buf + SRC_OFFSET);
        if (ret == 0)
            ret = post_and_wait(rpma_read(conn, local, DST_OFFSET, slot, offset, CHUNK_SIZE,
                                          RPMA_F_COMPLETION_ALWAYS, buf + DST_OFFSET),
                                "rpma_read", cq, buf + DST_OFFSET);
        if (ret == 0)
            ret = check_slot(id, buf + DST_OFFSET, offset, CHUNK_SIZE);
    }

    if (ret == 0) {
        struct done_msg *msg = (struct done_msg *)(buf + MSG_OFFSET);
        msg->client_id = id;
        msg->bytes_written = SLOT_SIZE;
        ret = post_and_wait(
            rpma_send(conn, local, MSG_OFFSET, sizeof(*msg), RPMA_F_COMPLETION_ALWAYS, msg),
            "rpma_send", cq, msg);
    }
    (void)rpma_mr_remote_delete(&slot);
    return ret;
}

int main(int argc, char *argv[]) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s <addr> <port> <id>\n", argv[0]);
        return EXIT_FAILURE;
    }
    const char *addr = argv[1];
    const char *port = argv[2];
    int id = atoi(argv[3]);
    if (id < 0 || id >= MAX_CLIENTS) {
        fprintf(stderr, "id must be 0..%d\n", MAX_CLIENTS - 1);
        return EXIT_FAILURE;
    }

    uint8_t *buf = ex_alloc_aligned(LOCAL_SIZE);
    if (buf == NULL)
        return EXIT_FAILURE;

    struct rpma_peer *peer = NULL;
    struct rpma_mr_local *local = NULL;
    struct rpma_conn *conn = NULL;
    int ret = ex_peer_new(addr, RPMA_UTIL_IBV_CONTEXT_REMOTE, &peer);
    if (ret != 0)
        goto out;
    ret =
        rpma_mr_reg(peer, buf, LOCAL_SIZE,
                    RPMA_MR_USAGE_WRITE_SRC | RPMA_MR_USAGE_READ_DST | RPMA_MR_USAGE_SEND, &local);
    if (ret != 0) {
        ex_report("rpma_mr_reg", ret);
        goto out;
    }
    uint8_t id_byte = (uint8_t)id;
    struct rpma_conn_private_data pdata = {.ptr = &id_byte, .len = 1};
    if ((ret = ex_client_connect(peer, addr, port, NULL, &pdata, &conn)) != 0)
        goto out;

    ret = fill_slot(conn, (uint32_t)id, buf, local);
    if (ret == 0)
        printf("client %d: wrote and read back %d bytes in %d rounds\n", id, SLOT_SIZE, ROUNDS);
    int closed = ex_disconnect(&conn);
    if (ret == 0)
        ret = closed;
out:
    ret = ex_mr_dereg(ret, &local);
    ret = ex_release(ret, NULL, &peer);
    free(buf);
    return ret;
}
