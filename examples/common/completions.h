/*
 * completions.h -- collecting the completions of one connection, whichever way its queues are
 * set up:
 *
 *  - one CQ (rcq_size == 0, the default): everything completes there; wait with rpma_cq_wait();
 *  - a CQ and a receive CQ (rcq_size > 0), each with its own channel: receives complete on the
 *    RCQ (rpma_conn_get_rcq()), everything else on the CQ; wait on both fds;
 *  - a CQ and a receive CQ on one shared channel (rpma_conn_cfg_set_compl_channel(cfg, true)):
 *    rpma_cq_wait() refuses (RPMA_E_SHARED_CHANNEL); wait on rpma_conn_get_compl_fd() with
 *    rpma_conn_wait(), which says which of the two queues fired.
 *
 * The rule in every case: an event names a queue; acknowledge it (which re-arms the queue), then
 * drain that queue until it is empty before waiting again. A completion that arrives after the
 * re-arm raises a new event, one that arrived before it is found by the draining, so none is
 * missed; an event may find its queue already drained, which is harmless.
 */
#ifndef EXAMPLES_COMMON_COMPLETIONS_H
#define EXAMPLES_COMMON_COMPLETIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <librpma.h>

struct ex_completions {
    struct rpma_conn *conn;
    struct rpma_cq *cq;
    struct rpma_cq *rcq; /* NULL: receives complete on cq */
    bool shared;         /* cq and rcq share one completion channel */
    /* queues that may hold completions no pending event will announce */
    bool drain_cq;
    bool drain_rcq;
    /* completions collected so far from each queue */
    unsigned from_cq;
    unsigned from_rcq;
};

/*
 * A connection configuration with a receive CQ of rcq_size entries (0: none) and, if
 * shared_channel, one completion channel for both CQs.
 */
int ex_conn_cfg_new(uint32_t rcq_size, bool shared_channel, struct rpma_conn_cfg **cfg_ptr);

/*
 * Finds conn's queues and how to wait for them (rpma_conn_get_cq(), rpma_conn_get_rcq(),
 * rpma_conn_get_compl_fd() telling shared from not shared).
 */
int ex_completions_init(struct rpma_conn *conn, struct ex_completions *comps);

/*
 * Waits up to timeout_ms (-1: forever) for the next completion of the connection, whatever its
 * status; *from_rcq (may be NULL) tells whether it came from the receive CQ.
 */
int ex_completions_next(struct ex_completions *comps, int timeout_ms, struct ibv_wc *wc,
                        bool *from_rcq);

/* The name of a completion's opcode, for messages. */
const char *ex_wc_opcode_str(enum ibv_wc_opcode opcode);

/* One completion to wait for: the operation posted with op_context `op`. */
struct ex_awaited {
    const void *op;            /* NULL: nothing to wait for in this entry */
    enum ibv_wc_opcode opcode; /* what it must complete as */
    struct ibv_wc wc;          /* its completion, once arrived */
    bool arrived;
};

/*
 * Waits (EX_TIMEOUT_MS in all) until every entry of ops[0..n) has completed, in whatever order.
 * Fails on a failed completion, an unexpected one, one with the wrong opcode, and one on the
 * wrong queue: with a receive CQ, receives must complete there and nothing else may.
 */
int ex_completions_await(struct ex_completions *comps, struct ex_awaited *ops, size_t n);

#endif /* EXAMPLES_COMMON_COMPLETIONS_H */
