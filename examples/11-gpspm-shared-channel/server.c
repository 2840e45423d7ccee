/*
 * server.c -- GPSPM over a shared completion channel, server: 10-gpspm's server, but its
 * connection has a receive CQ (rcq_size > 0) and both CQs report to one completion channel
 * (rpma_conn_cfg_set_compl_channel(cfg, true)). One fd, rpma_conn_get_compl_fd(), then says
 * that either queue has something, and rpma_conn_wait() says which; rpma_cq_wait() refuses with
 * RPMA_E_SHARED_CHANNEL -- checked here on both queues before serving.
 *
 * usage: server <addr> <port> <file>
 */
#include <stdio.h>
#include <stdlib.h>

#include "examples/10-gpspm/gpspm_server.h"
#include "examples/common/completions.h"

/* receives waiting on the RCQ at once: the request, and a spare */
#define RCQ_SIZE 2

/* Checks what the API promises for a shared channel: one fd, and no rpma_cq_wait(). */
static int check_shared_channel(struct rpma_conn *conn) {
    int fd = -1;
    struct rpma_cq *queues[2] = {NULL, NULL};
    int ret = rpma_conn_get_compl_fd(conn, &fd);
    if (ret != 0)
        return ex_report("rpma_conn_get_compl_fd", ret);
    if ((ret = rpma_conn_get_cq(conn, &queues[0])) != 0)
        return ex_report("rpma_conn_get_cq", ret);
    if ((ret = rpma_conn_get_rcq(conn, &queues[1])) != 0)
        return ex_report("rpma_conn_get_rcq", ret);
    if (queues[1] == NULL) {
        fprintf(stderr, "server: the connection has no receive CQ despite rcq_size %d\n", RCQ_SIZE);
        return -1;
    }
    for (int i = 0; i < 2; i++) {
        ret = rpma_cq_wait(queues[i]);
        if (ret != RPMA_E_SHARED_CHANNEL) {
            fprintf(stderr, "server: rpma_cq_wait() on the %s returned \"%s\", expected \"%s\"\n",
                    i == 0 ? "CQ" : "receive CQ", rpma_err_2str(ret),
                    rpma_err_2str(RPMA_E_SHARED_CHANNEL));
            return -1;
        }
    }
    printf("server: rpma_cq_wait() refuses both queues (\"%s\"); both report to fd %d\n",
           rpma_err_2str(RPMA_E_SHARED_CHANNEL), fd);
    return 0;
}

int main(int argc, char *argv[]) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s <addr> <port> <file>\n", argv[0]);
        return EXIT_FAILURE;
    }
    struct gpspm_server srv;
    struct rpma_conn_cfg *cfg = NULL;
    struct rpma_conn *conn = NULL;
    int ret = gpspm_server_open(&srv, argv[1], argv[2], argv[3]);
    if (ret == 0)
        ret = ex_conn_cfg_new(RCQ_SIZE, true, &cfg);
    if (ret == 0)
        ret = gpspm_server_accept(&srv, cfg, &conn);
    (void)rpma_conn_cfg_delete(&cfg); /* the connection keeps what it was created with */
    if (ret == 0 && (ret = check_shared_channel(conn)) != 0) {
        (void)rpma_conn_disconnect(conn);
        (void)rpma_conn_delete(&conn);
    }
    if (ret == 0)
        ret = gpspm_server_serve(&srv, &conn);
    return gpspm_server_close(&srv, ret);
}
