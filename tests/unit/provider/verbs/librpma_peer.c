/*
 * One side of a connection made with the reference librpma (Debian's
 * librpma 1.2, /usr/include/librpma.h, -lrpma): the other side is
 * provider_peer.cc, on this project's verbs provider. Together they show
 * that the provider carries private data and memory descriptors the way
 * librpma expects, and that librpma's writes, APM flushes, atomic writes and
 * reads work against it and vice versa.
 *
 *   librpma_peer server ADDR PORT   accept, hand out a region, check it
 *   librpma_peer client ADDR PORT   connect, write/flush/atomic-write/read
 *
 * Prints RESULT lines; exits 0 only when every check passed.
 */
#define _POSIX_C_SOURCE 200809L /* posix_memalign under -std=c11 */

#include <librpma.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REGION_SIZE 4096
#define ATOMIC_OFFSET 64
#define READ_BACK_OFFSET 512

static const char CLIENT_HELLO[] = "hello from the client";
static const char WRITTEN[16] = "written by peer!";
static const char ATOMIC[8] = "ATOMIC!!";

static int failures;

#define CHECK(call)                                                    \
    do {                                                               \
        int ret_ = (call);                                             \
        if (ret_ != 0) {                                               \
            printf("RESULT %s FAIL %s\n", #call, rpma_err_2str(ret_)); \
            exit(1);                                                   \
        }                                                              \
    } while (0)

static void result(const char *check, int ok, const char *detail) {
    printf("RESULT %s %s %s\n", check, ok ? "PASS" : "FAIL", detail);
    failures += !ok;
}

static void expect_event(struct rpma_conn *conn, enum rpma_conn_event expected) {
    enum rpma_conn_event event = RPMA_CONN_UNDEFINED;
    CHECK(rpma_conn_next_event(conn, &event));
    result("event", event == expected, rpma_utils_conn_event_2str(event));
}

/* The next completion, waiting on the CQ's channel when there is none. */
static void expect_completion(struct rpma_conn *conn, enum ibv_wc_opcode opcode,
                              uintptr_t context) {
    struct rpma_cq *cq = NULL;
    CHECK(rpma_conn_get_cq(conn, &cq));
    struct ibv_wc wc;
    int ret;
    while ((ret = rpma_cq_get_wc(cq, 1, &wc, NULL)) == RPMA_E_NO_COMPLETION)
        CHECK(rpma_cq_wait(cq));
    CHECK(ret);
    char detail[128];
    snprintf(detail, sizeof(detail), "status=%s opcode=%d wr_id=%lu", ibv_wc_status_str(wc.status),
             wc.opcode, (unsigned long)wc.wr_id);
    result("completion", wc.status == IBV_WC_SUCCESS && wc.opcode == opcode && wc.wr_id == context,
           detail);
}

static void *region(void) {
    void *mem = NULL;
    if (posix_memalign(&mem, 4096, REGION_SIZE) != 0)
        exit(1);
    memset(mem, 0, REGION_SIZE);
    return mem;
}

static int server(const char *addr, const char *port) {
    struct ibv_context *ctx = NULL;
    struct rpma_peer *peer = NULL;
    CHECK(rpma_utils_get_ibv_context(addr, RPMA_UTIL_IBV_CONTEXT_LOCAL, &ctx));
    CHECK(rpma_peer_new(ctx, &peer));
    char *mem = region();
    struct rpma_mr_local *mr = NULL;
    CHECK(rpma_mr_reg(
        peer, mem, REGION_SIZE,
        RPMA_MR_USAGE_WRITE_DST | RPMA_MR_USAGE_READ_SRC | RPMA_MR_USAGE_FLUSH_TYPE_VISIBILITY,
        &mr));
    size_t desc_size = 0;
    char desc[64];
    CHECK(rpma_mr_get_descriptor_size(mr, &desc_size));
    CHECK(rpma_mr_get_descriptor(mr, desc));

    struct rpma_ep *ep = NULL;
    CHECK(rpma_ep_listen(peer, addr, port, &ep));
    struct rpma_conn_req *req = NULL;
    CHECK(rpma_ep_next_conn_req(ep, NULL, &req));
    struct rpma_conn_private_data in;
    CHECK(rpma_conn_req_get_private_data(req, &in));
    char detail[64];
    snprintf(detail, sizeof(detail), "len=%u", in.len);
    result(
        "request_private_data",
        in.len >= sizeof(CLIENT_HELLO) && memcmp(in.ptr, CLIENT_HELLO, sizeof(CLIENT_HELLO)) == 0,
        detail);

    struct rpma_conn_private_data out = {desc, (uint8_t)desc_size};
    struct rpma_conn *conn = NULL;
    CHECK(rpma_conn_req_connect(&req, &out, &conn));
    expect_event(conn, RPMA_CONN_ESTABLISHED);
    /* The client writes, flushes, atomically writes, reads back, leaves. */
    expect_event(conn, RPMA_CONN_CLOSED);
    result("written", memcmp(mem, WRITTEN, sizeof(WRITTEN)) == 0, "16 bytes by RDMA WRITE");
    result("atomic_written", memcmp(mem + ATOMIC_OFFSET, ATOMIC, sizeof(ATOMIC)) == 0,
           "8 bytes by the atomic-write fallback");

    CHECK(rpma_conn_disconnect(conn));
    CHECK(rpma_conn_delete(&conn));
    CHECK(rpma_ep_shutdown(&ep));
    CHECK(rpma_mr_dereg(&mr));
    CHECK(rpma_peer_delete(&peer));
    free(mem);
    return failures == 0 ? 0 : 1;
}

static int client(const char *addr, const char *port) {
    struct ibv_context *ctx = NULL;
    struct rpma_peer *peer = NULL;
    CHECK(rpma_utils_get_ibv_context(addr, RPMA_UTIL_IBV_CONTEXT_REMOTE, &ctx));
    CHECK(rpma_peer_new(ctx, &peer));
    char *mem = region();
    struct rpma_mr_local *mr = NULL;
    CHECK(
        rpma_mr_reg(peer, mem, REGION_SIZE, RPMA_MR_USAGE_WRITE_SRC | RPMA_MR_USAGE_READ_DST, &mr));

    struct rpma_conn_req *req = NULL;
    CHECK(rpma_conn_req_new(peer, addr, port, NULL, &req));
    struct rpma_conn_private_data hello = {(void *)CLIENT_HELLO, sizeof(CLIENT_HELLO)};
    struct rpma_conn *conn = NULL;
    CHECK(rpma_conn_req_connect(&req, &hello, &conn));
    expect_event(conn, RPMA_CONN_ESTABLISHED);

    struct rpma_conn_private_data in;
    CHECK(rpma_conn_get_private_data(conn, &in));
    struct rpma_mr_remote *remote = NULL;
    CHECK(rpma_mr_remote_from_descriptor(in.ptr, in.len, &remote));
    size_t remote_size = 0;
    int flush_type = 0;
    CHECK(rpma_mr_remote_get_size(remote, &remote_size));
    CHECK(rpma_mr_remote_get_flush_type(remote, &flush_type));
    result("descriptor",
           remote_size == REGION_SIZE && flush_type == RPMA_MR_USAGE_FLUSH_TYPE_VISIBILITY,
           "size and usage as the provider side registered them");

    memcpy(mem, WRITTEN, sizeof(WRITTEN));
    CHECK(rpma_write(conn, remote, 0, mr, 0, sizeof(WRITTEN), RPMA_F_COMPLETION_ON_ERROR, NULL));
    CHECK(rpma_flush(conn, remote, 0, sizeof(WRITTEN), RPMA_FLUSH_TYPE_VISIBILITY,
                     RPMA_F_COMPLETION_ALWAYS, (void *)1));
    expect_completion(conn, IBV_WC_RDMA_READ, 1);
    CHECK(rpma_atomic_write(conn, remote, ATOMIC_OFFSET, ATOMIC, RPMA_F_COMPLETION_ALWAYS,
                            (void *)2));
    expect_completion(conn, IBV_WC_RDMA_WRITE, 2);
    CHECK(rpma_read(conn, mr, READ_BACK_OFFSET, remote, 0, sizeof(WRITTEN),
                    RPMA_F_COMPLETION_ALWAYS, (void *)3));
    expect_completion(conn, IBV_WC_RDMA_READ, 3);
    result("read_back", memcmp(mem + READ_BACK_OFFSET, WRITTEN, sizeof(WRITTEN)) == 0,
           "16 bytes by RDMA READ");

    CHECK(rpma_conn_disconnect(conn));
    expect_event(conn, RPMA_CONN_CLOSED);
    CHECK(rpma_conn_delete(&conn));
    CHECK(rpma_mr_remote_delete(&remote));
    CHECK(rpma_mr_dereg(&mr));
    CHECK(rpma_peer_delete(&peer));
    free(mem);
    return failures == 0 ? 0 : 1;
}

int main(int argc, char *argv[]) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc == 4 && strcmp(argv[1], "server") == 0)
        return server(argv[2], argv[3]);
    if (argc == 4 && strcmp(argv[1], "client") == 0)
        return client(argv[2], argv[3]);
    fprintf(stderr, "usage: %s server|client ADDR PORT\n", argv[0]);
    return 2;
}
