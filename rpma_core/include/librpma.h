/*
 * librpma.h -- public C API of rpma, a drop-in reimplementation of librpma (API 1.2/1.3)
 *
 * WHAT THIS LIBRARY IS
 *
 * rpma gives an application access to memory that lives on another host -- persistent memory
 * (PMem) or plain DRAM -- through RDMA, so that data moves between the hosts without involving
 * the remote CPU. Two schemes are offered, both running over a connection between two peers:
 *
 *  - Remote memory access (RMA): rpma_read(), rpma_write(), rpma_write_with_imm(),
 *    rpma_atomic_write() and rpma_flush() move data between a locally registered region and
 *    a remote region that the other side has described to us by a descriptor.
 *  - Messaging: rpma_send() and rpma_send_with_imm() deliver a buffer into a receive buffer
 *    that the other side has posted with rpma_recv(), rpma_conn_req_recv() or rpma_srq_recv().
 *
 * Every data-path call only posts the operation. The operation is finished once its completion
 * has been collected from a completion queue (rpma_cq_wait(), rpma_cq_get_wc()). Whether a
 * successful operation produces a completion at all is chosen per call with the flags
 * RPMA_F_COMPLETION_ALWAYS (always) or RPMA_F_COMPLETION_ON_ERROR (failures only). Which
 * side initiated the connection has no influence on what either side may do afterwards.
 *
 * OBJECT MODEL
 *
 *  - struct rpma_peer       one RDMA device (an ibv_context found by rpma_utils_get_ibv_context());
 *                           every other object is created in the scope of a peer.
 *  - struct rpma_peer_cfg   what a peer declares about itself (direct write to PMem); it travels
 *                           to the other side as a descriptor and is applied to a connection.
 *  - struct rpma_mr_local   a registered local memory region with a declared usage.
 *  - struct rpma_mr_remote  the view of the other side's region, decoded from its descriptor.
 *  - struct rpma_conn_cfg   connection tunables: timeout, CQ/RCQ/SQ/RQ sizes, shared
 *                           completion channel, shared receive queue.
 *  - struct rpma_ep         a listening endpoint (server side) yielding incoming requests.
 *  - struct rpma_conn_req   a connection request, outgoing (rpma_conn_req_new()) or incoming
 *                           (rpma_ep_next_conn_req()); rpma_conn_req_connect() turns it into
 *                           a connection.
 *  - struct rpma_conn       a connection; it owns a main CQ and, optionally, a receive CQ.
 *  - struct rpma_cq         a completion queue.
 *  - struct rpma_srq_cfg,
 *    struct rpma_srq        a receive queue (plus optional receive CQ) shared by connections.
 *
 * Typical client: rpma_conn_req_new() -> rpma_conn_req_connect() -> rpma_conn_next_event()
 * until RPMA_CONN_ESTABLISHED -> ... -> rpma_conn_disconnect() -> rpma_conn_next_event() until
 * RPMA_CONN_CLOSED -> rpma_conn_delete(). Typical server: rpma_ep_listen() ->
 * rpma_ep_next_conn_req() -> rpma_conn_req_connect() -> rpma_conn_next_event() until
 * RPMA_CONN_ESTABLISHED -> ... -> rpma_conn_next_event() reports RPMA_CONN_CLOSED ->
 * rpma_conn_disconnect() -> rpma_conn_delete(); rpma_ep_shutdown() when no more clients are
 * expected.
 *
 * CONVENTIONS
 *
 * Every int-returning function returns 0 on success or one negative RPMA_E_* code; a
 * non-negative result is the only reliable sign of success. Output parameters are written only
 * on success unless a function says otherwise. The *_delete()/rpma_mr_dereg()/
 * rpma_ep_shutdown() functions take the address of the handle; a NULL handle there is accepted
 * as a no-op returning 0. rpma_err_2str() turns a code into text, the logging API (bottom of this
 * file) gives the details of a failure.
 *
 * DIRECT WRITE TO PMEM AND FLUSHING
 *
 * A platform supports "direct write to PMem" when an RDMA write, once flushed, is guaranteed to
 * be persistent -- e.g. on Intel platforms with DDIO disabled for the NIC's root port. Because
 * assuming it wrongly may corrupt PMem, it is off by default. The peer owning the PMem states it
 * with rpma_peer_cfg_set_direct_write_to_pmem(), ships the rpma_peer_cfg_get_descriptor() bytes to
 * its partner, which rebuilds it with rpma_peer_cfg_from_descriptor() and applies it with
 * rpma_conn_apply_remote_peer_cfg(). Only then may rpma_flush(RPMA_FLUSH_TYPE_PERSISTENT) be used.
 *
 * NON-BLOCKING OPERATION
 *
 * rpma_ep_next_conn_req(), rpma_conn_next_event(), rpma_cq_wait() and rpma_conn_wait() block by
 * default. Their descriptors (rpma_ep_get_fd(), rpma_conn_get_event_fd(), rpma_cq_get_fd(),
 * rpma_conn_get_compl_fd()) may be switched to O_NONBLOCK with fcntl(2), which makes the
 * matching call non-blocking, and may be watched with poll(2)/epoll(7).
 *
 * QUEUES
 *
 * Posted operations occupy the send queue (SQ) or receive queue (RQ) of the connection and their
 * completions occupy a CQ. An entry is held until its own completion, or that of a later
 * operation, is generated. Queue lengths are set per connection with rpma_conn_cfg_set_*_size()
 * and take effect in rpma_conn_req_new()/rpma_ep_next_conn_req(). Oversized queues cost NIC
 * resources and performance.
 *
 * PROVIDERS
 *
 * This implementation has two transports behind the same API and semantics: the "verbs"
 * provider, built on rdma-core (libibverbs + librdmacm) and used with real RDMA NICs or
 * Soft-RoCE, and the "tcp" provider, a software transport that needs no RDMA hardware. The
 * environment variable RPMA_PROVIDER selects it: "verbs", "tcp", or "auto" (the default), which
 * uses verbs when an RDMA device serves the address and tcp otherwise. Failures inside either
 * transport are reported as RPMA_E_PROVIDER. On-Demand Paging (ODP), needed to register
 * FSDAX-mapped PMem, is used automatically where the device supports it.
 *
 * THREAD SAFETY
 *
 * As in librpma: an endpoint must be used by one thread only, and a connection by one thread at
 * a time. rpma_mr_reg(), rpma_mr_dereg(), rpma_conn_req_new(), rpma_conn_req_delete(),
 * rpma_ep_listen(), rpma_ep_next_conn_req(), rpma_ep_shutdown(), rpma_srq_new() and
 * rpma_srq_delete() are not thread-safe and must be serialized by the caller. A user-supplied
 * logging function must be thread-safe.
 */

#ifndef RPMA_CORE_LIBRPMA_H
#define RPMA_CORE_LIBRPMA_H 1

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <infiniband/verbs.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ============================================================================================ */
/* constants and error codes                                                                    */
/* ============================================================================================ */

/* legacy wait flag, kept for source compatibility; no function in this API interprets it */
#define RPMA_W_WAIT_FOR_COMPLETION (1)

#define RPMA_E_UNKNOWN (-100000)         /* unknown error */
#define RPMA_E_NOSUPP (-100001)          /* operation not supported */
#define RPMA_E_PROVIDER (-100002)        /* the transport (provider) reported a failure */
#define RPMA_E_NOMEM (-100003)           /* out of memory */
#define RPMA_E_INVAL (-100004)           /* invalid argument */
#define RPMA_E_NO_COMPLETION (-100005)   /* no completion available yet */
#define RPMA_E_NO_EVENT (-100006)        /* no event available yet */
#define RPMA_E_AGAIN (-100007)           /* temporary failure; retrying may succeed */
#define RPMA_E_SHARED_CHANNEL (-100008)  /* the completion channel is shared by CQ and RCQ */
#define RPMA_E_NOT_SHARED_CHNL (-100009) /* the completion channel is not shared */

/* ============================================================================================ */
/* RDMA device lookup                                                                           */
/* ============================================================================================ */

/* default connection-establishment timeout [ms] (see rpma_conn_cfg_new()) */
#define RPMA_DEFAULT_TIMEOUT_MS 1000

/* how rpma_utils_get_ibv_context() interprets its address */
enum rpma_util_ibv_context_type {
    RPMA_UTIL_IBV_CONTEXT_LOCAL, /* the address is one of this host's addresses */
    RPMA_UTIL_IBV_CONTEXT_REMOTE /* the address belongs to the peer we want to reach */
};

