/*
 * server.c -- ping-pong example, server: accepts one client with the receive for its first
 * ping already posted, answers every ping with a pong and waits for the client to disconnect.
 *
 * usage: server <addr> <port>
 */
#include <stdio.h>
#include <stdlib.h>

#include "examples/08-messages-ping-pong/ping_pong.h"
#include "examples/common/example_conn.h"

int main(int argc, char *argv[]) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s <addr> <port>\n", argv[0]);
        return EXIT_FAILURE;
    }
    const char *addr = argv[1];
    const char *port = argv[2];

    struct rpma_peer *peer = NULL;
    struct rpma_ep *ep = NULL;
    struct rpma_conn *conn = NULL;
    struct pp_buffers bufs = {0};
    int ret = ex_peer_new(addr, RPMA_UTIL_IBV_CONTEXT_LOCAL, &peer);
    if (ret != 0)
        return EXIT_FAILURE;
    if ((ret = pp_buffers_new(peer, &bufs)) != 0)
        goto out;
    if ((ret = rpma_ep_listen(peer, addr, port, &ep)) != 0) {
        ex_report("rpma_ep_listen", ret);
        goto out;
    }
    ex_announce_ready();

    struct pp_hello hello;
    if ((ret = pp_server_accept(ep, NULL, &bufs, &hello, &conn)) != 0)
        goto out;
    struct ex_completions comps;
    ret = ex_completions_init(conn, &comps);
    if (ret == 0)
        ret = pp_server_play(&comps, &bufs, &hello);
    int closed = ex_wait_closed(&conn);
    if (ret == 0)
        ret = closed;
    if (ret == 0)
        printf("server: answered %u pings of client %u\n", (unsigned)hello.rounds,
               (unsigned)hello.tag);
out:
    ret = pp_buffers_delete(ret, &bufs);
    return ex_release(ret, &ep, &peer);
}
