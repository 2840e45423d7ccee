/*
 * protocol.h -- the layout of the remote log that the server keeps in a file and the clients
 * append to.
 *
 *   [0, 8)            tail: bytes of records in the log, updated with rpma_atomic_write()
 *   [8, 64)           unused
 *   [64, LOG_SIZE)    records of RECORD_SIZE bytes, record n at 64 + n * RECORD_SIZE
 *
 * A record becomes part of the log only when the tail covers it, and the tail is only moved
 * after the record is persistent: a crash at any moment leaves a valid log.
 */
#ifndef EXAMPLES_LOG_APPEND_PROTOCOL_H
#define EXAMPLES_LOG_APPEND_PROTOCOL_H

#include <assert.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define LOG_SIZE (64 * 1024)
#define TAIL_OFFSET 0
#define RECORDS_OFFSET 64
#define RECORD_SIZE 64
#define LOG_CAPACITY ((LOG_SIZE - RECORDS_OFFSET) / RECORD_SIZE)

struct record {
    uint64_t seq; /* its index in the log */
    char text[48];
    uint64_t checksum; /* of the bytes before it */
};

static_assert(sizeof(struct record) == RECORD_SIZE, "a record is RECORD_SIZE bytes");

static inline uint64_t record_checksum(const struct record *r) {
    /* FNV-1a */
    const uint8_t *bytes = (const uint8_t *)r;
    uint64_t hash = 14695981039346656037ULL;
    for (size_t i = 0; i < offsetof(struct record, checksum); i++)
        hash = (hash ^ bytes[i]) * 1099511628211ULL;
    return hash;
}

/* Checks the log whose first bytes (tail and records) are at log; stores its length. */
static inline int check_log(const uint8_t *log, uint64_t *records) {
    uint64_t tail;
    memcpy(&tail, log + TAIL_OFFSET, sizeof(tail));
    if (tail % RECORD_SIZE != 0 || tail / RECORD_SIZE > LOG_CAPACITY) {
        fprintf(stderr, "log tail %llu is not a valid length\n", (unsigned long long)tail);
        return -1;
    }
    for (uint64_t n = 0; n < tail / RECORD_SIZE; n++) {
        struct record r;
        memcpy(&r, log + RECORDS_OFFSET + n * RECORD_SIZE, sizeof(r));
        if (r.seq != n || r.checksum != record_checksum(&r)) {
            fprintf(stderr, "log record %llu is damaged\n", (unsigned long long)n);
            return -1;
        }
    }
    *records = tail / RECORD_SIZE;
    return 0;
}

#endif /* EXAMPLES_LOG_APPEND_PROTOCOL_H */