/*
 * rpma_utils_get_ibv_context -- find the RDMA device serving an IPv4/IPv6 address.
 *
 * With RPMA_UTIL_IBV_CONTEXT_LOCAL the device owning the local address addr is returned; with
 * RPMA_UTIL_IBV_CONTEXT_REMOTE the device that would be used to reach addr. The lookup uses the
 * reliable, connection-oriented RDMA_PS_TCP port space. The context is owned by the library;
 * pass it to rpma_peer_new().
 *
 * Returns: 0 on success, a negative error code otherwise; *ibv_ctx_ptr is untouched on failure.
 * Errors:
 *   RPMA_E_INVAL    - addr or ibv_ctx_ptr is NULL, or type is not a known enumerator
 *   RPMA_E_INVAL    - the environment variable RPMA_PROVIDER is set to something other than
 *                     "auto", "verbs" or "tcp"
 *   RPMA_E_NOMEM    - out of memory
 *   RPMA_E_PROVIDER - address info lookup, CM ID creation, address binding or address
 *                     resolution failed (details in the log)
 */
int rpma_utils_get_ibv_context(const char *addr, enum rpma_util_ibv_context_type type,
                               struct ibv_context **ibv_ctx_ptr);

/*
 * rpma_utils_ibv_context_is_odp_capable -- tell whether a device supports On-Demand Paging.
 *
 * Queries the extended device attributes of ibv_ctx and stores non-zero in *is_odp_capable when
 * ODP is usable for RC memory regions, 0 otherwise.
 *
 * Returns: 0 on success, a negative error code otherwise; *is_odp_capable is undefined on
 * failure.
 * Errors:
 *   RPMA_E_INVAL    - ibv_ctx or is_odp_capable is NULL
 *   RPMA_E_PROVIDER - ibv_ctx belongs to no provider of this library (it did not come from
 *                     rpma_utils_get_ibv_context()), or querying its attributes failed
 */
int rpma_utils_ibv_context_is_odp_capable(struct ibv_context *ibv_ctx, int *is_odp_capable);

/* ============================================================================================ */
/* peer configuration                                                                           */
/* ============================================================================================ */

struct rpma_peer_cfg;

/*
 * rpma_peer_cfg_new -- create a peer configuration object.
 *
 * The new object declares no direct-write-to-PMem support.
 *
 * Returns: 0 on success, a negative error code otherwise; *pcfg_ptr is untouched on failure.
 * Errors:
 *   RPMA_E_INVAL - pcfg_ptr is NULL
 *   RPMA_E_NOMEM - out of memory
 */
int rpma_peer_cfg_new(struct rpma_peer_cfg **pcfg_ptr);

/*
 * rpma_peer_cfg_delete -- destroy a peer configuration object.
 *
 * Frees *pcfg_ptr and sets it to NULL; a NULL *pcfg_ptr is a no-op.
 *
 * Returns: 0 on success, a negative error code otherwise; *pcfg_ptr is not reset on failure.
 * Errors:
 *   RPMA_E_INVAL - pcfg_ptr is NULL
 */
int rpma_peer_cfg_delete(struct rpma_peer_cfg **pcfg_ptr);

/*
 * rpma_peer_cfg_set_direct_write_to_pmem -- declare whether direct write to PMem works here.
 *
 * Set it to true only when this platform really makes RDMA writes to its PMem persistent once
 * flushed (see the file overview); the remote side relies on it for persistent flushes.
 *
 * Returns: 0 on success, a negative error code otherwise.
 * Errors:
 *   RPMA_E_INVAL - pcfg is NULL
 */
int rpma_peer_cfg_set_direct_write_to_pmem(struct rpma_peer_cfg *pcfg, bool supported);

/*
 * rpma_peer_cfg_get_direct_write_to_pmem -- read the direct-write-to-PMem declaration.
 *
 * Returns: 0 on success, a negative error code otherwise.
 * Errors:
 *   RPMA_E_INVAL - pcfg or supported is NULL
 */
int rpma_peer_cfg_get_direct_write_to_pmem(const struct rpma_peer_cfg *pcfg, bool *supported);

/*
 * rpma_peer_cfg_get_descriptor -- serialize a peer configuration for the other side.
 *
 * Writes rpma_peer_cfg_get_descriptor_size() bytes to desc, which must be at least that large.
 * The bytes are not authenticated: ship them over a trusted channel (see
 * rpma_peer_cfg_from_descriptor()).
 *
 * Returns: 0 on success, a negative error code otherwise.
 * Errors:
 *   RPMA_E_INVAL - pcfg or desc is NULL
 */
int rpma_peer_cfg_get_descriptor(const struct rpma_peer_cfg *pcfg, void *desc);

/*
 * rpma_peer_cfg_get_descriptor_size -- size in bytes of a peer configuration descriptor.
 *
 * Returns: 0 on success, a negative error code otherwise.
 * Errors:
 *   RPMA_E_INVAL - pcfg or desc_size is NULL
 */
int rpma_peer_cfg_get_descriptor_size(const struct rpma_peer_cfg *pcfg, size_t *desc_size);

/*
 * rpma_peer_cfg_from_descriptor -- rebuild a peer configuration from a received descriptor.
 *
 * Security: a descriptor sent over an unprotected path (e.g. connection private data) can be
 * altered in transit and silently change how the remote side persists data. Prefer
 * transferring configuration over an authenticated, encrypted channel (TLS).
 *
 * Returns: 0 on success, a negative error code otherwise; *pcfg_ptr is untouched on failure.
 * Errors:
 *   RPMA_E_INVAL - desc or pcfg_ptr is NULL, or desc_size is smaller than a descriptor
 *   RPMA_E_NOMEM - out of memory
 */
int rpma_peer_cfg_from_descriptor(const void *desc, size_t desc_size,
                                  struct rpma_peer_cfg **pcfg_ptr);

/* ============================================================================================ */
/* peer                                                                                         */
/* ============================================================================================ */

struct rpma_peer;

/*
 * rpma_peer_new -- create a peer on top of an RDMA device context.
 *
 * Allocates a protection domain on ibv_ctx (normally obtained from
 * rpma_utils_get_ibv_context()) and probes the device capabilities (ODP, native atomic write).
 * The peer must outlive every object created from it.
 *
 * Returns: 0 on success, a negative error code otherwise; *peer_ptr is untouched on failure.
 * Errors:
 *   RPMA_E_INVAL    - ibv_ctx or peer_ptr is NULL
 *   RPMA_E_NOMEM    - allocating the protection domain failed with ENOMEM, or out of memory
 *   RPMA_E_PROVIDER - allocating the protection domain failed with an error other than ENOMEM
 *   RPMA_E_PROVIDER - ibv_ctx belongs to no provider of this library (it did not come from
 *                     rpma_utils_get_ibv_context())
 */
int rpma_peer_new(struct ibv_context *ibv_ctx, struct rpma_peer **peer_ptr);

/*
 * rpma_peer_delete -- destroy a peer.
 *
 * Releases the protection domain and sets *peer_ptr to NULL; a NULL *peer_ptr is a no-op.
 * Delete all objects created from the peer first. A failure to release the protection domain
 * (e.g. memory still registered in it) is logged, not returned: the peer is gone either way.
 *
 * Returns: 0 on success, a negative error code otherwise; *peer_ptr is not reset on failure.
 * Errors:
 *   RPMA_E_INVAL - peer_ptr is NULL
 */
int rpma_peer_delete(struct rpma_peer **peer_ptr);

/* ============================================================================================ */
/* memory regions                                                                               */
/* ============================================================================================ */

struct rpma_mr_local;
struct rpma_mr_remote;

/* usage bits of a memory region (OR them together for rpma_mr_reg()) */
#define RPMA_MR_USAGE_READ_SRC (1 << 0)              /* source of rpma_read() (remote side) */
#define RPMA_MR_USAGE_READ_DST (1 << 1)              /* destination of rpma_read() (local) */
#define RPMA_MR_USAGE_WRITE_SRC (1 << 2)             /* source of rpma_write() (local) */
#define RPMA_MR_USAGE_WRITE_DST (1 << 3)             /* destination of rpma_write() (remote) */
#define RPMA_MR_USAGE_FLUSH_TYPE_VISIBILITY (1 << 4) /* target of visibility flushes */
#define RPMA_MR_USAGE_FLUSH_TYPE_PERSISTENT (1 << 5) /* target of persistent flushes */
#define RPMA_MR_USAGE_SEND (1 << 6)                  /* source of rpma_send() */
#define RPMA_MR_USAGE_RECV (1 << 7)                  /* destination of a receive */

/*
 * rpma_mr_reg -- register local memory and create a local region object.
 *
 * usage is a non-empty OR of RPMA_MR_USAGE_* bits naming every role the region will play; the
 * usage travels in the descriptor, and the remote side's flush types are derived from it. When
 * plain registration is refused and the device supports ODP, registration is retried with
 * On-Demand Paging (required e.g. for FSDAX-mapped PMem). Not thread-safe.
 *
 * Returns: 0 on success, a negative error code otherwise; *mr_ptr is untouched on failure.
 * Errors:
 *   RPMA_E_INVAL    - peer, ptr or mr_ptr is NULL
 *   RPMA_E_INVAL    - size is 0, or usage is 0 or has bits outside RPMA_MR_USAGE_*
 *   RPMA_E_NOMEM    - out of memory
 *   RPMA_E_PROVIDER - the memory registration failed
 */
