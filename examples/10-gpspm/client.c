/*
 * client.c -- GPSPM example, client: writes the server's file chunk by chunk, asking the server
 * after each write to make the chunk durable. The connection has the default queues: one CQ for
 * everything.
 *
 * usage: client <addr> <port>
 */
#include <stdio.h>
#include <stdlib.h>

#include "examples/10-gpspm/gpspm_client.h"

int main(int argc, char *argv[]) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s <addr> <port>\n", argv[0]);
        return EXIT_FAILURE;
    }
    struct gpspm_client clt;
    int ret = gpspm_client_open(&clt, argv[1], argv[2], NULL);
    if (ret == 0)
        ret = gpspm_client_write(&clt);
    return gpspm_client_close(&clt, ret);
}
