/*
 * server.c -- GPSPM example, server: keeps its region in a file mapped with libpmem2 without
 * declaring direct write to PMem, persists the ranges its client asks for, and after the client
 * has left checks the file through the file system. The connection has the default queues: one
 * CQ for everything.
 *
 * usage: server <addr> <port> <file>
 */
#include <stdio.h>
#include <stdlib.h>

#include "examples/10-gpspm/gpspm_server.h"

int main(int argc, char *argv[]) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s <addr> <port> <file>\n", argv[0]);
        return EXIT_FAILURE;
    }
    struct gpspm_server srv;
    struct rpma_conn *conn = NULL;
    int ret = gpspm_server_open(&srv, argv[1], argv[2], argv[3]);
    if (ret == 0)
        ret = gpspm_server_accept(&srv, NULL, &conn);
    if (ret == 0)
        ret = gpspm_server_serve(&srv, &conn);
    return gpspm_server_close(&srv, ret);
}