int rpma_mr_reg(struct rpma_peer *peer, void *ptr, size_t size, int usage,
                struct rpma_mr_local **mr_ptr);

/*
 * rpma_mr_dereg -- deregister memory and destroy a local region object.
 *
 * Sets *mr_ptr to NULL on success; a NULL *mr_ptr is a no-op. No operation using the region may
 * still be in flight. Not thread-safe. A failure of the transport to deregister the memory is
 * logged, not returned: the region object is gone either way.
 *
 * Returns: 0 on success, a negative error code otherwise; *mr_ptr is not reset on failure.
 * Errors:
 *   RPMA_E_INVAL - mr_ptr is NULL
 */
int rpma_mr_dereg(struct rpma_mr_local **mr_ptr);

/*
 * rpma_mr_get_descriptor -- serialize a local region for the other side.
 *
 * Writes rpma_mr_get_descriptor_size() bytes (address, length, remote key and usage, in a fixed
 * little-endian layout) to desc. The other side decodes them with
 * rpma_mr_remote_from_descriptor(). The bytes are not authenticated (see there).
 *
 * Returns: 0 on success, a negative error code otherwise.
 * Errors:
 *   RPMA_E_INVAL - mr or desc is NULL
 */
int rpma_mr_get_descriptor(const struct rpma_mr_local *mr, void *desc);

/*
 * rpma_mr_remote_from_descriptor -- build a remote region object from a received descriptor.
 *
 * The result can be the remote side of rpma_read(), rpma_write(), rpma_write_with_imm(),
 * rpma_atomic_write() and rpma_flush(). Security: a descriptor altered in transit redirects
 * writes to another location; transfer it over an authenticated, encrypted channel (TLS).
 *
 * Returns: 0 on success, a negative error code otherwise; *mr_ptr is untouched on failure.
 * Errors:
 *   RPMA_E_INVAL  - desc or mr_ptr is NULL
 *   RPMA_E_INVAL  - desc_size is too small for a descriptor, or the decoded usage is 0
 *   RPMA_E_NOMEM  - out of memory
 */
int rpma_mr_remote_from_descriptor(const void *desc, size_t desc_size,
                                   struct rpma_mr_remote **mr_ptr);

/*
 * rpma_mr_get_descriptor_size -- size in bytes of a memory region descriptor.
 *
 * Returns: 0 on success, a negative error code otherwise; *desc_size is untouched on failure.
 * Errors:
 *   RPMA_E_INVAL - mr or desc_size is NULL
 */
int rpma_mr_get_descriptor_size(const struct rpma_mr_local *mr, size_t *desc_size);

/*
 * rpma_mr_get_ptr -- start address of a local region.
 *
 * Returns: 0 on success, a negative error code otherwise; *ptr is untouched on failure.
 * Errors:
 *   RPMA_E_INVAL - mr or ptr is NULL
 */
int rpma_mr_get_ptr(const struct rpma_mr_local *mr, void **ptr);

/*
 * rpma_mr_get_size -- size in bytes of a local region.
 *
 * Returns: 0 on success, a negative error code otherwise; *size is untouched on failure.
 * Errors:
 *   RPMA_E_INVAL - mr or size is NULL
 */
int rpma_mr_get_size(const struct rpma_mr_local *mr, size_t *size);

/*
 * rpma_mr_remote_get_size -- size in bytes of a remote region.
 *
 * Returns: 0 on success, a negative error code otherwise; *size is untouched on failure.
 * Errors:
 *   RPMA_E_INVAL - mr or size is NULL
 */
int rpma_mr_remote_get_size(const struct rpma_mr_remote *mr, size_t *size);

/*
 * rpma_mr_remote_get_flush_type -- flush types a remote region accepts.
 *
 * Stores the subset of RPMA_MR_USAGE_FLUSH_TYPE_VISIBILITY | RPMA_MR_USAGE_FLUSH_TYPE_PERSISTENT
 * present in the region's usage (possibly 0).
 *
 * Returns: 0 on success, a negative error code otherwise; *flush_type is untouched on failure.
 * Errors:
 *   RPMA_E_INVAL - mr or flush_type is NULL
 */
int rpma_mr_remote_get_flush_type(const struct rpma_mr_remote *mr, int *flush_type);

/*
 * rpma_mr_remote_delete -- destroy a remote region object.
 *
 * Only the local bookkeeping is freed; the memory on the other side is unaffected. Sets *mr_ptr
 * to NULL on success; a NULL *mr_ptr is a no-op.
 *
 * Returns: 0 on success, a negative error code otherwise; *mr_ptr is not reset on failure.
 * Errors:
 *   RPMA_E_INVAL - mr_ptr is NULL
 */
int rpma_mr_remote_delete(struct rpma_mr_remote **mr_ptr);

/*
 * rpma_mr_advise -- give the device advice about a range of a local region.
 *
 * The range is [offset, offset + len) inside mr; advice and flags take the values of
 * ibv_advise_mr(3) (e.g. prefetching an ODP range). mr must be a valid region.
 *
 * Returns: 0 on success, a negative error code otherwise.
 * Errors:
 *   RPMA_E_INVAL    - mr is NULL
 *   RPMA_E_INVAL    - the range exceeds the region, the region's usage does not permit this
 *                     advice, or flags are invalid
 *   RPMA_E_NOSUPP   - advising is not supported by the system or device
 *   RPMA_E_PROVIDER - the advise call failed for any other reason
 */
int rpma_mr_advise(struct rpma_mr_local *mr, size_t offset, size_t len, int advice, uint32_t flags);

/* ============================================================================================ */
/* connection configuration                                                                     */
/* ============================================================================================ */

struct rpma_conn_cfg;

/*
 * rpma_conn_cfg_new -- create a connection configuration with default values.
 *
 * Defaults: timeout_ms = 1000 (RPMA_DEFAULT_TIMEOUT_MS), cq_size = 10, rcq_size = 0 (no receive
 * CQ), sq_size = 10, rq_size = 10, shared completion channel = false, srq = NULL. Passing a NULL
 * cfg to rpma_conn_req_new()/rpma_ep_next_conn_req() is equivalent to these defaults.
 *
 * Returns: 0 on success, a negative error code otherwise; *cfg_ptr is untouched on failure.
 * Errors:
 *   RPMA_E_INVAL - cfg_ptr is NULL
 *   RPMA_E_NOMEM - out of memory
 */
int rpma_conn_cfg_new(struct rpma_conn_cfg **cfg_ptr);

/*
 * rpma_conn_cfg_delete -- destroy a connection configuration.
 *
 * Connections already created with it are unaffected. A NULL *cfg_ptr is a no-op.
 *
 * Returns: 0 on success, a negative error code otherwise; *cfg_ptr is reset to NULL whether or
 * not the call succeeds.
 * Errors:
 *   RPMA_E_INVAL - cfg_ptr is NULL
 */
int rpma_conn_cfg_delete(struct rpma_conn_cfg **cfg_ptr);

/*
 * rpma_conn_cfg_set_timeout -- set the connection-establishment timeout in milliseconds.
 *
 * Applies to address and route resolution in rpma_conn_req_new(). Default: 1000.
 *
 * Returns: 0 on success, a negative error code otherwise.
 * Errors:
 *   RPMA_E_INVAL - cfg is NULL or timeout_ms < 0
 */
int rpma_conn_cfg_set_timeout(struct rpma_conn_cfg *cfg, int timeout_ms);

/*
 * rpma_conn_cfg_get_timeout -- read the connection-establishment timeout in milliseconds.
 *
 * Returns: 0 on success, a negative error code otherwise; *timeout_ms is untouched on failure.
 * Errors:
 *   RPMA_E_INVAL - cfg or timeout_ms is NULL
 */
int rpma_conn_cfg_get_timeout(const struct rpma_conn_cfg *cfg, int *timeout_ms);

/*
 * rpma_conn_cfg_set_cq_size -- set the length of the connection's main CQ.
 *
 * Default: 10. The value is not validated here; an unusable size makes connection-request
 * creation fail with RPMA_E_PROVIDER.
 *
 * Returns: 0 on success, a negative error code otherwise.
 * Errors:
 *   RPMA_E_INVAL - cfg is NULL
 */
int rpma_conn_cfg_set_cq_size(struct rpma_conn_cfg *cfg, uint32_t cq_size);

/*
 * rpma_conn_cfg_get_compl_channel -- read whether CQ and RCQ share one completion channel.
 *
 * Returns: 0 on success, a negative error code otherwise; *shared is untouched on failure.
 * Errors:
 *   RPMA_E_INVAL - cfg or shared is NULL
 */
int rpma_conn_cfg_get_compl_channel(const struct rpma_conn_cfg *cfg, bool *shared);

