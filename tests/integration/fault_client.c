/*
 * fault_client.c -- the initiator side of the failure tests. It reports what happened on
 * stdout, in lines the tests match; it exits 0 when it could observe an outcome at all and
 * non-zero when it got stuck or an API call failed unexpectedly. Every wait is bounded.
 *
 *   fault_client connect <addr> <port>
 *       connects and prints the first connection event: "event: <NAME>"
 *   fault_client violate beyond|straddle|rkey|plain <addr> <port>
 *       takes the region descriptor of "fault_server guarded", forges it (beyond, straddle:
 *       twice the size, then writes past the end or across it; rkey: another rkey; plain: as
 *       is), writes 256 bytes and prints "completion: status=<n> (<text>)", then the event
 *       that ends the connection
 *   fault_client stream <addr> <port>
 *       writes and persistently flushes durable_record.h's records to "fault_server
 *       durable", a few in flight at a time, printing "ack <seq>" as each flush completes,
 *       until something fails; prints each failure ("error completion: status=<n> (<text>)",
 *       "post failed: <error>"), waits for every record in flight to complete, prints
 *       the next connection event, and posts one more record: "post after failure:
 *       completion status=<n> (<text>)" or "post after failure: failed: <error>"
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "examples/common/example_conn.h"
#include "tests/integration/durable_record.h"
#include "tests/integration/fault_common.h"

#define WRITE_LEN 256

/* Waits (bounded) for the next connection event and prints it. */
static int print_next_event(struct rpma_conn *conn) {
    enum rpma_conn_event event = RPMA_CONN_UNDEFINED;
    int ret = ex_next_event(conn, EX_TIMEOUT_MS, &event);
    if (ret == 0)
        printf("event: %s\n", event_name(event));
    fflush(stdout);
    return ret;
}

static int connect_and_report(struct rpma_peer *peer, const char *addr, const char *port) {
    struct rpma_conn_req *req = NULL;
    struct rpma_conn *conn = NULL;
    int ret = rpma_conn_req_new(peer, addr, port, NULL, &req);
    if (ret != 0)
        return ex_report("rpma_conn_req_new", ret);
    if ((ret = rpma_conn_req_connect(&req, NULL, &conn)) != 0)
        return ex_report("rpma_conn_req_connect", ret);
    enum rpma_conn_event event = RPMA_CONN_UNDEFINED;
    ret = ex_next_event(conn, EX_TIMEOUT_MS, &event);
    if (ret == 0) {
        printf("event: %s\n", event_name(event));
        fflush(stdout);
    }
    if (ret == 0 && event == RPMA_CONN_ESTABLISHED)
        return ex_disconnect(&conn);
    int del = rpma_conn_delete(&conn);
    if (del != 0)
        return ex_report("rpma_conn_delete", del);
    return ret;
}

/* The server's descriptor as forged for `kind`; *offset is where to write. */
static int forge(const struct rpma_conn *conn, const char *kind, struct rpma_mr_remote **mr,
                 size_t *offset) {
    struct rpma_conn_private_data pdata;
    struct ex_descriptors desc;
    int ret = rpma_conn_get_private_data(conn, &pdata);
    if (ret != 0)
        return ex_report("rpma_conn_get_private_data", ret);
    if (pdata.ptr == NULL || pdata.len > sizeof(desc)) {
        fprintf(stderr, "unexpected private data\n");
        return -1;
    }
    memcpy(&desc, pdata.ptr, pdata.len);
    /* librpma's descriptor: u64 addr, u64 length, u32 rkey, u8 usage, little-endian */
    uint8_t *length = desc.bytes + 8;
    uint8_t *rkey = desc.bytes + 16;
    uint64_t forged_length = GUARDED_BUFFER_SIZE;
    if (strcmp(kind, "beyond") == 0) {
        memcpy(length, &forged_length, sizeof(forged_length));
        *offset = GUARDED_REGION_SIZE + 512;
    } else if (strcmp(kind, "straddle") == 0) {
        memcpy(length, &forged_length, sizeof(forged_length));
        *offset = GUARDED_REGION_SIZE - WRITE_LEN / 2;
    } else if (strcmp(kind, "rkey") == 0) {
        for (int i = 0; i < 4; i++)
            rkey[i] ^= 0x5A;
        *offset = 0;
    } else if (strcmp(kind, "plain") == 0) {
        *offset = 0;
    } else {
        fprintf(stderr, "violate: unknown kind %s\n", kind);
        return -1;
    }
    struct rpma_conn_private_data forged = {.ptr = &desc, .len = pdata.len};
    return ex_descriptors_decode(&forged, mr, NULL);
}

