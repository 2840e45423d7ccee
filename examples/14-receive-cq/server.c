/*
 * server.c -- receive-CQ example, server: 08's ping-pong server, with a receive CQ
 * (rcq_size > 0): every ping completes on the receive CQ, every pong's send on the CQ, and no
 * receive ever on the CQ. With --shared-channel both queues report to one completion channel,
 * waited on with rpma_conn_wait(), which says which of them fired.
 *
 * usage: server [--shared-channel] <addr> <port>
 */
#include <stdio.h>
#include <stdlib.h>

#include "examples/08-messages-ping-pong/ping_pong.h"
#include "examples/14-receive-cq/receive_cq.h"
#include "examples/common/example_conn.h"

int main(int argc, char *argv[]) {
    bool shared = false;
    char **args = NULL;
    if (rcq_parse_mode(argc, argv, &shared, &args) != 3) {
        fprintf(stderr, "usage: %s [--shared-channel] <addr> <port>\n", argv[0]);
        return EXIT_FAILURE;
    }
    const char *addr = args[1];
    const char *port = args[2];

    struct rpma_conn_cfg *cfg = NULL;
    struct rpma_peer *peer = NULL;
    struct rpma_ep *ep = NULL;
    struct rpma_conn *conn = NULL;
    struct pp_buffers bufs = {0};
    if (ex_conn_cfg_new(RCQ_SIZE, shared, &cfg) != 0)
        return EXIT_FAILURE;
    int ret = ex_peer_new(addr, RPMA_UTIL_IBV_CONTEXT_LOCAL, &peer);
    if (ret != 0)
        goto out;
    if ((ret = pp_buffers_new(peer, &bufs)) != 0)
        goto out;
    if ((ret = rpma_ep_listen(peer, addr, port, &ep)) != 0) {
        ex_report("rpma_ep_listen", ret);
        goto out;
    }
    ex_announce_ready();

    struct pp_hello hello;
    if ((ret = pp_server_accept(ep, cfg, &bufs, &hello, &conn)) != 0)
        goto out;
    struct ex_completions comps;
    ret = rcq_check_queues(conn, shared);
    if (ret == 0)
        ret = ex_completions_init(conn, &comps);
    if (ret == 0)
        ret = pp_server_play(&comps, &bufs, &hello);
    if (ret == 0)
        ret = rcq_check_counts(&comps, hello.rounds, hello.rounds, "server");
    int closed = ex_wait_closed(&conn);
    if (ret == 0)
        ret = closed;
out:
    (void)rpma_conn_cfg_delete(&cfg);
    ret = pp_buffers_delete(ret, &bufs);
    return ex_release(ret, &ep, &peer);
}
