/*
 * protocol.h -- what the server and the client of the connection example agree on
 */
#ifndef EXAMPLES_CONNECTION_PROTOCOL_H
#define EXAMPLES_CONNECTION_PROTOCOL_H

#include <stdio.h>
#include <string.h>

#include <librpma.h>

/* sent as private data, terminating NUL included */
#define CLIENT_GREETING "Hello, server! -- your client"
#define SERVER_GREETING "Hello, client! -- your server"

/*
 * Checks that the private data starts with `expected`, terminating NUL included. It may be
 * longer than what was sent: rdma_cm pads it on InfiniBand and RoCE (see
 * ex_private_data_check() in examples/common/example_conn.h).
 */
static inline int check_greeting(const struct rpma_conn_private_data *pdata, const char *expected) {
    size_t len = strlen(expected) + 1;
    if (pdata->ptr == NULL || pdata->len < len || memcmp(pdata->ptr, expected, len) != 0) {
        fprintf(stderr, "unexpected private data (%u bytes), expected \"%s\"\n",
                (unsigned)pdata->len, expected);
        return -1;
    }
    return 0;
}

#endif /* EXAMPLES_CONNECTION_PROTOCOL_H */
