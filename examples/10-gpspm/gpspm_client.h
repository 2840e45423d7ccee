/*
 * gpspm_client.h -- the client of the GPSPM examples: it writes into the server's file with
 * rpma_write() and, since the server does not declare direct write to PMem, asks the server to
 * make every written range durable with a flush request message (see gpspm_server.h).
 *
 * 10-gpspm and 11-gpspm-shared-channel differ only in how the connection's completion queues
 * are set up (see examples/common/completions.h); this is everything else.
 */
#ifndef EXAMPLES_GPSPM_GPSPM_CLIENT_H
#define EXAMPLES_GPSPM_GPSPM_CLIENT_H

#include <librpma.h>

#include "examples/10-gpspm/protocol.h"

struct gpspm_client {
    struct rpma_peer *peer;
    struct rpma_conn *conn;
    struct rpma_mr_remote *dst; /* the server's file */
    uint8_t *src;               /* GPSPM_REGION_SIZE bytes to write */
    struct rpma_mr_local *src_mr;
    struct gpspm_flush_request *request;
    struct gpspm_flush_response *response; /* right after the request, in one region */
    struct rpma_mr_local *msg_mr;
};

/* Creates the peer and the buffers, connects to addr:port (queues as cfg says). */
int gpspm_client_open(struct gpspm_client *clt, const char *addr, const char *port,
                      const struct rpma_conn_cfg *cfg);

/*
 * Writes the region chunk by chunk. Each chunk: rpma_write() (no completion unless it fails),
 * the receive for the response, the flush request (rpma_send()), then both completions and the
 * response's check.
 */
int gpspm_client_write(struct gpspm_client *clt);

/* Disconnects and releases everything; returns EXIT_SUCCESS or EXIT_FAILURE for main(). */
int gpspm_client_close(struct gpspm_client *clt, int ret);

#endif /* EXAMPLES_GPSPM_GPSPM_CLIENT_H */
