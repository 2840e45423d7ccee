/*
 * receive_cq.h -- what the server and the client of the receive-CQ example both do: set up a
 * connection with a receive CQ, optionally sharing one completion channel with the CQ, check
 * that the connection looks like that, and afterwards that every completion came from the
 * right queue.
 */
#ifndef EXAMPLES_RECEIVE_CQ_RECEIVE_CQ_H
#define EXAMPLES_RECEIVE_CQ_RECEIVE_CQ_H

#include <stdbool.h>

#include <librpma.h>

#include "examples/common/completions.h"

/* a receive CQ holds the completions of all posted receives: one, and a spare */
#define RCQ_SIZE 2

/*
 * Looks for an optional leading "--shared-channel" in argv; *shared tells whether it is there.
 * The other arguments are (*args)[1], (*args)[2], ...; returns their number plus one.
 */
int rcq_parse_mode(int argc, char *argv[], bool *shared, char ***args);

/*
 * Checks that conn has a receive CQ (rpma_conn_get_rcq()) and a shared completion channel
 * (rpma_conn_get_compl_fd() succeeds) or not (it fails with RPMA_E_NOT_SHARED_CHNL, and so
 * does rpma_conn_wait()), as asked.
 */
int rcq_check_queues(struct rpma_conn *conn, bool shared);

/*
 * Checks that `sent` send completions came from the CQ and `received` receive completions from
 * the receive CQ, and prints that with `who` and the channel setup.
 */
int rcq_check_counts(const struct ex_completions *comps, unsigned sent, unsigned received,
                     const char *who);

#endif /* EXAMPLES_RECEIVE_CQ_RECEIVE_CQ_H */