/*
 * rpma_conn_cfg_set_compl_channel -- choose whether CQ and RCQ share one completion channel.
 *
 * Default: false. With a shared channel, completions of both queues are awaited with
 * rpma_conn_wait() / rpma_conn_get_compl_fd(), and rpma_cq_wait() on either queue fails with
 * RPMA_E_SHARED_CHANNEL. A shared channel cannot be combined with an SRQ that has its own
 * receive CQ (connection-request creation then fails with RPMA_E_INVAL).
 *
 * Returns: 0 on success, a negative error code otherwise.
 * Errors:
 *   RPMA_E_INVAL - cfg is NULL
 */
int rpma_conn_cfg_set_compl_channel(struct rpma_conn_cfg *cfg, bool shared);

/*
 * rpma_conn_cfg_get_cq_size -- read the length of the main CQ.
 *
 * Returns: 0 on success, a negative error code otherwise; *cq_size is untouched on failure.
 * Errors:
 *   RPMA_E_INVAL - cfg or cq_size is NULL
 */
int rpma_conn_cfg_get_cq_size(const struct rpma_conn_cfg *cfg, uint32_t *cq_size);

/*
 * rpma_conn_cfg_set_rcq_size -- set the length of the receive CQ.
 *
 * Default: 0, meaning no receive CQ: receive completions then land in the main CQ. A value > 0
 * creates a separate receive CQ holding all receive completions (see rpma_conn_get_rcq()).
 *
 * Returns: 0 on success, a negative error code otherwise.
 * Errors:
 *   RPMA_E_INVAL - cfg is NULL
 */
int rpma_conn_cfg_set_rcq_size(struct rpma_conn_cfg *cfg, uint32_t rcq_size);

/*
 * rpma_conn_cfg_get_rcq_size -- read the length of the receive CQ (0: none).
 *
 * Returns: 0 on success, a negative error code otherwise; *rcq_size is untouched on failure.
 * Errors:
 *   RPMA_E_INVAL - cfg or rcq_size is NULL
 */
int rpma_conn_cfg_get_rcq_size(const struct rpma_conn_cfg *cfg, uint32_t *rcq_size);

/*
 * rpma_conn_cfg_set_sq_size -- set the length of the send queue.
 *
 * Default: 10. Bounds the number of RMA operations and sends outstanding at once.
 *
 * Returns: 0 on success, a negative error code otherwise.
 * Errors:
 *   RPMA_E_INVAL - cfg is NULL
 */
int rpma_conn_cfg_set_sq_size(struct rpma_conn_cfg *cfg, uint32_t sq_size);

/*
 * rpma_conn_cfg_get_sq_size -- read the length of the send queue.
 *
 * Returns: 0 on success, a negative error code otherwise; *sq_size is untouched on failure.
 * Errors:
 *   RPMA_E_INVAL - cfg or sq_size is NULL
 */
int rpma_conn_cfg_get_sq_size(const struct rpma_conn_cfg *cfg, uint32_t *sq_size);

/*
 * rpma_conn_cfg_set_rq_size -- set the length of the receive queue.
 *
 * Default: 10. Bounds the number of receive buffers posted at once (ignored with an SRQ).
 *
 * Returns: 0 on success, a negative error code otherwise.
 * Errors:
 *   RPMA_E_INVAL - cfg is NULL
 */
int rpma_conn_cfg_set_rq_size(struct rpma_conn_cfg *cfg, uint32_t rq_size);

/*
 * rpma_conn_cfg_get_rq_size -- read the length of the receive queue.
 *
 * Returns: 0 on success, a negative error code otherwise; *rq_size is untouched on failure.
 * Errors:
 *   RPMA_E_INVAL - cfg or rq_size is NULL
 */
int rpma_conn_cfg_get_rq_size(const struct rpma_conn_cfg *cfg, uint32_t *rq_size);

/* ============================================================================================ */
/* shared receive queue attached to a connection configuration                                  */
/* ============================================================================================ */

struct rpma_srq;

/*
 * rpma_conn_cfg_set_srq -- make connections created with cfg use a shared receive queue.
 *
 * Default: none. Receives of such connections are posted with rpma_srq_recv(); if the SRQ has its
 * own receive CQ, their completions appear there instead of in the connection's queues.
 *
 * Returns: 0 on success, a negative error code otherwise.
 * Errors:
 *   RPMA_E_INVAL - cfg is NULL, or srq is NULL (as in librpma 1.2)
 */
int rpma_conn_cfg_set_srq(struct rpma_conn_cfg *cfg, struct rpma_srq *srq);

/*
 * rpma_conn_cfg_get_srq -- read the shared receive queue set in cfg (NULL when none).
 *
 * Returns: 0 on success, a negative error code otherwise; *srq_ptr is untouched on failure.
 * Errors:
 *   RPMA_E_INVAL - cfg or srq_ptr is NULL
 */
int rpma_conn_cfg_get_srq(const struct rpma_conn_cfg *cfg, struct rpma_srq **srq_ptr);

/* ============================================================================================ */
/* connection                                                                                   */
/* ============================================================================================ */

struct rpma_conn;

/*
 * rpma_conn_get_event_fd -- file descriptor signalling pending connection events.
 *
 * The descriptor becomes readable when rpma_conn_next_event() has an event to return; put it in
 * O_NONBLOCK mode to make rpma_conn_next_event() non-blocking. Owned by the connection.
 *
 * Returns: 0 on success, a negative error code otherwise; *fd is untouched on failure.
 * Errors:
 *   RPMA_E_INVAL - conn or fd is NULL
 */
int rpma_conn_get_event_fd(const struct rpma_conn *conn, int *fd);

/* connection events reported by rpma_conn_next_event() */
enum rpma_conn_event {
    RPMA_CONN_UNDEFINED = -1, /* no or unrecognized event */
    RPMA_CONN_ESTABLISHED,    /* the connection is up */
    RPMA_CONN_CLOSED,         /* the connection was closed (by either side) */
    RPMA_CONN_LOST,           /* the connection failed or its device went away */
    RPMA_CONN_REJECTED,       /* the other side refused the connection */
    RPMA_CONN_UNREACHABLE     /* the other side could not be reached */
};

/*
 * rpma_conn_next_event -- wait for and return the next connection event.
 *
 * Blocks until an event arrives (unless the event fd is non-blocking). On the active side the
 * private data sent by the accepting side becomes available through
 * rpma_conn_get_private_data() once RPMA_CONN_ESTABLISHED has been returned here.
 *
 * Returns: 0 on success, a negative error code otherwise; *event is untouched on failure.
 * Errors:
 *   RPMA_E_INVAL    - conn or event is NULL
 *   RPMA_E_NO_EVENT - the event fd is non-blocking and no event is pending
 *   RPMA_E_UNKNOWN  - an event that maps to no rpma_conn_event arrived
 *   RPMA_E_PROVIDER - fetching or acknowledging the event failed
 */
int rpma_conn_next_event(struct rpma_conn *conn, enum rpma_conn_event *event);

/*
 * rpma_utils_conn_event_2str -- printable name of a connection event.
 *
 * Returns: a pointer to a static, constant string; values outside enum rpma_conn_event yield a
 * generic "unsupported event" text. Never fails and never returns NULL.
 */
const char *rpma_utils_conn_event_2str(enum rpma_conn_event conn_event);

/* connection private data: a small buffer exchanged while the connection is set up */
struct rpma_conn_private_data {
    void *ptr;   /* the bytes */
    uint8_t len; /* their number (at most 255; the transport may allow fewer) */
};

/*
 * rpma_conn_get_private_data -- private data the other side sent while connecting.
 *
 * Fills *pdata with a pointer and length owned by the connection (valid until
 * rpma_conn_delete()); {NULL, 0} when nothing was received. Security: this data is neither
 * authenticated nor encrypted; do not use it to exchange descriptors over untrusted networks.
 *
 * Returns: 0 on success, a negative error code otherwise; *pdata is untouched on failure.
 * Errors:
 *   RPMA_E_INVAL - conn or pdata is NULL
 */
int rpma_conn_get_private_data(const struct rpma_conn *conn, struct rpma_conn_private_data *pdata);

/*
 * rpma_conn_apply_remote_peer_cfg -- adopt the other side's peer configuration.
 *
 * Copies the remote direct-write-to-PMem declaration into the connection. Until a
 * configuration declaring support is applied, rpma_flush(RPMA_FLUSH_TYPE_PERSISTENT) on the
 * connection fails with RPMA_E_NOSUPP. pcfg may be deleted afterwards.
 *
 * Returns: 0 on success, a negative error code otherwise.
 * Errors:
 *   RPMA_E_INVAL - conn or pcfg is NULL
 */
int rpma_conn_apply_remote_peer_cfg(struct rpma_conn *conn, const struct rpma_peer_cfg *pcfg);

