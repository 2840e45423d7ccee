/*
 * rpma_ext.h -- rpma_core extensions beyond the librpma 1.2/1.3 API.
 *
 * Exported from librpma.so.0 in the version nodes RPMA_CORE_EXT_1.0,
 * RPMA_CORE_EXT_1.1 (rpma_ext_mr_get_remote_stats), RPMA_CORE_EXT_1.2
 * (rpma_ext_device_query, rpma_ext_tcp_set_options,
 * rpma_ext_tcp_get_options) and RPMA_CORE_EXT_1.3
 * (rpma_ext_conn_ring_doorbell), apart from librpma's own LIBRPMA_1.0, so that
 * a program using them fails to load on Debian's librpma, or on an
 * rpma_core that lacks them, instead of misbehaving.
 */
#ifndef RPMA_CORE_RPMA_EXT_H
#define RPMA_CORE_RPMA_EXT_H 1

#include <stddef.h>
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

/*
 * RPMA_EXT_F_MORE -- a flag for rpma_write(), rpma_write_with_imm(),
 * rpma_send() and rpma_send_with_imm(), beside RPMA_F_COMPLETION_ALWAYS or
 * RPMA_F_COMPLETION_ON_ERROR: the caller posts another work request on the
 * same connection right after this one (a write, then the flush that makes
 * it durable), and the provider may send the two together, as MSG_MORE
 * does, or as one doorbell for a chain of work requests does on a NIC.
 *
 * The tcp provider keeps the request queued until the connection's next
 * post, the next wait on its completion queue, or
 * rpma_ext_conn_ring_doorbell(), whichever is first, and then sends
 * everything queued in one sendmsg(2); so one of those must follow (a poll
 * with rpma_cq_get_wc() sends it too, unless another thread holds the
 * connection at that moment). (A request left waiting goes at the
 * connection's next timer, its next look at the peer at the latest: a
 * safety net, a quarter of the tcp timeout away.) A request of more than
 * 64 KiB goes at once.
 * verbs posts at once, as rpma_read(), rpma_flush() and
 * rpma_atomic_write() do on either provider. It is a hint: what completes,
 * and when data is visible or durable, is as without it, and a librpma that
 * does not know the flag ignores it.
 */
#define RPMA_EXT_F_MORE (1 << 8)

/*
 * rpma_ext_conn_ring_doorbell -- send what posts with RPMA_EXT_F_MORE left
 * waiting on a connection.
 *
 * A program that posts many requests with RPMA_EXT_F_MORE (an event loop
 * posting one per completion it handles) rings once, when it is done
 * posting for now, and they share one sendmsg(2), as a chain of work
 * requests shares one doorbell on a NIC. Nothing waiting is no error; on
 * verbs nothing ever waits.
 *
 * Returns: 0 on success, a negative error code otherwise.
 * Errors:
 *   RPMA_E_INVAL - conn is NULL
 */
int rpma_ext_conn_ring_doorbell(struct rpma_conn *conn);

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

/* What a device can do, see rpma_ext_device_query. */
struct rpma_ext_device_info {
    /* the caller sets sizeof(struct rpma_ext_device_info); fields beyond
     * size are not written */
    size_t size;
    /* "tcp" or "verbs", a static string */
    const char *provider;
    /* 1: an RPMA_FLUSH_TYPE_PERSISTENT flush to any memory this device
     * registers reaches the persistence domain before it completes (tcp: the
     * target persists the range itself); 0: only where the memory itself is
     * byte-granular PMem (verbs, APM) */
    int flush_persists;
    /* 1: registering pages of a DAX file system works (tcp); 0: it needs
     * on-demand paging (verbs; see rpma_utils_ibv_context_is_odp_capable()) */
    int pins_fsdax_pages;
};

/*
 * rpma_ext_device_query -- what the device behind ibv_ctx can do.
 *
 * A server decides how to expose and persist its memory by what the device
 * it serves on does, not by the name of its provider. ibv_ctx comes from
 * rpma_utils_get_ibv_context(). Set info->size first; a caller built
 * against an older rpma_ext.h gets the fields its struct has.
 *
 * Returns: 0 on success, a negative error code otherwise; *info beyond its
 * size field is untouched on failure.
 * Errors:
 *   RPMA_E_INVAL    - ibv_ctx or info is NULL, or info->size is too small
 *                     to hold provider
 *   RPMA_E_PROVIDER - ibv_ctx belongs to no provider of this library
 */
int rpma_ext_device_query(struct ibv_context *ibv_ctx, struct rpma_ext_device_info *info);

/* The tcp provider's knobs, see rpma_ext_tcp_set_options. */
struct rpma_ext_tcp_options {
    /* the caller sets sizeof(struct rpma_ext_tcp_options); fields beyond
     * size are left as they are (set) or not written (get) */
    size_t size;
    /* RPMA_TCP_TIMEOUT_MS: how long a connection waiting for a silent peer
     * lasts, 0 (never breaks) or 10 to 3600000 ms; default 4000 */
    int timeout_ms;
    /* RPMA_TCP_MAX_HANDSHAKING: accepted connections per endpoint that have
     * not sent their request yet, 1 to 65536; default 128 */
    int max_handshaking;
    /* RPMA_TCP_MAX_PENDING: connection requests per endpoint waiting for
     * rpma_ep_next_conn_req(), 1 to 65536; default 128 */
    int max_pending;
    /* RPMA_TCP_PERSIST_THREADS: threads that make large flushed ranges
     * durable, 1 to 64; default 2 */
    int persist_threads;
    /* RPMA_TCP_INLINE_LINGER_US: how long after a wait in the application's
     * thread the provider expects the next, 0 (off) to 10000000 us;
     * default 1000 */
    int inline_linger_us;
};

/*
 * rpma_ext_tcp_set_options -- set the tcp provider's knobs for the process.
 *
 * A program sets what the RPMA_TCP_* environment variables set, without
 * changing its environment. A field of -1 leaves its knob unchanged. Each
 * knob starts from its environment variable (or its default) and a value
 * set here wins over it; unchanged programs keep using the variables.
 *
 * Set before the tcp device is first used (before rpma_ep_listen() or
 * rpma_conn_req_new() on it), the values apply to everything. A later set
 * applies to what reads the knob afterwards: timeout_ms to connections
 * established afterwards; max_handshaking and max_pending to endpoints
 * listening afterwards; inline_linger_us to every connection from its next
 * wait on; persist_threads only until the pool starts, at the first large
 * persistent flush the process serves (it keeps its size after that).
 * Thread-safe.
 *
 * Returns: 0 on success, a negative error code otherwise.
 * Errors:
 *   RPMA_E_INVAL - opts is NULL, opts->size is too small to hold
 *                  timeout_ms, or a field is neither -1 nor in its range
 *                  (nothing is changed then)
 */
int rpma_ext_tcp_set_options(const struct rpma_ext_tcp_options *opts);

/*
 * rpma_ext_tcp_get_options -- the tcp provider's knobs as they are now.
 *
 * Writes every field opts->size holds: what rpma_ext_tcp_set_options() set,
 * else what the environment variable set, else the default.
 *
 * Returns: 0 on success, a negative error code otherwise.
 * Errors:
 *   RPMA_E_INVAL - opts is NULL or opts->size is too small to hold
 *                  timeout_ms
 */
int rpma_ext_tcp_get_options(struct rpma_ext_tcp_options *opts);

#ifdef __cplusplus
}
#endif

#endif /* RPMA_CORE_RPMA_EXT_H */
