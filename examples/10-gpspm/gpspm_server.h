/*
 * gpspm_server.h -- the server of the GPSPM examples ("general purpose server persistency
 * method"): the server keeps its region in a file mapped with libpmem2, but does not declare
 * direct write to PMem, so a client cannot make its writes durable by itself (rpma_flush() of
 * type PERSISTENT is not available). Instead it asks the server with a message, and the server
 * persists the range with libpmem2's persist function (pmem2_get_persist_fn()) and answers.
 *
 * 10-gpspm and 11-gpspm-shared-channel differ only in how the connection's completion queues
 * are set up (see examples/common/completions.h); this is everything else.
 */
#ifndef EXAMPLES_GPSPM_GPSPM_SERVER_H
#define EXAMPLES_GPSPM_GPSPM_SERVER_H

#include <librpma.h>

#include "examples/10-gpspm/protocol.h"
#include "examples/common/example_conn.h"
#include "examples/common/pmem_file.h"

struct gpspm_server {
    const char *path;
    struct ex_pmem_file file;
    struct rpma_peer *peer;
    struct rpma_ep *ep;
    struct rpma_mr_local *region_mr; /* the file: the client's write destination */
    struct gpspm_flush_request *request;
    struct gpspm_flush_response *response; /* right after the request, in one region */
    struct rpma_mr_local *msg_mr;
    struct ex_descriptors desc; /* the region's descriptor, sent as private data */
    unsigned flushed;
};

/*
 * Maps path (zeroed, so the check at the end proves the client's work), creates the peer,
 * registers the file and the message buffers, listens on addr:port and prints "ready".
 */
int gpspm_server_open(struct gpspm_server *srv, const char *addr, const char *port,
                      const char *path);

/*
 * Takes the next connection request (queues as cfg says), posts the receive for the first flush
 * request on it (rpma_conn_req_recv(): nothing can arrive before the buffer) and accepts it,
 * sending the region's descriptor.
 */
int gpspm_server_accept(struct gpspm_server *srv, const struct rpma_conn_cfg *cfg,
                        struct rpma_conn **conn_ptr);

/*
 * Serves GPSPM_CHUNKS flush requests on conn, then waits for the client to disconnect and
 * deletes the connection.
 */
int gpspm_server_serve(struct gpspm_server *srv, struct rpma_conn **conn_ptr);

/*
 * Releases everything, unmaps the file and, when ret is 0, checks the file's content through
 * the file system. Returns EXIT_SUCCESS or EXIT_FAILURE for main().
 */
int gpspm_server_close(struct gpspm_server *srv, int ret);

#endif /* EXAMPLES_GPSPM_GPSPM_SERVER_H */
