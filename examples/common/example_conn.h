/*
 * example_conn.h -- the boilerplate every example shares: peer creation, connecting and
 * accepting, tearing down, waiting for an event or a completion, and packing region and peer
 * configuration descriptors into connection private data.
 *
 * Every function prints what went wrong to stderr and returns 0 on success, non-zero
 * otherwise, so that callers only have to propagate failure.
 */
#ifndef EXAMPLES_COMMON_EXAMPLE_CONN_H
#define EXAMPLES_COMMON_EXAMPLE_CONN_H

#include <poll.h>
#include <stddef.h>
#include <stdint.h>

#include <librpma.h>

/* Tells a test driver that the server listens: prints "ready" and flushes stdout. */
void ex_announce_ready(void);

/* Prints "<what>: <rpma_err_2str(ret)>" to stderr and returns ret. */
int ex_report(const char *what, int ret);

/* Page-aligned, zeroed memory (free() it); NULL after printing why. */
void *ex_alloc_aligned(size_t size);

/* A peer on the device serving addr (LOCAL: a server's address, REMOTE: a client's target). */
int ex_peer_new(const char *addr, enum rpma_util_ibv_context_type type,
                struct rpma_peer **peer_ptr);

/* Deregisters *mr_ptr if not NULL; returns ret, or the deregistration's failure if ret is 0. */
int ex_mr_dereg(int ret, struct rpma_mr_local **mr_ptr);

/*
 * Shuts *ep_ptr down and deletes *peer_ptr (either may be NULL or point to NULL). Returns
 * EXIT_SUCCESS (0) when ret is 0 and both succeeded, EXIT_FAILURE otherwise, so that main()
 * can end with `return ex_release(ret, &ep, &peer);`.
 */
int ex_release(int ret, struct rpma_ep **ep_ptr, struct rpma_peer **peer_ptr);

/* How long the helpers wait for something the other side owes us right now. */
#define EX_TIMEOUT_MS 10000

/* Milliseconds on the monotonic clock, for deadlines. */
int64_t ex_now_ms(void);

/*
 * Waits up to timeout_ms (-1: forever) until one of fds[0..nfds) is readable (its revents say
 * which; events are set here). 0: readable, 1: timed out (printed with `what`), -1: failure.
 */
int ex_poll_readable(struct pollfd *fds, size_t nfds, int timeout_ms, const char *what);

/*
 * Checks private data from the other side (untrusted) before it is decoded: it must hold at
 * least `size` bytes. It may hold more than was sent, zeros after the sent bytes: on InfiniBand
 * and RoCE rdma_cm pads it to the size of the CM message's field (56 bytes in a connection
 * request, 196 in a reply), and librpma hands that on. So never expect the exact length sent.
 * Prints what is wrong, naming `what`; 0 when it fits.
 */
int ex_private_data_check(const struct rpma_conn_private_data *pdata, size_t size,
                          const char *what);

/* Waits up to timeout_ms (-1: forever) for the next connection event. */
int ex_next_event(struct rpma_conn *conn, int timeout_ms, enum rpma_conn_event *event);

/* Waits (EX_TIMEOUT_MS) for the next connection event and checks it is `expected`. */
int ex_expect_event(struct rpma_conn *conn, enum rpma_conn_event expected);

/*
 * Connects (outgoing) or accepts (incoming) a request the caller has prepared -- e.g. one with
 * receives already posted by rpma_conn_req_recv() -- sending pdata (may be NULL), and waits for
 * ESTABLISHED. The request is consumed either way.
 */
int ex_conn_req_connect(struct rpma_conn_req **req_ptr, const struct rpma_conn_private_data *pdata,
                        struct rpma_conn **conn_ptr);

/* Client: connects to addr:port sending pdata (may be NULL) and waits for ESTABLISHED. */
int ex_client_connect(struct rpma_peer *peer, const char *addr, const char *port,
                      const struct rpma_conn_cfg *cfg, const struct rpma_conn_private_data *pdata,
                      struct rpma_conn **conn_ptr);

/* Server: takes the next request, accepts it sending pdata (may be NULL) and waits for
 * ESTABLISHED. The client's private data is then available from rpma_conn_get_private_data(). */
int ex_server_accept(struct rpma_ep *ep, const struct rpma_conn_cfg *cfg,
                     const struct rpma_conn_private_data *pdata, struct rpma_conn **conn_ptr);

/* Active teardown (client): disconnect, wait for CLOSED, delete. *conn_ptr is NULL afterwards. */
int ex_disconnect(struct rpma_conn **conn_ptr);

/* Passive teardown (server): wait for CLOSED, disconnect, delete. *conn_ptr is NULL afterwards. */
int ex_wait_closed(struct rpma_conn **conn_ptr);

/* Waits up to timeout_ms (-1: forever) for the next completion on cq, whatever its status. */
int ex_next_completion(struct rpma_cq *cq, int timeout_ms, struct ibv_wc *wc);

/*
 * Waits (EX_TIMEOUT_MS) for the next completion on cq and checks that it succeeded and belongs
 * to the operation posted with op_context (which comes back as wc.wr_id).
 */
int ex_wait_completion(struct rpma_cq *cq, const void *op_context);

/*
 * A peer configuration declaring direct write to PMem: the server's promise that writes it
 * receives, once flushed, are persistent. Only a server that keeps the region on persistent
 * memory (here: a file mapped with libpmem2) may send it.
 */
int ex_pmem_peer_cfg_new(struct rpma_peer_cfg **pcfg_ptr);

/*
 * What a server sends as its private data: a memory region descriptor and, optionally, its
 * peer configuration descriptor. Only the used part travels (see ex_descriptors_pack()).
 */
#define EX_DESCRIPTORS_MAX 54
struct ex_descriptors {
    uint8_t mr_desc_size;
    uint8_t pcfg_desc_size; /* 0: no peer configuration */
    uint8_t bytes[EX_DESCRIPTORS_MAX];
};

/* Fills *desc from mr and pcfg (may be NULL) and points *pdata at it. */
int ex_descriptors_pack(const struct rpma_mr_local *mr, const struct rpma_peer_cfg *pcfg,
                        struct ex_descriptors *desc, struct rpma_conn_private_data *pdata);

/*
 * Decodes private data made by ex_descriptors_pack(). pcfg_ptr may be NULL when no peer
 * configuration is needed; when not NULL the data must carry one. The data is untrusted and
 * checked before use.
 */
int ex_descriptors_decode(const struct rpma_conn_private_data *pdata,
                          struct rpma_mr_remote **mr_ptr, struct rpma_peer_cfg **pcfg_ptr);

/* ex_descriptors_decode() of the private data the server sent on conn. */
int ex_descriptors_unpack(const struct rpma_conn *conn, struct rpma_mr_remote **mr_ptr,
                          struct rpma_peer_cfg **pcfg_ptr);

#endif /* EXAMPLES_COMMON_EXAMPLE_CONN_H */
