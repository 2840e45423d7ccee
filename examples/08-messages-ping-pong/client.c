/*
 * client.c -- ping-pong example, client: connects announcing how many rounds it plays, then
 * in each round sends a ping and checks the server's pong. It also serves 09's server, whose
 * shared receive queue is invisible from here.
 *
 * usage: client <addr> <port> <rounds>
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "examples/08-messages-ping-pong/ping_pong.h"
#include "examples/common/example_conn.h"

int main(int argc, char *argv[]) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s <addr> <port> <rounds>\n", argv[0]);
        return EXIT_FAILURE;
    }
    const char *addr = argv[1];
    const char *port = argv[2];
    int rounds = atoi(argv[3]);
    if (rounds < 1 || rounds > PP_MAX_ROUNDS) {
        fprintf(stderr, "rounds must be 1..%d\n", PP_MAX_ROUNDS);
        return EXIT_FAILURE;
    }
    /* the pid tells this client's messages from those of other clients of the same server */
    struct pp_hello hello = {.rounds = (uint32_t)rounds, .tag = (uint32_t)getpid()};

    struct rpma_peer *peer = NULL;
    struct rpma_conn *conn = NULL;
    struct pp_buffers bufs = {0};
    int ret = ex_peer_new(addr, RPMA_UTIL_IBV_CONTEXT_REMOTE, &peer);
    if (ret != 0)
        return EXIT_FAILURE;
    if ((ret = pp_buffers_new(peer, &bufs)) != 0)
        goto out;
    struct rpma_conn_private_data pdata = {.ptr = &hello, .len = sizeof(hello)};
    if ((ret = ex_client_connect(peer, addr, port, NULL, &pdata, &conn)) != 0)
        goto out;

    struct ex_completions comps;
    ret = ex_completions_init(conn, &comps);
    if (ret == 0)
        ret = pp_client_play(&comps, &bufs, &hello);
    if (ret == 0)
        printf("client %u: %d rounds of ping-pong, every pong right\n", (unsigned)hello.tag,
               rounds);
    int closed = ex_disconnect(&conn);
    if (ret == 0)
        ret = closed;
out:
    ret = pp_buffers_delete(ret, &bufs);
    return ex_release(ret, NULL, &peer);
}
