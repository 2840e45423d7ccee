/*
 * client.c -- connection example, client: connects sending its private data, checks the
 * server's answer and disconnects.
 *
 * usage: client <addr> <port>
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
    struct rpma_conn *conn = NULL;
    int ret = ex_peer_new(addr, RPMA_UTIL_IBV_CONTEXT_REMOTE, &peer);
    if (ret != 0)
        return EXIT_FAILURE;

    struct rpma_conn_private_data greeting = {.ptr = CLIENT_GREETING,
                                              .len = sizeof(CLIENT_GREETING)};
    ret = ex_client_connect(peer, addr, port, NULL, &greeting, &conn);
    if (ret != 0)
        return ex_release(ret, NULL, &peer);

    /* the server's private data arrived with RPMA_CONN_ESTABLISHED */
    struct rpma_conn_private_data answer;
    ret = rpma_conn_get_private_data(conn, &answer);
    if (ret != 0)
        ex_report("rpma_conn_get_private_data", ret);
    else
        ret = check_greeting(&answer, SERVER_GREETING);
    if (ret == 0)
        printf("client: the server said \"%s\"\n", (const char *)answer.ptr);

    int closed = ex_disconnect(&conn);
    return ex_release(ret != 0 ? ret : closed, NULL, &peer);
}
