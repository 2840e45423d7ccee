/*
 * receive_cq.c -- what the server and the client of the receive-CQ example both do (see
 * receive_cq.h)
 */
#include "examples/14-receive-cq/receive_cq.h"

#include <stdio.h>
#include <string.h>

#include "examples/common/example_conn.h"

int rcq_parse_mode(int argc, char *argv[], bool *shared, char ***args) {
    *shared = argc > 1 && strcmp(argv[1], "--shared-channel") == 0;
    *args = *shared ? argv + 1 : argv;
    return *shared ? argc - 1 : argc;
}

int rcq_check_queues(struct rpma_conn *conn, bool shared) {
    struct rpma_cq *rcq = NULL;
    int ret = rpma_conn_get_rcq(conn, &rcq);
    if (ret != 0)
        return ex_report("rpma_conn_get_rcq", ret);
    if (rcq == NULL) {
        fprintf(stderr, "the connection has no receive CQ despite rcq_size %d\n", RCQ_SIZE);
        return -1;
    }
    int fd = -1;
    ret = rpma_conn_get_compl_fd(conn, &fd);
    if (shared)
        return ret == 0 ? 0 : ex_report("rpma_conn_get_compl_fd", ret);
    struct rpma_cq *cq = NULL;
    int wait = rpma_conn_wait(conn, 0, &cq, NULL);
    if (ret != RPMA_E_NOT_SHARED_CHNL || wait != RPMA_E_NOT_SHARED_CHNL) {
        fprintf(stderr,
                "without a shared channel, rpma_conn_get_compl_fd() said \"%s\" and "
                "rpma_conn_wait() \"%s\", expected \"%s\"\n",
                rpma_err_2str(ret), rpma_err_2str(wait), rpma_err_2str(RPMA_E_NOT_SHARED_CHNL));
        return -1;
    }
    return 0;
}

int rcq_check_counts(const struct ex_completions *comps, unsigned sent, unsigned received,
                     const char *who) {
    if (comps->from_cq != sent || comps->from_rcq != received) {
        fprintf(stderr,
                "%s: %u completions came from the CQ and %u from the receive CQ, expected %u "
                "sends and %u receives\n",
                who, comps->from_cq, comps->from_rcq, sent, received);
        return -1;
    }
    printf("%s: %u receives completed on the receive CQ, %u sends on the CQ (%s)\n", who, received,
           sent, comps->shared ? "one shared completion channel" : "a channel each");
    return 0;
}