/*
 * rpma_conn_get_qp_num -- number of the queue pair behind the connection.
 *
 * The value identifies the connection locally and matches ibv_wc.qp_num of its completions.
 *
 * Returns: 0 on success, a negative error code otherwise; *qp_num is untouched on failure.
 * Errors:
 *   RPMA_E_INVAL - conn or qp_num is NULL
 */
int rpma_conn_get_qp_num(const struct rpma_conn *conn, uint32_t *qp_num);

struct rpma_cq;

/*
 * rpma_conn_get_cq -- the connection's main completion queue.
 *
 * Without a receive CQ it carries every completion of the connection; with one it carries all
 * except those of receives. The CQ is owned by the connection.
 *
 * Returns: 0 on success, a negative error code otherwise; *cq_ptr is untouched on failure.
 * Errors:
 *   RPMA_E_INVAL - conn or cq_ptr is NULL
 */
int rpma_conn_get_cq(const struct rpma_conn *conn, struct rpma_cq **cq_ptr);

/*
 * rpma_conn_get_rcq -- the connection's receive completion queue, if any.
 *
 * It exists only when the configuration's rcq_size was > 0 and carries all receive completions
 * (IBV_WC_RECV, IBV_WC_RECV_RDMA_WITH_IMM). Without it, *rcq_ptr is set to NULL and 0 returned.
 *
 * Returns: 0 on success, a negative error code otherwise; *rcq_ptr is untouched on failure.
 * Errors:
 *   RPMA_E_INVAL - conn or rcq_ptr is NULL
 */
int rpma_conn_get_rcq(const struct rpma_conn *conn, struct rpma_cq **rcq_ptr);

/*
 * rpma_conn_disconnect -- start or finish tearing a connection down.
 *
 * Called first, it initiates the disconnection, whose end is reported as RPMA_CONN_CLOSED by
 * rpma_conn_next_event(). Called after RPMA_CONN_CLOSED was received, the disconnection is
 * complete when it returns 0. Either way, call rpma_conn_delete() afterwards.
 *
 * Returns: 0 on success, a negative error code otherwise.
 * Errors:
 *   RPMA_E_INVAL    - conn is NULL
 *   RPMA_E_PROVIDER - the transport failed to disconnect
 */
int rpma_conn_disconnect(struct rpma_conn *conn);

/*
 * rpma_conn_delete -- destroy a closed connection and all its resources.
 *
 * Frees the queues, CQs, completion channel and private data. A NULL *conn_ptr is a no-op.
 * A failure of the transport to release one of them is logged, not returned: the connection
 * object is gone either way.
 *
 * Returns: 0 on success, a negative error code otherwise.
 * Errors:
 *   RPMA_E_INVAL - conn_ptr is NULL
 */
int rpma_conn_delete(struct rpma_conn **conn_ptr);

/* ============================================================================================ */
/* connection requests (incoming and outgoing)                                                  */
/* ============================================================================================ */

struct rpma_conn_req;

/*
 * rpma_conn_req_new -- prepare an outgoing connection request to addr:port.
 *
 * Resolves the address and route (bounded by cfg's timeout) and creates the queues described by
 * cfg (NULL: defaults of rpma_conn_cfg_new()). Receives may be pre-posted with
 * rpma_conn_req_recv(); rpma_conn_req_connect() sends the request. Not thread-safe.
 *
 * Returns: 0 on success, a negative error code otherwise; *req_ptr is untouched on failure.
 * Errors:
 *   RPMA_E_INVAL    - peer, addr, port or req_ptr is NULL, or cfg asks for a shared completion
 *                     channel together with an SRQ that has its own receive CQ
 *   RPMA_E_NOMEM    - out of memory
 *   RPMA_E_PROVIDER - creating the CM ID, resolving the address or route, or creating a CQ or
 *                     the queue pair failed
 */
int rpma_conn_req_new(struct rpma_peer *peer, const char *addr, const char *port,
                      const struct rpma_conn_cfg *cfg, struct rpma_conn_req **req_ptr);

/*
 * rpma_conn_req_delete -- abandon a connection request.
 *
 * An incoming request is rejected; an outgoing one is destroyed without connecting. All its
 * resources are freed; a failure of the transport to release one of them is logged, not
 * returned. A NULL *req_ptr is a no-op. Not thread-safe.
 *
 * Returns: 0 on success, a negative error code otherwise; *req_ptr is reset to NULL whether or
 * not the call succeeds, except when req_ptr is NULL.
 * Errors:
 *   RPMA_E_INVAL    - req_ptr is NULL
 *   RPMA_E_PROVIDER - rejecting the request failed (incoming only)
 */
int rpma_conn_req_delete(struct rpma_conn_req **req_ptr);

/*
 * rpma_conn_req_connect -- connect (outgoing) or accept (incoming) a request.
 *
 * The request is always consumed. pdata, if not NULL, is sent to the other side: pdata->ptr must
 * be non-NULL and 1 <= pdata->len <= 255; the transport may cap it lower (RDMA CM over
 * IB/RoCE: 56 bytes when connecting, 196 when accepting) and a too long buffer makes the call
 * fail with RPMA_E_PROVIDER. Success only means the process has started: wait for
 * RPMA_CONN_ESTABLISHED with rpma_conn_next_event() before using the connection.
 *
 * Returns: 0 on success, a negative error code otherwise. On success *conn_ptr receives the new
 * connection and *req_ptr is set to NULL. On failure *conn_ptr is untouched and the request is
 * still consumed (*req_ptr set to NULL) -- except when req_ptr or *req_ptr is NULL.
 * Errors:
 *   RPMA_E_INVAL    - req_ptr, *req_ptr or conn_ptr is NULL
 *   RPMA_E_INVAL    - pdata is not NULL but pdata->ptr is NULL or pdata->len == 0
 *   RPMA_E_INVAL    - the request lost its queue pair in a failed
 *                     rpma_ext_conn_req_move_to_peer() (see rpma_ext.h)
 *   RPMA_E_NOMEM    - out of memory
 *   RPMA_E_PROVIDER - starting the connection failed (outgoing only)
 *   RPMA_E_PROVIDER - accepting the request failed (incoming only)
 *   RPMA_E_PROVIDER - releasing the request's connection event failed (incoming only)
 */
int rpma_conn_req_connect(struct rpma_conn_req **req_ptr,
                          const struct rpma_conn_private_data *pdata, struct rpma_conn **conn_ptr);

/*
 * rpma_conn_get_compl_fd -- file descriptor of the connection's shared completion channel.
 *
 * Exists only when the configuration enabled a shared completion channel. Readable when
 * rpma_conn_wait() has a completion event to return; may be set to O_NONBLOCK.
 *
 * Returns: 0 on success, a negative error code otherwise; *fd is untouched on failure.
 * Errors:
 *   RPMA_E_INVAL           - conn or fd is NULL
 *   RPMA_E_NOT_SHARED_CHNL - the connection has no shared completion channel
 */
int rpma_conn_get_compl_fd(const struct rpma_conn *conn, int *fd);

/*
 * rpma_conn_wait -- wait on the shared completion channel for the next CQ event.
 *
 * Acknowledges the event, re-arms notification and reports which queue fired: *cq is the
 * connection's CQ or RCQ, and *is_rcq (when is_rcq is not NULL) tells which. Then drain that
 * queue with rpma_cq_get_wc(). flags is reserved; pass 0.
 *
 * Returns: 0 on success, a negative error code otherwise; after RPMA_E_PROVIDER *cq is NULL,
 * after other failures *cq and *is_rcq are untouched.
 * Errors:
 *   RPMA_E_INVAL           - conn or cq is NULL
 *   RPMA_E_NOT_SHARED_CHNL - the connection has no shared completion channel
 *   RPMA_E_NO_COMPLETION   - getting a completion event failed (e.g. none pending on a
 *                            non-blocking descriptor)
 *   RPMA_E_UNKNOWN         - the event came from a CQ that is not this connection's
 *   RPMA_E_PROVIDER        - re-arming the CQ notification failed
 */
int rpma_conn_wait(struct rpma_conn *conn, int flags, struct rpma_cq **cq, bool *is_rcq);

/*
 * rpma_conn_req_recv -- post a receive buffer before the connection exists.
 *
 * Same as rpma_recv(), but on a request, so that a message sent right after establishment
 * cannot arrive before a buffer is posted. The buffer is [offset, offset + len) of dst, which
 * needs RPMA_MR_USAGE_RECV. op_context comes back as ibv_wc.wr_id of the completion.
 *
 * Returns: 0 on success, a negative error code otherwise.
 * Errors:
 *   RPMA_E_INVAL    - req or dst is NULL (op_context may be NULL)
 *   RPMA_E_INVAL    - the request lost its queue pair in a failed
 *                     rpma_ext_conn_req_move_to_peer() (see rpma_ext.h)
 *   RPMA_E_PROVIDER - posting the receive failed
 */
int rpma_conn_req_recv(struct rpma_conn_req *req, struct rpma_mr_local *dst, size_t offset,
                       size_t len, const void *op_context);

