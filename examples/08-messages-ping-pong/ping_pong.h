/*
 * ping_pong.h -- both halves of the ping-pong conversation, for any queue setup: the examples
 * differ only in how the connection's completion queues are configured (08: one CQ, 14: a
 * separate receive CQ, on its own channel or on one shared with the CQ), which
 * examples/common/completions.h takes care of.
 */
#ifndef EXAMPLES_MESSAGES_PING_PONG_PING_PONG_H
#define EXAMPLES_MESSAGES_PING_PONG_PING_PONG_H

#include <librpma.h>

#include "examples/08-messages-ping-pong/protocol.h"
#include "examples/common/completions.h"

/* One side's two messages in one registered region: `in` is received into, `out` is sent. */
struct pp_buffers {
    struct pp_msg *in;
    struct pp_msg *out;
    struct rpma_mr_local *mr;
};

int pp_buffers_new(struct rpma_peer *peer, struct pp_buffers *bufs);

/* Deregisters and frees; returns ret, or the deregistration's failure if ret is 0. */
int pp_buffers_delete(int ret, struct pp_buffers *bufs);

/* Decodes and checks a client's hello (untrusted private data). */
int pp_hello_decode(const struct rpma_conn_private_data *pdata, struct pp_hello *hello);

/*
 * Client: plays hello->rounds rounds. In each it posts the receive for the pong, then sends the
 * ping, waits for both completions and checks the pong.
 */
int pp_client_play(struct ex_completions *comps, struct pp_buffers *bufs,
                   const struct pp_hello *hello);

/*
 * Server: takes the next connection request (queues as cfg says), reads the client's hello,
 * posts the receive for the first ping on the request (rpma_conn_req_recv(): the ping cannot
 * arrive before its buffer) and accepts.
 */
int pp_server_accept(struct rpma_ep *ep, const struct rpma_conn_cfg *cfg, struct pp_buffers *bufs,
                     struct pp_hello *hello, struct rpma_conn **conn_ptr);

/*
 * Server: answers hello->rounds pings. The receive for the next ping is posted before the pong
 * is sent: the client may send that ping the moment the pong arrives.
 */
int pp_server_play(struct ex_completions *comps, struct pp_buffers *bufs,
                   const struct pp_hello *hello);

#endif /* EXAMPLES_MESSAGES_PING_PONG_PING_PONG_H */
