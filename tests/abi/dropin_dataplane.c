// dropin_dataplane: a librpma program compiled against Debian's librpma.h and
// linked with -lrpma, run on our librpma.so.0 -- over the tcp provider on the
// build machines (dropin_dataplane_test), over verbs on Soft-RoCE in the VM
// tier (tests/unit:api_verbs_vm_test), where it also runs on Debian's own
// librpma to show that its expectations are librpma's.
//
//   [RPMA_TEST_ADDR=<addr>] [RPMA_PROVIDER=verbs] [RPMA_EXPECT_LIBRARY=<file>] dropin_dataplane
//
// RPMA_TEST_ADDR: where to listen and connect (default 127.0.0.1).
// RPMA_PROVIDER=verbs: expect verbs' behaviour where it differs from tcp's.
// RPMA_EXPECT_LIBRARY: fail unless the librpma in use is that file.
//
// It takes the address of every one of librpma's 84 functions, so with
// LD_BIND_NOW=1 the loader refuses to start it when our library lacks any,
// then drives one connection through the whole API as an application would:
// memory registration and descriptors, listen/connect with private data,
// reads, writes, flushes, atomic writes, messages with and without immediate
// data, an SRQ, completion channels and disconnection.
//
// It checks results against librpma's documented semantics. Output:
// "ok   <check>" / "FAIL <check>: <why>" lines.
#define _GNU_SOURCE  // dladdr
#include <arpa/inet.h>
#include <dlfcn.h>
#include <librpma.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#ifndef LIBRPMA_H
#error "dropin_dataplane.c must be compiled against Debian's /usr/include/librpma.h"
#endif

static int failures;

static void verdict(bool passed, const char *what, long long got, long long expected) {
    if (passed) {
        printf("ok   %s\n", what);
    } else {
        printf("FAIL %s: got %lld, expected %lld\n", what, got, expected);
        ++failures;
    }
}