/* ============================================================================================ */
/* server side: listening endpoint                                                              */
/* ============================================================================================ */

struct rpma_ep;

/*
 * rpma_ep_listen -- create an endpoint listening on addr:port.
 *
 * Binds to the address and starts accepting connection requests (RDMA_PS_TCP port space).
 * Requests are collected with rpma_ep_next_conn_req(). Not thread-safe; use an endpoint from
 * one thread only.
 *
 * Returns: 0 on success, a negative error code otherwise; *ep_ptr is untouched on failure.
 * Errors:
 *   RPMA_E_INVAL    - peer, addr, port or ep_ptr is NULL
 *   RPMA_E_PROVIDER - creating the event channel or CM ID, resolving the address, binding or
 *                     listening failed
 *   RPMA_E_NOMEM    - out of memory
 */
int rpma_ep_listen(struct rpma_peer *peer, const char *addr, const char *port,
                   struct rpma_ep **ep_ptr);

/*
 * rpma_ep_shutdown -- stop listening and destroy the endpoint.
 *
 * Connections previously obtained through the endpoint stay alive. A NULL *ep_ptr is a no-op.
 * Not thread-safe. A failure of the transport to close the listener is logged, not returned:
 * the endpoint is gone either way.
 *
 * Returns: 0 on success, a negative error code otherwise; *ep_ptr is not reset on failure.
 * Errors:
 *   RPMA_E_INVAL - ep_ptr is NULL
 */
int rpma_ep_shutdown(struct rpma_ep **ep_ptr);

/*
 * rpma_ep_get_fd -- file descriptor signalling pending connection requests.
 *
 * Readable when rpma_ep_next_conn_req() has a request; set O_NONBLOCK to make that call
 * non-blocking. Owned by the endpoint.
 *
 * Returns: 0 on success, a negative error code otherwise; *fd is untouched on failure.
 * Errors:
 *   RPMA_E_INVAL - ep or fd is NULL
 */
int rpma_ep_get_fd(const struct rpma_ep *ep, int *fd);

/*
 * rpma_ep_next_conn_req -- take the next incoming connection request.
 *
 * Blocks until a request arrives (unless the endpoint fd is non-blocking), then creates the
 * queues described by cfg (NULL: defaults of rpma_conn_cfg_new()). Answer the request with
 * rpma_conn_req_connect() or rpma_conn_req_delete(). Not thread-safe.
 *
 * Returns: 0 on success, a negative error code otherwise; *req_ptr is untouched on failure.
 * Errors:
 *   RPMA_E_INVAL    - ep or req_ptr is NULL
 *   RPMA_E_INVAL    - the event received is not a connection request, or cfg asks for a
 *                     shared completion channel together with an SRQ that has its own RCQ
 *   RPMA_E_PROVIDER - fetching or acknowledging the event failed
 *   RPMA_E_NOMEM    - out of memory
 *   RPMA_E_NO_EVENT - no connection request is pending (non-blocking descriptor)
 */
int rpma_ep_next_conn_req(struct rpma_ep *ep, const struct rpma_conn_cfg *cfg,
                          struct rpma_conn_req **req_ptr);

/*
 * rpma_conn_req_get_private_data -- private data carried by an incoming request.
 *
 * Fills *pdata with a pointer and length owned by the request ({NULL, 0} for none or for
 * outgoing requests); the data moves to the connection created by rpma_conn_req_connect().
 * Security: unauthenticated and unencrypted, see rpma_conn_get_private_data().
 *
 * Returns: 0 on success, a negative error code otherwise; *pdata is untouched on failure.
 * Errors:
 *   RPMA_E_INVAL - req or pdata is NULL
 */
int rpma_conn_req_get_private_data(const struct rpma_conn_req *req,
                                   struct rpma_conn_private_data *pdata);

/* ============================================================================================ */
/* shared receive queue configuration                                                           */
/* ============================================================================================ */

struct rpma_srq_cfg;

/*
 * rpma_srq_cfg_new -- create a shared-RQ configuration with default values.
 *
 * Defaults: rq_size = 20 and rcq_size = 20, the values librpma's code uses (its manual pages say
 * 100). Passing a NULL cfg to rpma_srq_new() is equivalent. With rcq_size > 0 the SRQ gets its
 * own receive CQ.
 *
 * Returns: 0 on success, a negative error code otherwise; *cfg_ptr is untouched on failure.
 * Errors:
 *   RPMA_E_INVAL - cfg_ptr is NULL
 *   RPMA_E_NOMEM - out of memory
 */
int rpma_srq_cfg_new(struct rpma_srq_cfg **cfg_ptr);

/*
 * rpma_srq_cfg_delete -- destroy a shared-RQ configuration.
 *
 * SRQs already created with it are unaffected. A NULL *cfg_ptr is a no-op.
 *
 * Returns: 0 on success, a negative error code otherwise; *cfg_ptr is reset to NULL whether or
 * not the call succeeds.
 * Errors:
 *   RPMA_E_INVAL - cfg_ptr is NULL
 */
int rpma_srq_cfg_delete(struct rpma_srq_cfg **cfg_ptr);

/*
 * rpma_srq_cfg_set_rq_size -- set the length of the shared receive queue.
 *
 * Returns: 0 on success, a negative error code otherwise.
 * Errors:
 *   RPMA_E_INVAL - cfg is NULL
 */
int rpma_srq_cfg_set_rq_size(struct rpma_srq_cfg *cfg, uint32_t rq_size);

/*
 * rpma_srq_cfg_get_rq_size -- read the length of the shared receive queue.
 *
 * Returns: 0 on success, a negative error code otherwise; *rq_size is untouched on failure.
 * Errors:
 *   RPMA_E_INVAL - cfg or rq_size is NULL
 */
int rpma_srq_cfg_get_rq_size(const struct rpma_srq_cfg *cfg, uint32_t *rq_size);

/*
 * rpma_srq_cfg_set_rcq_size -- set the length of the SRQ's own receive CQ.
 *
 * 0 means rpma_srq_new() creates no receive CQ; receive completions then go to the CQs of the
 * connections using the SRQ.
 *
 * Returns: 0 on success, a negative error code otherwise.
 * Errors:
 *   RPMA_E_INVAL - cfg is NULL
 */
int rpma_srq_cfg_set_rcq_size(struct rpma_srq_cfg *cfg, uint32_t rcq_size);

/*
 * rpma_srq_cfg_get_rcq_size -- read the length of the SRQ's receive CQ (0: none).
 *
 * Returns: 0 on success, a negative error code otherwise; *rcq_size is untouched on failure.
 * Errors:
 *   RPMA_E_INVAL - cfg or rcq_size is NULL
 */
int rpma_srq_cfg_get_rcq_size(const struct rpma_srq_cfg *cfg, uint32_t *rcq_size);

/* ============================================================================================ */
/* shared receive queue                                                                         */
/* ============================================================================================ */

/*
 * rpma_srq_new -- create a shared receive queue.
 *
 * Creates the SRQ and, when cfg's rcq_size > 0, a receive CQ for it (cfg NULL: defaults of
 * rpma_srq_cfg_new()). Attach it to connections with rpma_conn_cfg_set_srq(); it must outlive
 * them. Not thread-safe.
 *
 * Returns: 0 on success, a negative error code otherwise; *srq_ptr is untouched on failure.
 * Errors:
 *   RPMA_E_INVAL    - peer or srq_ptr is NULL
 *   RPMA_E_NOMEM    - out of memory
 *   RPMA_E_PROVIDER - creating the SRQ, its completion channel or CQ, or arming the CQ failed
 */
int rpma_srq_new(struct rpma_peer *peer, struct rpma_srq_cfg *cfg, struct rpma_srq **srq_ptr);

/*
 * rpma_srq_delete -- destroy a shared receive queue and its receive CQ.
 *
 * A NULL *srq_ptr is a no-op. Not thread-safe. A failure of the transport to destroy the CQ,
 * the completion channel or the SRQ (e.g. a connection still using it) is logged, not returned.
 *
 * Returns: 0 on success, a negative error code otherwise.
 * Errors:
 *   RPMA_E_INVAL - srq_ptr is NULL
 */
int rpma_srq_delete(struct rpma_srq **srq_ptr);

/*
 * rpma_srq_recv -- post a receive buffer to a shared receive queue.
 *
 * The buffer [offset, offset + len) of dst (RPMA_MR_USAGE_RECV) may take a message sent on any
 * connection using the SRQ. Posted buffers form an unordered pool: which buffer a message lands
 * in, and the order of receive completions, are unspecified. dst == NULL with offset == len == 0
 * posts a zero-length buffer. op_context comes back as ibv_wc.wr_id.
 *
 * Returns: 0 on success, a negative error code otherwise.
 * Errors:
 *   RPMA_E_INVAL    - srq is NULL
 *   RPMA_E_INVAL    - dst is NULL while offset != 0 or len != 0
 *   RPMA_E_PROVIDER - posting the receive failed
 */
