/*
 * rpma_ext.h -- rpma_core extensions beyond the librpma 1.2/1.3 API.
 *
 * Exported from librpma.so.0 in the version nodes RPMA_CORE_EXT_1.0 and
 * (rpma_ext_mr_get_remote_stats) RPMA_CORE_EXT_1.1, apart from librpma's own
 * LIBRPMA_1.0, so that a program using them fails to load on Debian's
 * librpma, or on an rpma_core that lacks them, instead of misbehaving.
 */
#ifndef RPMA_CORE_RPMA_EXT_H
#define RPMA_CORE_RPMA_EXT_H 1

#include <stdint.h>
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

/*
 * rpma_ext_cq_wait_timeout -- rpma_cq_wait() that gives up after timeout_ms
 * milliseconds.
 *
 * An application that must notice a peer that stopped answering waits with a
 * deadline. Polling the CQ's fd (rpma_cq_get_fd()) with poll(2) gives it one
 * but leaves all the work to the provider's progress thread; this call waits
 * as rpma_cq_wait() does (the tcp provider reads the connection's socket in
 * the waiting thread, so the completion needs no hand-off between threads)
 * and returns when an event came or the time is up, whichever is first. The
 * tcp provider may overrun timeout_ms by a millisecond or two; verbs waits
 * in poll(2) on the CQ's channel, then takes the event.
 *
 * On success the event is acknowledged and the notification re-armed, as by
 * rpma_cq_wait(): collect every available completion with rpma_cq_get_wc()
 * before waiting again; an event may come with no completion left to
 * collect. With timeout_ms >= 0 the wait is bounded whether or not the CQ's
 * fd is non-blocking, and 0 only takes an event that is already there; a
 * negative timeout_ms waits exactly as rpma_cq_wait() does. One thread
 * waits on a CQ at a time.
 *
 * Returns: 0 on success, a negative error code otherwise.
 * Errors:
 *   RPMA_E_INVAL          - cq is NULL
 *   RPMA_E_PROVIDER       - re-arming the CQ notification failed
 *   RPMA_E_NO_COMPLETION  - no completion event came within timeout_ms (or
 *                           a signal cut the wait short); wait again
 *   RPMA_E_SHARED_CHANNEL - the CQ uses a shared completion channel; use
 *                           rpma_conn_wait()
 *   RPMA_E_UNKNOWN        - the event came from another CQ than cq (the
 *                           channel is cq's own, so this points to memory
 *                           corruption)
 */
int rpma_ext_cq_wait_timeout(struct rpma_cq *cq, int timeout_ms);

/* What peers did to a registered region, see rpma_ext_mr_get_remote_stats. */
struct rpma_ext_mr_remote_stats {
    uint64_t bytes_written;   /* WRITE, WRITE_WITH_IMM payloads, ATOMIC_WRITE */
    uint64_t bytes_read;      /* READ */
    uint64_t flushes;         /* persistent flushes carried out */
    uint64_t bytes_persisted; /* the ranges those flushes made durable */
};

/*
 * rpma_ext_mr_get_remote_stats -- what peers did to a local memory region
 * through one-sided operations since it was registered.
 *
 * A server that hands its memory to clients reports how much they wrote,
 * read and persisted there, without asking the clients. In *stats,
 * bytes_written is what peers wrote into the region (WRITE, the payload of
 * WRITE_WITH_IMM, ATOMIC_WRITE), bytes_read what they read from it, flushes
 * the persistent flushes (RPMA_FLUSH_TYPE_PERSISTENT) the region carried
 * out and bytes_persisted the bytes those made durable. Operations that
 * were refused (outside the region, without the access they need) and
 * flushes whose persist failed count nothing; visibility flushes and the
 * region's own local reads and writes are not counted either. Every counter
 * only grows, from 0 at rpma_mr_reg(), and several connections may count
 * into one region at once: a counter read while operations run includes an
 * operation or not, and the four are not read as one snapshot.
 *
 * The tcp provider counts each operation where it applies it, in the
 * process that registered the region. With verbs the NIC applies them
 * without the CPU and nothing sees them, so the call fails with
 * RPMA_E_NOSUPP and the caller reports the counters as unknown, not 0.
 *
 * Returns: 0 on success, a negative error code otherwise; *stats is
 * untouched on failure.
 * Errors:
 *   RPMA_E_INVAL  - mr or stats is NULL
 *   RPMA_E_NOSUPP - the provider cannot see the peers' operations (verbs)
 */
int rpma_ext_mr_get_remote_stats(const struct rpma_mr_local *mr,
                                 struct rpma_ext_mr_remote_stats *stats);

#ifdef __cplusplus
}
#endif

#endif /* RPMA_CORE_RPMA_EXT_H */