static int violate(struct rpma_peer *peer, const char *kind, const char *addr, const char *port) {
    static char src[WRITE_LEN];
    memset(src, 0x5C, sizeof(src));
    struct rpma_mr_local *local = NULL;
    struct rpma_mr_remote *remote = NULL;
    struct rpma_conn *conn = NULL;
    struct rpma_cq *cq = NULL;
    size_t offset = 0;
    int ret = rpma_mr_reg(peer, src, sizeof(src), RPMA_MR_USAGE_WRITE_SRC, &local);
    if (ret != 0)
        return ex_report("rpma_mr_reg", ret);
    if ((ret = ex_client_connect(peer, addr, port, NULL, NULL, &conn)) != 0)
        return ex_mr_dereg(ret, &local);
    if ((ret = forge(conn, kind, &remote, &offset)) == 0 &&
        (ret = rpma_conn_get_cq(conn, &cq)) != 0)
        ex_report("rpma_conn_get_cq", ret);
    if (ret == 0 && (ret = rpma_write(conn, remote, offset, local, 0, WRITE_LEN,
                                      RPMA_F_COMPLETION_ALWAYS, src)) != 0)
        ex_report("rpma_write", ret);
    struct ibv_wc wc;
    if (ret == 0 && (ret = ex_next_completion(cq, EX_TIMEOUT_MS, &wc)) == 0)
        printf("completion: status=%d (%s)\n", (int)wc.status, ibv_wc_status_str(wc.status));
    fflush(stdout);

    (void)rpma_mr_remote_delete(&remote);
    (void)rpma_conn_disconnect(conn);
    if (ret == 0)
        ret = print_next_event(conn);
    int del = rpma_conn_delete(&conn);
    if (del != 0 && ret == 0)
        ret = ex_report("rpma_conn_delete", del);
    return ex_mr_dereg(ret, &local);
}

/* records in flight at once: a kill always catches some of them unacknowledged */
#define STREAM_WINDOW 4

/* The flush of record seq carries seq + 1 as its op_context (0 is an unsignaled write). */
static const void *flush_context(uint64_t seq) {
    return (const void *)(uintptr_t)(seq + 1);
}

/* Posts record seq (write + persistent flush) from local slot seq % STREAM_WINDOW. */
static int post_record(struct rpma_conn *conn, struct rpma_mr_remote *dst, uint8_t *records,
                       struct rpma_mr_local *src, uint64_t seq) {
    /* once the region is full, keep rewriting the last record: the stream goes on */
    uint64_t slot = seq < DURABLE_CAPACITY ? seq : DURABLE_CAPACITY - 1;
    size_t dst_offset = slot * DURABLE_RECORD_SIZE;
    size_t src_offset = (seq % STREAM_WINDOW) * DURABLE_RECORD_SIZE;
    durable_record_fill(slot, records + src_offset);
    int ret = rpma_write(conn, dst, dst_offset, src, src_offset, DURABLE_RECORD_SIZE,
                         RPMA_F_COMPLETION_ON_ERROR, NULL);
    if (ret == 0)
        ret = rpma_flush(conn, dst, dst_offset, DURABLE_RECORD_SIZE, RPMA_FLUSH_TYPE_PERSISTENT,
                         RPMA_F_COMPLETION_ALWAYS, flush_context(seq));
    return ret;
}

/*
 * Streams records, STREAM_WINDOW in flight, until something fails; then collects the
 * completions of every record still in flight: each must come, with an error. 0 when the
 * failure was observed and every operation accounted for.
 */
static int stream_records(struct rpma_conn *conn, struct rpma_mr_remote *dst, uint8_t *records,
                          struct rpma_mr_local *src) {
    struct rpma_cq *cq = NULL;
    int ret = rpma_conn_get_cq(conn, &cq);
    if (ret != 0)
        return ex_report("rpma_conn_get_cq", ret);
    uint64_t posted = 0;    /* records posted */
    uint64_t completed = 0; /* records whose flush completed */
    bool failing = false;   /* something failed: post nothing more, collect the rest */
    while (!failing || completed < posted) {
        while (!failing && posted - completed < STREAM_WINDOW) {
            ret = post_record(conn, dst, records, src, posted);
            if (ret != 0) {
                printf("post failed: %s\n", rpma_err_2str(ret));
                failing = true;
            } else {
                posted++;
            }
        }
        if (completed == posted)
            break;
        struct ibv_wc wc;
        if ((ret = ex_next_completion(cq, EX_TIMEOUT_MS, &wc)) != 0) {
            printf("%" PRIu64 " records in flight never completed\n", posted - completed);
            return -1;
        }
        if (wc.status != IBV_WC_SUCCESS) {
            printf("error completion: status=%d (%s)\n", (int)wc.status,
                   ibv_wc_status_str(wc.status));
            failing = true;
        }
        if (wc.wr_id == 0)
            continue; /* a failed write; its flush completes separately */
        if (wc.wr_id != (uintptr_t)flush_context(completed)) {
            printf("completion of record %" PRIu64 " arrived, expected %" PRIu64 "\n",
                   (uint64_t)wc.wr_id - 1, completed);
            return -1;
        }
        /* acknowledged: the record is durable on the server now */
        if (wc.status == IBV_WC_SUCCESS && completed < DURABLE_CAPACITY)
            printf("ack %" PRIu64 "\n", completed);
        completed++;
        fflush(stdout);
    }
    fflush(stdout);
    return failing ? 0 : -1;
}