int rpma_srq_recv(struct rpma_srq *srq, struct rpma_mr_local *dst, size_t offset, size_t len,
                  const void *op_context);

/*
 * rpma_srq_get_rcq -- the receive CQ of a shared receive queue.
 *
 * It carries the completions of all rpma_srq_recv() buffers. *rcq_ptr is set to NULL when the
 * SRQ was created without one (rcq_size == 0).
 *
 * Returns: 0 on success, a negative error code otherwise; *rcq_ptr is untouched on failure.
 * Errors:
 *   RPMA_E_INVAL - srq or rcq_ptr is NULL
 */
int rpma_srq_get_rcq(const struct rpma_srq *srq, struct rpma_cq **rcq_ptr);

/* ============================================================================================ */
/* remote memory access                                                                         */
/* ============================================================================================ */

/* produce a completion only when the operation fails */
#define RPMA_F_COMPLETION_ON_ERROR (1 << 0)
/* produce a completion whatever the outcome (includes RPMA_F_COMPLETION_ON_ERROR) */
#define RPMA_F_COMPLETION_ALWAYS ((1 << 1) | RPMA_F_COMPLETION_ON_ERROR)

/*
 * rpma_read -- post a read from remote memory into local memory.
 *
 * Copies len bytes from src at src_offset (remote, RPMA_MR_USAGE_READ_SRC) to dst at dst_offset
 * (local, RPMA_MR_USAGE_READ_DST). A zero-byte read takes dst == src == NULL and all offsets and
 * len 0. flags is RPMA_F_COMPLETION_ALWAYS or RPMA_F_COMPLETION_ON_ERROR; with the latter a
 * successful read yields no completion. op_context comes back as ibv_wc.wr_id.
 *
 * Returns: 0 when posted, a negative error code otherwise.
 * Errors:
 *   RPMA_E_INVAL    - conn is NULL or flags == 0
 *   RPMA_E_INVAL    - dst is NULL while src != NULL, src_offset != 0, dst_offset != 0 or len != 0
 *   RPMA_E_INVAL    - src is NULL while dst != NULL, src_offset != 0, dst_offset != 0 or len != 0
 *   RPMA_E_INVAL    - len is larger than UINT32_MAX
 *   RPMA_E_PROVIDER - posting the work request failed
 */
int rpma_read(struct rpma_conn *conn, struct rpma_mr_local *dst, size_t dst_offset,
              const struct rpma_mr_remote *src, size_t src_offset, size_t len, int flags,
              const void *op_context);

/*
 * rpma_write -- post a write from local memory into remote memory.
 *
 * Copies len bytes from src at src_offset (local, RPMA_MR_USAGE_WRITE_SRC) to dst at dst_offset
 * (remote, RPMA_MR_USAGE_WRITE_DST). Its completion means the remote NIC took the data, not that
 * it is visible or persistent there -- that is rpma_flush()'s job. A zero-byte write takes
 * dst == src == NULL with offsets and len 0. flags and op_context as in rpma_read().
 *
 * Returns: 0 when posted, a negative error code otherwise.
 * Errors:
 *   RPMA_E_INVAL    - conn is NULL or flags == 0
 *   RPMA_E_INVAL    - dst is NULL while src != NULL, src_offset != 0, dst_offset != 0 or len != 0
 *   RPMA_E_INVAL    - src is NULL while dst != NULL, src_offset != 0, dst_offset != 0 or len != 0
 *   RPMA_E_INVAL    - len is larger than UINT32_MAX
 *   RPMA_E_PROVIDER - posting the work request failed
 */
int rpma_write(struct rpma_conn *conn, struct rpma_mr_remote *dst, size_t dst_offset,
               const struct rpma_mr_local *src, size_t src_offset, size_t len, int flags,
               const void *op_context);

/*
 * rpma_write_with_imm -- post a write that also delivers a 32-bit immediate value.
 *
 * Like rpma_write(), but it consumes one receive buffer posted on the other side, whose
 * completion has opcode IBV_WC_RECV_RDMA_WITH_IMM. imm is sent in network byte order, so the
 * receiver recovers it with ntohl(wc.imm_data). flags and op_context as in rpma_read().
 *
 * Returns: 0 when posted, a negative error code otherwise.
 * Errors:
 *   RPMA_E_INVAL    - conn is NULL or flags == 0
 *   RPMA_E_INVAL    - dst is NULL while src != NULL, src_offset != 0, dst_offset != 0 or len != 0
 *   RPMA_E_INVAL    - src is NULL while dst != NULL, src_offset != 0, dst_offset != 0 or len != 0
 *   RPMA_E_INVAL    - len is larger than UINT32_MAX
 *   RPMA_E_PROVIDER - posting the work request failed
 */
int rpma_write_with_imm(struct rpma_conn *conn, struct rpma_mr_remote *dst, size_t dst_offset,
                        const struct rpma_mr_local *src, size_t src_offset, size_t len, int flags,
                        uint32_t imm, const void *op_context);

/* size and required destination alignment of rpma_atomic_write() */
#define RPMA_ATOMIC_WRITE_ALIGNMENT 8

/*
 * rpma_atomic_write -- post an 8-byte write that lands atomically in remote memory.
 *
 * The 8 bytes at src (plain memory, no registration needed; copied before the call returns) are
 * stored in dst at dst_offset as one indivisible unit; dst_offset % RPMA_ATOMIC_WRITE_ALIGNMENT
 * must be 0. It is ordered after previously posted reads and flushes on the connection. Uses
 * the native RDMA atomic write when the device has one. flags/op_context as in rpma_read().
 *
 * Returns: 0 when posted, a negative error code otherwise.
 * Errors:
 *   RPMA_E_INVAL    - conn, dst or src is NULL
 *   RPMA_E_INVAL    - dst_offset is not a multiple of 8
 *   RPMA_E_INVAL    - flags == 0
 *   RPMA_E_PROVIDER - posting the work request failed
 */
int rpma_atomic_write(struct rpma_conn *conn, struct rpma_mr_remote *dst, size_t dst_offset,
                      const char src[8], int flags, const void *op_context);

/* kinds of rpma_flush() */
enum rpma_flush_type {
    /* make the data durable in the remote persistent domain */
    RPMA_FLUSH_TYPE_PERSISTENT,
    /* make the data visible to the remote CPU */
    RPMA_FLUSH_TYPE_VISIBILITY,
};

/*
 * rpma_flush -- post a flush that finalizes earlier writes to remote memory.
 *
 * When its completion arrives, writes posted before it to [dst_offset, dst_offset + len) of dst
 * are visible to the remote CPU (VISIBILITY) or persistent (PERSISTENT). PERSISTENT requires a
 * remote peer configuration declaring direct write to PMem to have been applied with
 * rpma_conn_apply_remote_peer_cfg(). The region's usage must include the matching
 * RPMA_MR_USAGE_FLUSH_TYPE_* bit. flags and op_context as in rpma_read().
 *
 * Returns: 0 when posted, a negative error code otherwise.
 * Errors:
 *   RPMA_E_INVAL    - conn or dst is NULL
 *   RPMA_E_INVAL    - type is not a known rpma_flush_type value
 *   RPMA_E_INVAL    - flags == 0
 *   RPMA_E_PROVIDER - posting the work request failed
 *   RPMA_E_NOSUPP   - type is RPMA_FLUSH_TYPE_PERSISTENT and no applied peer configuration
 *                     declares direct write to PMem, or dst's usage lacks the flush type
 *                     requested (RPMA_MR_USAGE_FLUSH_TYPE_PERSISTENT / _VISIBILITY)
 */
int rpma_flush(struct rpma_conn *conn, struct rpma_mr_remote *dst, size_t dst_offset, size_t len,
               enum rpma_flush_type type, int flags, const void *op_context);

/* ============================================================================================ */
/* messaging                                                                                    */
/* ============================================================================================ */

/*
 * rpma_send -- post a message to the other side.
 *
 * Sends [offset, offset + len) of src (RPMA_MR_USAGE_SEND); it lands in a buffer posted by the
 * other side (rpma_recv()/rpma_conn_req_recv()/rpma_srq_recv()), which must exist in time. A
 * zero-byte message takes src == NULL and offset == len == 0. flags is
 * RPMA_F_COMPLETION_ALWAYS or RPMA_F_COMPLETION_ON_ERROR (no completion on success);
 * op_context comes back as ibv_wc.wr_id.
 *
 * Returns: 0 when posted, a negative error code otherwise.
 * Errors:
 *   RPMA_E_INVAL    - conn is NULL or flags == 0
 *   RPMA_E_INVAL    - src is NULL while offset != 0 or len != 0
 *   RPMA_E_INVAL    - len is larger than UINT32_MAX
 *   RPMA_E_PROVIDER - posting the work request failed
 */
int rpma_send(struct rpma_conn *conn, const struct rpma_mr_local *src, size_t offset, size_t len,
              int flags, const void *op_context);