#define CHECK_INT(actual, expected)                                          \
    do {                                                                     \
        long long got_ = (long long)(actual), want_ = (long long)(expected); \
        verdict(got_ == want_, #actual " == " #expected, got_, want_);       \
    } while (0)
#define CHECK_OK(call) CHECK_INT(call, 0)
#define CHECK_TRUE(condition) verdict((condition), #condition, 0, 1)

// Every librpma function, by address: the loader must resolve them all.
typedef void (*any_function)(void);
#define F(name) (any_function) & name
static const any_function kAllFunctions[] = {
    F(rpma_atomic_write),
    F(rpma_conn_apply_remote_peer_cfg),
    F(rpma_conn_cfg_delete),
    F(rpma_conn_cfg_get_compl_channel),
    F(rpma_conn_cfg_get_cq_size),
    F(rpma_conn_cfg_get_rcq_size),
    F(rpma_conn_cfg_get_rq_size),
    F(rpma_conn_cfg_get_sq_size),
    F(rpma_conn_cfg_get_srq),
    F(rpma_conn_cfg_get_timeout),
    F(rpma_conn_cfg_new),
    F(rpma_conn_cfg_set_compl_channel),
    F(rpma_conn_cfg_set_cq_size),
    F(rpma_conn_cfg_set_rcq_size),
    F(rpma_conn_cfg_set_rq_size),
    F(rpma_conn_cfg_set_sq_size),
    F(rpma_conn_cfg_set_srq),
    F(rpma_conn_cfg_set_timeout),
    F(rpma_conn_delete),
    F(rpma_conn_disconnect),
    F(rpma_conn_get_compl_fd),
    F(rpma_conn_get_cq),
    F(rpma_conn_get_event_fd),
    F(rpma_conn_get_private_data),
    F(rpma_conn_get_qp_num),
    F(rpma_conn_get_rcq),
    F(rpma_conn_next_event),
    F(rpma_conn_req_connect),
    F(rpma_conn_req_delete),
    F(rpma_conn_req_get_private_data),
    F(rpma_conn_req_new),
    F(rpma_conn_req_recv),
    F(rpma_conn_wait),
    F(rpma_cq_get_fd),
    F(rpma_cq_get_wc),
    F(rpma_cq_wait),
    F(rpma_ep_get_fd),
    F(rpma_ep_listen),
    F(rpma_ep_next_conn_req),
    F(rpma_ep_shutdown),
    F(rpma_err_2str),
    F(rpma_flush),
    F(rpma_log_get_threshold),
    F(rpma_log_set_function),
    F(rpma_log_set_threshold),
    F(rpma_mr_advise),
    F(rpma_mr_dereg),
    F(rpma_mr_get_descriptor),
    F(rpma_mr_get_descriptor_size),
    F(rpma_mr_get_ptr),
    F(rpma_mr_get_size),
    F(rpma_mr_reg),
    F(rpma_mr_remote_delete),
    F(rpma_mr_remote_from_descriptor),
    F(rpma_mr_remote_get_flush_type),
    F(rpma_mr_remote_get_size),
    F(rpma_peer_cfg_delete),
    F(rpma_peer_cfg_from_descriptor),
    F(rpma_peer_cfg_get_descriptor),
    F(rpma_peer_cfg_get_descriptor_size),
    F(rpma_peer_cfg_get_direct_write_to_pmem),
    F(rpma_peer_cfg_new),
    F(rpma_peer_cfg_set_direct_write_to_pmem),
    F(rpma_peer_delete),
    F(rpma_peer_new),
    F(rpma_read),
    F(rpma_recv),
    F(rpma_send),
    F(rpma_send_with_imm),
    F(rpma_srq_cfg_delete),
    F(rpma_srq_cfg_get_rcq_size),
    F(rpma_srq_cfg_get_rq_size),
    F(rpma_srq_cfg_new),
    F(rpma_srq_cfg_set_rcq_size),
    F(rpma_srq_cfg_set_rq_size),
    F(rpma_srq_delete),
    F(rpma_srq_get_rcq),
    F(rpma_srq_new),
    F(rpma_srq_recv),
    F(rpma_utils_conn_event_2str),
    F(rpma_utils_get_ibv_context),
    F(rpma_utils_ibv_context_is_odp_capable),
    F(rpma_write),
    F(rpma_write_with_imm),
};

// Where the provider differs: rdma_cm on RoCE/IB pads private data (56 bytes
// in a request, 196 in a reply), Soft-RoCE has no ibv_advise_mr.
static bool on_verbs(void) {
    const char *provider = getenv("RPMA_PROVIDER");
    return provider != NULL && strcmp(provider, "verbs") == 0;
}

static const char *test_addr(void) {
    const char *addr = getenv("RPMA_TEST_ADDR");
    return addr != NULL && *addr != '\0' ? addr : "127.0.0.1";
}

// The private data sent is what arrives (tcp), or its prefix (verbs).
static void check_private_data(const struct rpma_conn_private_data *got, const void *sent,
                               size_t len) {
    if (on_verbs())
        CHECK_TRUE(got->len >= len);
    else
        CHECK_INT(got->len, len);
    CHECK_TRUE(got->ptr != NULL && memcmp(got->ptr, sent, len) == 0);
}

// Which librpma the loader gave us, checked against RPMA_EXPECT_LIBRARY.
static void check_library(void) {
    Dl_info info;
    if (dladdr((void *)&rpma_peer_new, &info) == 0 || info.dli_fname == NULL) {
        CHECK_TRUE(!"dladdr(rpma_peer_new) names a library");
        return;
    }
    char in_use[PATH_MAX];
    if (realpath(info.dli_fname, in_use) == NULL)
        snprintf(in_use, sizeof(in_use), "%s", info.dli_fname);
    printf("librpma in use: %s\n", in_use);
    const char *expected = getenv("RPMA_EXPECT_LIBRARY");
    if (expected == NULL)
        return;
    char wanted[PATH_MAX];
    CHECK_TRUE(realpath(expected, wanted) != NULL && strcmp(in_use, wanted) == 0);
}

static void free_port(char *port, size_t size) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY)};
    socklen_t len = sizeof(addr);
    bind(fd, (struct sockaddr *)&addr, sizeof(addr));
    getsockname(fd, (struct sockaddr *)&addr, &len);
    close(fd);
    snprintf(port, size, "%u", ntohs(addr.sin_port));
}

static enum rpma_conn_event next_event(struct rpma_conn *conn) {
    enum rpma_conn_event event = RPMA_CONN_UNDEFINED;
    CHECK_OK(rpma_conn_next_event(conn, &event));
    return event;
}

