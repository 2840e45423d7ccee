/*
 * client.c -- GPSPM over a shared completion channel, client: 10-gpspm's client, with a
 * receive CQ and one completion channel for both CQs on its side too. Its sends complete on
 * the CQ, the server's responses on the receive CQ, and it waits for both on one fd with
 * rpma_conn_wait() (examples/common/completions.c).
 *
 * usage: client <addr> <port>
 */
#include <stdio.h>
#include <stdlib.h>

#include "examples/10-gpspm/gpspm_client.h"
#include "examples/common/completions.h"

/* receives waiting on the RCQ at once: the response, and a spare */
#define RCQ_SIZE 2

int main(int argc, char *argv[]) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s <addr> <port>\n", argv[0]);
        return EXIT_FAILURE;
    }
    struct rpma_conn_cfg *cfg = NULL;
    if (ex_conn_cfg_new(RCQ_SIZE, true, &cfg) != 0)
        return EXIT_FAILURE;
    struct gpspm_client clt;
    int ret = gpspm_client_open(&clt, argv[1], argv[2], cfg);
    (void)rpma_conn_cfg_delete(&cfg);
    if (ret == 0)
        ret = gpspm_client_write(&clt);
    return gpspm_client_close(&clt, ret);
}