/*
 * rpma_send_with_imm -- post a message carrying a 32-bit immediate value.
 *
 * Like rpma_send(); the receiver's completion has IBV_WC_WITH_IMM set in wc_flags and imm in
 * network byte order in wc.imm_data (recover it with ntohl()).
 *
 * Returns: 0 when posted, a negative error code otherwise.
 * Errors:
 *   RPMA_E_INVAL    - conn is NULL or flags == 0
 *   RPMA_E_INVAL    - src is NULL while offset != 0 or len != 0
 *   RPMA_E_INVAL    - len is larger than UINT32_MAX
 *   RPMA_E_PROVIDER - posting the work request failed
 */
int rpma_send_with_imm(struct rpma_conn *conn, const struct rpma_mr_local *src, size_t offset,
                       size_t len, int flags, uint32_t imm, const void *op_context);

/*
 * rpma_recv -- post a buffer for a message from the other side.
 *
 * Posts [offset, offset + len) of dst (RPMA_MR_USAGE_RECV). Unlike the RDMA standard's ordered
 * receive queue, posted buffers form an unordered pool: which buffer a message lands in, and
 * the order of receive completions, are unspecified. dst == NULL with offset == len == 0 posts a
 * zero-length buffer. A receive always completes (IBV_WC_RECV), in the RCQ if there is one;
 * op_context comes back as ibv_wc.wr_id.
 *
 * Returns: 0 when posted, a negative error code otherwise.
 * Errors:
 *   RPMA_E_INVAL    - conn is NULL
 *   RPMA_E_INVAL    - dst is NULL while offset != 0 or len != 0
 *   RPMA_E_INVAL    - len is larger than UINT32_MAX
 *   RPMA_E_PROVIDER - posting the receive failed
 */
int rpma_recv(struct rpma_conn *conn, struct rpma_mr_local *dst, size_t offset, size_t len,
              const void *op_context);

/* ============================================================================================ */
/* completions                                                                                  */
/* ============================================================================================ */

/*
 * rpma_cq_get_fd -- file descriptor signalling new completions in a CQ.
 *
 * Works for a connection's CQ or RCQ and an SRQ's receive CQ. Readable when a completion event
 * is pending; may be set to O_NONBLOCK. Draining with rpma_cq_get_wc() without calling
 * rpma_cq_wait() is allowed, but a later rpma_cq_wait() may then report an already consumed
 * completion.
 *
 * Returns: 0 on success, a negative error code otherwise; *fd is untouched on failure.
 * Errors:
 *   RPMA_E_INVAL - cq or fd is NULL
 */
int rpma_cq_get_fd(const struct rpma_cq *cq, int *fd);

/*
 * rpma_cq_wait -- wait for a completion event on a CQ and acknowledge it.
 *
 * Blocks (unless the CQ fd is non-blocking), then re-arms notification. After success, collect
 * every available completion with rpma_cq_get_wc() before waiting again; an event may come
 * with no completion left to collect.
 *
 * Returns: 0 on success, a negative error code otherwise.
 * Errors:
 *   RPMA_E_INVAL          - cq is NULL
 *   RPMA_E_PROVIDER       - re-arming the CQ notification failed
 *   RPMA_E_NO_COMPLETION  - no completion event could be obtained
 *   RPMA_E_SHARED_CHANNEL - the CQ uses a shared completion channel; use rpma_conn_wait()
 *   RPMA_E_UNKNOWN        - the event came from another CQ than cq (as in librpma; the
 *                           channel is cq's own, so this points to memory corruption)
 */
int rpma_cq_wait(struct rpma_cq *cq);

/*
 * rpma_cq_get_wc -- fetch up to num_entries completions from a CQ.
 *
 * Fills wc[0..n-1] like ibv_poll_cq(3) and stores n in *num_entries_got (which may be NULL only
 * when num_entries == 1). Failed operations always complete; successful ones only when posted
 * with RPMA_F_COMPLETION_ALWAYS (receives always). For status != IBV_WC_SUCCESS only wr_id,
 * status, qp_num and vendor_err are meaningful. With a receive CQ present, the main CQ never
 * returns IBV_WC_RECV or IBV_WC_RECV_RDMA_WITH_IMM.
 *
 * Returns: 0 on success, a negative error code otherwise; *num_entries_got is untouched on
 * failure.
 * Errors:
 *   RPMA_E_INVAL         - cq or wc is NULL, num_entries < 1, or num_entries > 1 while
 *                          num_entries_got is NULL
 *   RPMA_E_NO_COMPLETION - the CQ is empty
 *   RPMA_E_PROVIDER      - polling failed
 */
int rpma_cq_get_wc(struct rpma_cq *cq, int num_entries, struct ibv_wc *wc, int *num_entries_got);

/* ============================================================================================ */
/* error reporting                                                                              */
/* ============================================================================================ */

/*
 * rpma_err_2str -- printable description of an RPMA_E_* code.
 *
 * Returns: a pointer to a static, constant string ("Success" for 0, a generic unknown-error text
 * for values that are not RPMA_E_* codes). Never fails and never returns NULL.
 */
const char *rpma_err_2str(int ret);

/* ============================================================================================ */
/* logging                                                                                      */
/* ============================================================================================ */

/* severity of a log message, also used as threshold value */
enum rpma_log_level {
    /* threshold only: nothing passes */
    RPMA_LOG_DISABLED = -1,
    /* the library cannot continue at all */
    RPMA_LOG_LEVEL_FATAL,
    /* the library cannot continue correctly */
    RPMA_LOG_LEVEL_ERROR,
    /* a problem the caller may still handle */
    RPMA_LOG_LEVEL_WARNING,
    /* occasional notable events, e.g. a connection being established */
    RPMA_LOG_LEVEL_NOTICE,
    /* frequent information, e.g. each posted write */
    RPMA_LOG_LEVEL_INFO,
    /* debugging details, e.g. dumps of operations */
    RPMA_LOG_LEVEL_DEBUG,
};

/* the two logging thresholds */
enum rpma_log_threshold {
    /* primary: messages above this level never reach the logging function */
    RPMA_LOG_THRESHOLD,
    /* auxiliary: available to the logging function, which may or may not honor it */
    RPMA_LOG_THRESHOLD_AUX,
    /* number of thresholds; not a valid argument */
    RPMA_LOG_THRESHOLD_MAX
};

/*
 * rpma_log_set_threshold -- change a logging threshold.
 *
 * RPMA_LOG_THRESHOLD (default RPMA_LOG_LEVEL_WARNING) filters messages before the logging
 * function sees them; RPMA_LOG_DISABLED silences everything. RPMA_LOG_THRESHOLD_AUX (default
 * RPMA_LOG_DISABLED) is for the logging function's own use: the built-in one sends messages
 * passing the primary threshold to syslog(3) and those also passing the auxiliary one to stderr.
 *
 * Returns: 0 on success, a negative error code otherwise.
 * Errors:
 *   RPMA_E_INVAL - threshold is neither RPMA_LOG_THRESHOLD nor RPMA_LOG_THRESHOLD_AUX
 *   RPMA_E_INVAL - level is outside enum rpma_log_level
 */
int rpma_log_set_threshold(enum rpma_log_threshold threshold, enum rpma_log_level level);

/*
 * rpma_log_get_threshold -- read a logging threshold.
 *
 * Returns: 0 on success, a negative error code otherwise; *level is untouched on failure.
 * Errors:
 *   RPMA_E_INVAL - threshold is neither RPMA_LOG_THRESHOLD nor RPMA_LOG_THRESHOLD_AUX
 *   RPMA_E_INVAL - level is NULL
 */
int rpma_log_get_threshold(enum rpma_log_threshold threshold, enum rpma_log_level *level);

/*
 * Signature of a logging function: the message's level, its source file, line and function
 * (file_name may be NULL, and then line_no and function_name carry no information), and
 * a printf(3)-style format followed by its arguments.
 */
typedef void rpma_log_function(enum rpma_log_level level, const char *file_name, const int line_no,
                               const char *function_name, const char *message_format, ...);

/* selects the built-in logging function in rpma_log_set_function() */
#define RPMA_LOG_USE_DEFAULT_FUNCTION (NULL)

/*
 * rpma_log_set_function -- route log messages to a function of the caller's choice.
 *
 * log_function receives every message that passes RPMA_LOG_THRESHOLD; it must be thread-safe.
 * RPMA_LOG_USE_DEFAULT_FUNCTION (the initial setting) restores the built-in function, which
 * writes to syslog(3) and stderr (see rpma_log_set_threshold()).
 *
 * Returns: 0; this implementation never fails. (librpma returns RPMA_E_AGAIN when a concurrent
 * update gets in the way; a program meant to run on both may retry on it.)
 */
int rpma_log_set_function(rpma_log_function *log_function);

#ifdef __cplusplus
}
#endif

#endif /* RPMA_CORE_LIBRPMA_H */
