/*
 * client.c -- receive-CQ example, client: 08's ping-pong client, with a receive CQ
 * (rcq_size > 0): every pong completes on the receive CQ, every ping's send on the CQ. With
 * --shared-channel both queues report to one completion channel, waited on with
 * rpma_conn_wait(), which says which of them fired.
 *
 * usage: client [--shared-channel] <addr> <port> <rounds>
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "examples/08-messages-ping-pong/ping_pong.h"
#include "examples/14-receive-cq/receive_cq.h"
#include "examples/common/example_conn.h"

int main(int argc, char *argv[]) {
    bool shared = false;
    char **args = NULL;
    if (rcq_parse_mode(argc, argv, &shared, &args) != 4) {
        fprintf(stderr, "usage: %s [--shared-channel] <addr> <port> <rounds>\n", argv[0]);
        return EXIT_FAILURE;
    }
    const char *addr = args[1];
    const char *port = args[2];
    int rounds = atoi(args[3]);
    if (rounds < 1 || rounds > PP_MAX_ROUNDS) {
        fprintf(stderr, "rounds must be 1..%d\n", PP_MAX_ROUNDS);
        return EXIT_FAILURE;
    }
    struct pp_hello hello = {.rounds = (uint32_t)rounds, .tag = (uint32_t)getpid()};

    struct rpma_conn_cfg *cfg = NULL;
    struct rpma_peer *peer = NULL;
    struct rpma_conn *conn = NULL;
    struct pp_buffers bufs = {0};
    if (ex_conn_cfg_new(RCQ_SIZE, shared, &cfg) != 0)
        return EXIT_FAILURE;
    int ret = ex_peer_new(addr, RPMA_UTIL_IBV_CONTEXT_REMOTE, &peer);
    if (ret != 0)
        goto out;
    if ((ret = pp_buffers_new(peer, &bufs)) != 0)
        goto out;
    struct rpma_conn_private_data pdata = {.ptr = &hello, .len = sizeof(hello)};
    if ((ret = ex_client_connect(peer, addr, port, cfg, &pdata, &conn)) != 0)
        goto out;

    struct ex_completions comps;
    ret = rcq_check_queues(conn, shared);
    if (ret == 0)
        ret = ex_completions_init(conn, &comps);
    if (ret == 0)
        ret = pp_client_play(&comps, &bufs, &hello);
    if (ret == 0)
        ret = rcq_check_counts(&comps, hello.rounds, hello.rounds, "client");
    int closed = ex_disconnect(&conn);
    if (ret == 0)
        ret = closed;
out:
    (void)rpma_conn_cfg_delete(&cfg);
    ret = pp_buffers_delete(ret, &bufs);
    return ex_release(ret, NULL, &peer);
}
