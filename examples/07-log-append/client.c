/*
 * client.c -- log-append example, client: reads the log's tail, then appends records. Each
 * append writes the record and flushes it to persistence, then moves the tail with an 8-byte
 * atomic write and flushes that too. The four operations are posted back to back: the atomic
 * write is ordered after the flush before it, so the tail never covers a record that is not
 * persistent yet. Only the last flush asks for a completion.
 *
 * usage: client <addr> <port> <records>
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "examples/07-log-append/protocol.h"
#include "examples/common/example_conn.h"

/* local layout: the tail read from the server, then the records to append */
#define TAIL_BUF_OFFSET 0
#define RECORDS_BUF_OFFSET 64

struct appender {
    struct rpma_conn *conn;
    struct rpma_cq *cq;
    struct rpma_mr_remote *log;
    struct rpma_mr_local *local;
    uint8_t *buf;
};

static int read_tail(struct appender *a, uint64_t *tail) {
    static const char read_op[] = "read tail";
    int ret = rpma_read(a->conn, a->local, TAIL_BUF_OFFSET, a->log, TAIL_OFFSET, sizeof(*tail),
                        RPMA_F_COMPLETION_ALWAYS, read_op);
    if (ret != 0)
        return ex_report("rpma_read", ret);
    if ((ret = ex_wait_completion(a->cq, read_op)) != 0)
        return ret;
    memcpy(tail, a->buf + TAIL_BUF_OFFSET, sizeof(*tail));
    if (*tail % RECORD_SIZE != 0 || *tail / RECORD_SIZE > LOG_CAPACITY) {
        fprintf(stderr, "the log's tail %llu is invalid\n", (unsigned long long)*tail);
        return -1;
    }
    return 0;
}

/* Appends the record staged at local index i to the log whose length is *tail. */
static int append(struct appender *a, size_t i, uint64_t *tail) {
    static const char append_op[] = "append";
    size_t src = RECORDS_BUF_OFFSET + i * RECORD_SIZE;
    size_t dst = RECORDS_OFFSET + *tail;
    uint64_t new_tail = *tail + RECORD_SIZE;
    int ret = rpma_write(a->conn, a->log, dst, a->local, src, RECORD_SIZE,
                         RPMA_F_COMPLETION_ON_ERROR, NULL);
    if (ret != 0)
        return ex_report("rpma_write", ret);
    ret = rpma_flush(a->conn, a->log, dst, RECORD_SIZE, RPMA_FLUSH_TYPE_PERSISTENT,
                     RPMA_F_COMPLETION_ON_ERROR, NULL);
    if (ret != 0)
        return ex_report("rpma_flush", ret);
    char value[8];
    memcpy(value, &new_tail, sizeof(value));
    ret = rpma_atomic_write(a->conn, a->log, TAIL_OFFSET, value, RPMA_F_COMPLETION_ON_ERROR, NULL);
    if (ret != 0)
        return ex_report("rpma_atomic_write", ret);
    ret = rpma_flush(a->conn, a->log, TAIL_OFFSET, sizeof(new_tail), RPMA_FLUSH_TYPE_PERSISTENT,
                     RPMA_F_COMPLETION_ALWAYS, append_op);
    if (ret != 0)
        return ex_report("rpma_flush", ret);
    /* a failure of any of the four shows up here, before the flush's own completion */
    if ((ret = ex_wait_completion(a->cq, append_op)) != 0)
        return ret;
    *tail = new_tail;
    return 0;
}

static int append_records(struct appender *a, size_t count) {
    struct rpma_peer_cfg *pcfg = NULL;
    int ret = ex_descriptors_unpack(a->conn, &a->log, &pcfg);
    if (ret != 0)
        return ret;
    if ((ret = rpma_conn_apply_remote_peer_cfg(a->conn, pcfg)) != 0)
        ex_report("rpma_conn_apply_remote_peer_cfg", ret);
    (void)rpma_peer_cfg_delete(&pcfg);
    if (ret == 0 && (ret = rpma_conn_get_cq(a->conn, &a->cq)) != 0)
        ex_report("rpma_conn_get_cq", ret);

    uint64_t tail = 0;
    if (ret == 0)
        ret = read_tail(a, &tail);
    if (ret == 0 && tail / RECORD_SIZE + count > LOG_CAPACITY) {
        fprintf(stderr, "the log has no room for %zu more records\n", count);
        ret = -1;
    }
    uint64_t first = tail / RECORD_SIZE;
    for (size_t i = 0; ret == 0 && i < count; i++) {
        struct record r = {.seq = first + i};
        snprintf(r.text, sizeof(r.text), "record %llu by client %ld", (unsigned long long)r.seq,
                 (long)getpid());
        r.checksum = record_checksum(&r);
        memcpy(a->buf + RECORDS_BUF_OFFSET + i * RECORD_SIZE, &r, sizeof(r));
        ret = append(a, i, &tail);
    }
    if (ret == 0)
        printf("client: appended records %llu..%llu, the log has %llu records\n",
               (unsigned long long)first, (unsigned long long)(first + count - 1),
               (unsigned long long)(tail / RECORD_SIZE));
    (void)rpma_mr_remote_delete(&a->log);
    return ret;
}

int main(int argc, char *argv[]) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s <addr> <port> <records>\n", argv[0]);
        return EXIT_FAILURE;
    }
    const char *addr = argv[1];
    const char *port = argv[2];
    int count = atoi(argv[3]);
    if (count < 1 || count > LOG_CAPACITY) {
        fprintf(stderr, "records must be 1..%d\n", LOG_CAPACITY);
        return EXIT_FAILURE;
    }

    struct appender a = {0};
    size_t local_size = RECORDS_BUF_OFFSET + (size_t)count * RECORD_SIZE;
    a.buf = ex_alloc_aligned(local_size);
    if (a.buf == NULL)
        return EXIT_FAILURE;
    struct rpma_peer *peer = NULL;
    int ret = ex_peer_new(addr, RPMA_UTIL_IBV_CONTEXT_REMOTE, &peer);
    if (ret != 0)
        goto out;
    ret = rpma_mr_reg(peer, a.buf, local_size, RPMA_MR_USAGE_READ_DST | RPMA_MR_USAGE_WRITE_SRC,
                      &a.local);
    if (ret != 0) {
        ex_report("rpma_mr_reg", ret);
        goto out;
    }
    if ((ret = ex_client_connect(peer, addr, port, NULL, NULL, &a.conn)) != 0)
        goto out;
    ret = append_records(&a, (size_t)count);
    int closed = ex_disconnect(&a.conn);
    if (ret == 0)
        ret = closed;
out:
    ret = ex_mr_dereg(ret, &a.local);
    ret = ex_release(ret, NULL, &peer);
    free(a.buf);
    return ret;
}