/*
 * One more record after the connection failed: as on an RDMA queue pair in the error state,
 * posting is expected to succeed and the operation to complete with an error.
 */
static int post_after_failure(struct rpma_conn *conn, struct rpma_mr_remote *dst, uint8_t *records,
                              struct rpma_mr_local *src) {
    struct rpma_cq *cq = NULL;
    int ret = rpma_conn_get_cq(conn, &cq);
    if (ret != 0)
        return ex_report("rpma_conn_get_cq", ret);
    ret = post_record(conn, dst, records, src, 0);
    if (ret != 0) {
        printf("post after failure: failed: %s\n", rpma_err_2str(ret));
    } else {
        struct ibv_wc wc;
        if ((ret = ex_next_completion(cq, EX_TIMEOUT_MS, &wc)) != 0)
            return ret;
        printf("post after failure: completion status=%d (%s)\n", (int)wc.status,
               ibv_wc_status_str(wc.status));
    }
    fflush(stdout);
    return 0;
}

static int stream(struct rpma_peer *peer, const char *addr, const char *port) {
    static uint8_t records[STREAM_WINDOW * DURABLE_RECORD_SIZE];
    struct rpma_mr_local *src = NULL;
    struct rpma_mr_remote *dst = NULL;
    struct rpma_peer_cfg *pcfg = NULL;
    struct rpma_conn *conn = NULL;
    int ret = rpma_mr_reg(peer, records, sizeof(records), RPMA_MR_USAGE_WRITE_SRC, &src);
    if (ret != 0)
        return ex_report("rpma_mr_reg", ret);
    if ((ret = ex_client_connect(peer, addr, port, NULL, NULL, &conn)) != 0)
        return ex_mr_dereg(ret, &src);
    if ((ret = ex_descriptors_unpack(conn, &dst, &pcfg)) == 0 &&
        (ret = rpma_conn_apply_remote_peer_cfg(conn, pcfg)) != 0)
        ex_report("rpma_conn_apply_remote_peer_cfg", ret);
    (void)rpma_peer_cfg_delete(&pcfg);
    if (ret == 0)
        ret = stream_records(conn, dst, records, src);
    fflush(stdout);
    if (ret == 0)
        ret = print_next_event(conn);
    if (ret == 0)
        ret = post_after_failure(conn, dst, records, src);
    (void)rpma_mr_remote_delete(&dst);
    (void)rpma_conn_disconnect(conn);
    int del = rpma_conn_delete(&conn);
    if (del != 0 && ret == 0)
        ret = ex_report("rpma_conn_delete", del);
    return ex_mr_dereg(ret, &src);
}

int main(int argc, char *argv[]) {
    struct rpma_peer *peer = NULL;
    int ret;
    if (argc == 4 && strcmp(argv[1], "connect") == 0) {
        if ((ret = ex_peer_new(argv[2], RPMA_UTIL_IBV_CONTEXT_REMOTE, &peer)) == 0)
            ret = connect_and_report(peer, argv[2], argv[3]);
    } else if (argc == 5 && strcmp(argv[1], "violate") == 0) {
        if ((ret = ex_peer_new(argv[3], RPMA_UTIL_IBV_CONTEXT_REMOTE, &peer)) == 0)
            ret = violate(peer, argv[2], argv[3], argv[4]);
    } else if (argc == 4 && strcmp(argv[1], "stream") == 0) {
        if ((ret = ex_peer_new(argv[2], RPMA_UTIL_IBV_CONTEXT_REMOTE, &peer)) == 0)
            ret = stream(peer, argv[2], argv[3]);
    } else {
        fprintf(stderr,
                "usage: %s connect <addr> <port>\n"
                "       %s violate beyond|straddle|rkey|plain <addr> <port>\n"
                "       %s stream <addr> <port>\n",
                argv[0], argv[0], argv[0]);
        return EXIT_FAILURE;
    }
    return ex_release(ret, NULL, &peer);
}
