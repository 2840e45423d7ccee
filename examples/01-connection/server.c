/*
 * server.c -- connection example, server: accepts one connection, answering the client's
 * private data with its own, and waits for the client to disconnect.
 *
 * usage: server <addr> <port>
 */
#include <stdio.h>
#include <stdlib.h>

#include "examples/01-connection/protocol.h"
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
    int ret = ex_peer_new(addr, RPMA_UTIL_IBV_CONTEXT_LOCAL, &peer);
    if (ret != 0)
        return EXIT_FAILURE;
    ret = rpma_ep_listen(peer, addr, port, &ep);
    if (ret != 0)
        return ex_release(ex_report("rpma_ep_listen", ret), &ep, &peer);
    ex_announce_ready();

    struct rpma_conn_private_data answer = {.ptr = SERVER_GREETING, .len = sizeof(SERVER_GREETING)};
    ret = ex_server_accept(ep, NULL, &answer, &conn);
    if (ret != 0)
        return ex_release(ret, &ep, &peer);

    /* the request's private data has moved to the connection */
    struct rpma_conn_private_data greeting;
    ret = rpma_conn_get_private_data(conn, &greeting);
    if (ret != 0)
        ex_report("rpma_conn_get_private_data", ret);
    else
        ret = check_greeting(&greeting, CLIENT_GREETING);
    if (ret == 0)
        printf("server: the client said \"%s\"\n", (const char *)greeting.ptr);

    int closed = ex_wait_closed(&conn);
    return ex_release(ret != 0 ? ret : closed, &ep, &peer);
}
