/*
 * rpma_ext.h -- rpma_core extensions beyond the librpma 1.2/1.3 API.
 *
 * Exported from librpma.so.0 in the version node RPMA_CORE_EXT_1.0, apart
 * from librpma's own LIBRPMA_1.0, so that a program using them fails to load
 * on Debian's librpma instead of misbehaving.
 */
#ifndef RPMA_CORE_RPMA_EXT_H
#define RPMA_CORE_RPMA_EXT_H 1

#include <sys/socket.h>

#include "librpma.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * rpma_ext_conn_req_move_to_peer -- put an incoming connection request into
 * another peer's protection domain before accepting it.
 *
 * rpma_ep_next_conn_req() creates the request's queue pair in the protection
 * domain of the endpoint's peer, before the server has read the request's
 * private data. Remote keys are valid across a whole protection domain, so a
 * server that listens on one endpoint but must confine each client to the
 * memory its private data names (one peer per set of regions) moves the
 * request there first.
 *
 * The call destroys the request's queue pair and creates it again, with the
 * same CQs and queue sizes, in peer's protection domain. From then on the
 * request, and the connection rpma_conn_req_connect() makes of it, belong to
 * peer: memory registered with any other peer cannot be used by it, neither
 * as local memory of its operations nor as the target of the other side's
 * reads, writes and flushes (those fail at the other side with a remote
 * access error). peer must outlive the connection; the endpoint's peer no
 * longer has to. Moving a request to the peer it already belongs to does
 * nothing. Not thread-safe.
 *
 * Call it before rpma_conn_req_recv(): receives posted on the old queue pair
 * would be lost, so a request with posted receives cannot move.
 *
 * Returns: 0 on success, a negative error code otherwise. On failure the
 * request stays valid for rpma_conn_req_delete(), which rejects it, and as a
 * rule stays in its old peer and may still be accepted; only if its queue
 * pair could not be created again there either (logged) do
 * rpma_conn_req_connect() and rpma_conn_req_recv() fail with RPMA_E_INVAL.
 * Errors:
 *   RPMA_E_INVAL    - req or peer is NULL
 *   RPMA_E_INVAL    - req is an outgoing request (from rpma_conn_req_new())
 *   RPMA_E_INVAL    - peer was made for another device (ibv_context) than the
 *                     one the request arrived on
 *   RPMA_E_INVAL    - req was configured with an SRQ (rpma_conn_cfg_set_srq()):
 *                     the SRQ belongs to the old protection domain
 *   RPMA_E_INVAL    - receives were posted on req (rpma_conn_req_recv())
 *   RPMA_E_NOMEM    - out of memory
 *   RPMA_E_PROVIDER - creating the queue pair in peer's protection domain
 *                     failed
 */
int rpma_ext_conn_req_move_to_peer(struct rpma_conn_req *req, struct rpma_peer *peer);

/*
 * rpma_ext_conn_req_get_peer_addr -- the address a connection request came
 * from (incoming) or goes to (outgoing).
 *
 * A server logs it, or decides by it, before it accepts or rejects the
 * request. *addr receives a struct sockaddr_in or sockaddr_in6 (ss_family
 * says which).
 *
 * Returns: 0 on success, a negative error code otherwise; *addr is untouched
 * on failure.
 * Errors:
 *   RPMA_E_INVAL    - req or addr is NULL
 *   RPMA_E_PROVIDER - the request has no peer address (errno ENOTCONN)
 */
int rpma_ext_conn_req_get_peer_addr(const struct rpma_conn_req *req, struct sockaddr_storage *addr);

#ifdef __cplusplus
}
#endif

#endif /* RPMA_CORE_RPMA_EXT_H */