// The next completion of cq, waiting on its channel when it is empty.
static struct ibv_wc next_completion(struct rpma_cq *cq) {
    struct ibv_wc wc;
    memset(&wc, 0, sizeof(wc));
    int ret;
    while ((ret = rpma_cq_get_wc(cq, 1, &wc, NULL)) == RPMA_E_NO_COMPLETION) {
        if (rpma_cq_wait(cq) != 0)
            break;
    }
    CHECK_OK(ret);
    return wc;
}

enum { kRegion = 4096 };

struct side {
    char memory[kRegion];
    struct rpma_mr_local *mr;
    struct rpma_conn *conn;
    struct rpma_cq *cq;
};

int main(void) {
    printf("%zu librpma functions resolved\n", sizeof(kAllFunctions) / sizeof(kAllFunctions[0]));
    CHECK_INT(sizeof(kAllFunctions) / sizeof(kAllFunctions[0]), 84);
    check_library();

    const char *addr = test_addr();
    struct ibv_context *ctx = NULL, *remote_ctx = NULL;
    CHECK_OK(rpma_utils_get_ibv_context(addr, RPMA_UTIL_IBV_CONTEXT_LOCAL, &ctx));
    CHECK_OK(rpma_utils_get_ibv_context(addr, RPMA_UTIL_IBV_CONTEXT_REMOTE, &remote_ctx));
    if (failures)
        return 1;
    printf("device: %s\n", ctx->device->name);
    CHECK_TRUE(on_verbs() == (strcmp(ctx->device->name, "tcp0") != 0));
    int odp = -1;
    CHECK_OK(rpma_utils_ibv_context_is_odp_capable(ctx, &odp));
    CHECK_INT(odp, 0);  // neither tcp nor Soft-RoCE (Linux 6.1) pages on demand
    struct rpma_peer *peer = NULL;
    CHECK_OK(rpma_peer_new(ctx, &peer));
    if (failures)
        return 1;

    struct side server = {0}, client = {0};
    CHECK_OK(rpma_mr_reg(peer, server.memory, kRegion,
                         RPMA_MR_USAGE_WRITE_DST | RPMA_MR_USAGE_READ_SRC |
                             RPMA_MR_USAGE_FLUSH_TYPE_PERSISTENT | RPMA_MR_USAGE_SEND |
                             RPMA_MR_USAGE_RECV,
                         &server.mr));
    CHECK_OK(rpma_mr_reg(
        peer, client.memory, kRegion,
        RPMA_MR_USAGE_WRITE_SRC | RPMA_MR_USAGE_READ_DST | RPMA_MR_USAGE_SEND | RPMA_MR_USAGE_RECV,
        &client.mr));
    void *ptr = NULL;
    size_t size = 0, desc_size = 0;
    CHECK_OK(rpma_mr_get_ptr(server.mr, &ptr));
    CHECK_TRUE(ptr == server.memory);
    CHECK_OK(rpma_mr_get_size(server.mr, &size));
    CHECK_INT(size, kRegion);
    CHECK_OK(rpma_mr_get_descriptor_size(server.mr, &desc_size));
    CHECK_INT(desc_size, 21);
    CHECK_INT(rpma_mr_advise(server.mr, 0, kRegion, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE, 0),
              on_verbs() ? RPMA_E_NOSUPP : 0);

    // The server's private data: its region and peer configuration.
    char pdata_bytes[22];
    CHECK_OK(rpma_mr_get_descriptor(server.mr, pdata_bytes));
    struct rpma_peer_cfg *pcfg = NULL;
    CHECK_OK(rpma_peer_cfg_new(&pcfg));
    CHECK_OK(rpma_peer_cfg_set_direct_write_to_pmem(pcfg, true));
    CHECK_OK(rpma_peer_cfg_get_descriptor(pcfg, pdata_bytes + 21));
    CHECK_OK(rpma_peer_cfg_delete(&pcfg));

    char port[16];
    free_port(port, sizeof(port));
    struct rpma_ep *ep = NULL;
    CHECK_OK(rpma_ep_listen(peer, addr, port, &ep));
    int ep_fd = -1;
    CHECK_OK(rpma_ep_get_fd(ep, &ep_fd));
    CHECK_TRUE(ep_fd >= 0);

    struct rpma_conn_cfg *cfg = NULL;
    CHECK_OK(rpma_conn_cfg_new(&cfg));
    CHECK_OK(rpma_conn_cfg_set_rcq_size(cfg, 8));
    struct rpma_conn_req *outgoing = NULL;
    CHECK_OK(rpma_conn_req_new(peer, addr, port, cfg, &outgoing));
    CHECK_OK(rpma_conn_req_recv(outgoing, client.mr, 2048, 64, &client));
    char hello[] = "hello from the client";
    struct rpma_conn_private_data pdata = {hello, sizeof(hello)};
    CHECK_OK(rpma_conn_req_connect(&outgoing, &pdata, &client.conn));
    CHECK_TRUE(outgoing == NULL);

    struct rpma_conn_req *incoming = NULL;
    CHECK_OK(rpma_ep_next_conn_req(ep, NULL, &incoming));
    struct rpma_conn_private_data got = {0};
    CHECK_OK(rpma_conn_req_get_private_data(incoming, &got));
    check_private_data(&got, hello, sizeof(hello));
    CHECK_OK(rpma_conn_req_recv(incoming, server.mr, 3072, 64, &server));
    struct rpma_conn_private_data reply = {pdata_bytes, sizeof(pdata_bytes)};
    CHECK_OK(rpma_conn_req_connect(&incoming, &reply, &server.conn));
    CHECK_INT(next_event(client.conn), RPMA_CONN_ESTABLISHED);
    CHECK_INT(next_event(server.conn), RPMA_CONN_ESTABLISHED);
    if (failures)
        return 1;

    int fd = -1;
    uint32_t qp_num = 0;
    CHECK_OK(rpma_conn_get_event_fd(client.conn, &fd));
    CHECK_OK(rpma_conn_get_qp_num(client.conn, &qp_num));
    CHECK_TRUE(qp_num != 0);
    CHECK_INT(rpma_conn_get_compl_fd(client.conn, &fd), RPMA_E_NOT_SHARED_CHNL);
    struct rpma_cq *fired = NULL;
    CHECK_INT(rpma_conn_wait(client.conn, 0, &fired, NULL), RPMA_E_NOT_SHARED_CHNL);
    struct rpma_cq *client_rcq = NULL;
    CHECK_OK(rpma_conn_get_cq(client.conn, &client.cq));
    CHECK_OK(rpma_conn_get_cq(server.conn, &server.cq));
    CHECK_OK(rpma_conn_get_rcq(client.conn, &client_rcq));
    CHECK_TRUE(client_rcq != NULL);
    CHECK_OK(rpma_cq_get_fd(client.cq, &fd));

    // The client learns the server's region and peer config from the reply.
    CHECK_OK(rpma_conn_get_private_data(client.conn, &got));
    check_private_data(&got, pdata_bytes, sizeof(pdata_bytes));
    struct rpma_mr_remote *dst = NULL;
    CHECK_OK(rpma_mr_remote_from_descriptor(got.ptr, 21, &dst));
    CHECK_OK(rpma_peer_cfg_from_descriptor((char *)got.ptr + 21, 1, &pcfg));
    CHECK_OK(rpma_conn_apply_remote_peer_cfg(client.conn, pcfg));
    CHECK_OK(rpma_peer_cfg_delete(&pcfg));

    // write + persistent flush, read back, atomic write
    memcpy(client.memory, "one-sided bytes", 16);
    CHECK_OK(rpma_write(client.conn, dst, 100, client.mr, 0, 16, RPMA_F_COMPLETION_ON_ERROR, NULL));
    CHECK_OK(rpma_flush(client.conn, dst, 100, 16, RPMA_FLUSH_TYPE_PERSISTENT,
                        RPMA_F_COMPLETION_ALWAYS, &dst));
    struct ibv_wc wc = next_completion(client.cq);
    CHECK_INT(wc.status, IBV_WC_SUCCESS);
    CHECK_TRUE(wc.wr_id == (uintptr_t)&dst);
    CHECK_TRUE(memcmp(server.memory + 100, "one-sided bytes", 16) == 0);
    CHECK_OK(rpma_read(client.conn, client.mr, 500, dst, 100, 16, RPMA_F_COMPLETION_ALWAYS, NULL));
    wc = next_completion(client.cq);
    CHECK_INT(wc.opcode, IBV_WC_RDMA_READ);
    CHECK_TRUE(memcmp(client.memory + 500, "one-sided bytes", 16) == 0);
    const char word[8] = {'a', 't', 'o', 'm', 'i', 'c', '!', '\0'};
    CHECK_OK(rpma_atomic_write(client.conn, dst, 256, word, RPMA_F_COMPLETION_ALWAYS, NULL));
    wc = next_completion(client.cq);
    CHECK_INT(wc.status, IBV_WC_SUCCESS);
    CHECK_TRUE(memcmp(server.memory + 256, word, 8) == 0);

    // messages: into the receives posted on the requests, then re-posted
    memcpy(client.memory + 1024, "ping", 5);
    CHECK_OK(rpma_send(client.conn, client.mr, 1024, 5, RPMA_F_COMPLETION_ON_ERROR, NULL));
    wc = next_completion(server.cq);
    CHECK_INT(wc.opcode, IBV_WC_RECV);
    CHECK_TRUE(wc.wr_id == (uintptr_t)&server);
    CHECK_TRUE(strcmp(server.memory + 3072, "ping") == 0);
    CHECK_OK(rpma_recv(server.conn, server.mr, 3072, 64, NULL));
    memcpy(server.memory + 3500, "pong", 5);
    CHECK_OK(rpma_send_with_imm(server.conn, server.mr, 3500, 5, RPMA_F_COMPLETION_ON_ERROR, 0x1234,
                                NULL));
    wc = next_completion(client_rcq);
    CHECK_INT(wc.opcode, IBV_WC_RECV);
    CHECK_TRUE((wc.wc_flags & IBV_WC_WITH_IMM) != 0);
    CHECK_INT(ntohl(wc.imm_data), 0x1234);
    CHECK_TRUE(strcmp(client.memory + 2048, "pong") == 0);
    CHECK_OK(rpma_write_with_imm(client.conn, dst, 0, client.mr, 0, 8, RPMA_F_COMPLETION_ON_ERROR,
                                 0xBEEF, NULL));
    wc = next_completion(server.cq);
    CHECK_INT(wc.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
    CHECK_INT(ntohl(wc.imm_data), 0xBEEF);

    // a shared receive queue of the same peer
    struct rpma_srq_cfg *srq_cfg = NULL;
    CHECK_OK(rpma_srq_cfg_new(&srq_cfg));
    struct rpma_srq *srq = NULL;
    CHECK_OK(rpma_srq_new(peer, srq_cfg, &srq));
    CHECK_OK(rpma_srq_recv(srq, server.mr, 0, 64, NULL));
    struct rpma_cq *srq_rcq = NULL;
    CHECK_OK(rpma_srq_get_rcq(srq, &srq_rcq));
    CHECK_TRUE(srq_rcq != NULL);
    CHECK_OK(rpma_conn_cfg_set_srq(cfg, srq));
    struct rpma_srq *bound = NULL;
    CHECK_OK(rpma_conn_cfg_get_srq(cfg, &bound));
    CHECK_TRUE(bound == srq);
    CHECK_OK(rpma_srq_delete(&srq));
    CHECK_OK(rpma_srq_cfg_delete(&srq_cfg));

    // an outgoing request that is never connected
    CHECK_OK(rpma_conn_req_new(peer, addr, port, NULL, &outgoing));
    CHECK_OK(rpma_conn_req_delete(&outgoing));

    // graceful disconnection: the passive side answers with its own
    // disconnect (on RoCE/IB the active side's CLOSED waits for it)
    CHECK_OK(rpma_conn_disconnect(client.conn));
    CHECK_INT(next_event(server.conn), RPMA_CONN_CLOSED);
    CHECK_OK(rpma_conn_disconnect(server.conn));
    CHECK_INT(next_event(client.conn), RPMA_CONN_CLOSED);
    CHECK_OK(rpma_conn_delete(&client.conn));
    CHECK_OK(rpma_conn_delete(&server.conn));
    CHECK_OK(rpma_mr_remote_delete(&dst));
    CHECK_OK(rpma_conn_cfg_delete(&cfg));
    CHECK_OK(rpma_ep_shutdown(&ep));
    CHECK_OK(rpma_mr_dereg(&client.mr));
    CHECK_OK(rpma_mr_dereg(&server.mr));
    CHECK_OK(rpma_peer_delete(&peer));

    printf("%s: %d failed checks\n", failures ? "FAIL" : "PASS", failures);
    return failures ? 1 : 0;
}
