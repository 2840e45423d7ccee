/*
 * durable_record.h -- the records fault_client's "stream" mode writes and the durability test
 * looks for in the server's file (C and C++).
 */
#ifndef TESTS_INTEGRATION_DURABLE_RECORD_H
#define TESTS_INTEGRATION_DURABLE_RECORD_H

#include <stdint.h>
#include <string.h>

#define DURABLE_RECORD_SIZE 64
/* the server's file-backed region; record n lives at n * DURABLE_RECORD_SIZE */
#define DURABLE_REGION_SIZE (4 * 1024 * 1024)
#define DURABLE_CAPACITY (DURABLE_REGION_SIZE / DURABLE_RECORD_SIZE)

/* The content of record seq: seq, its complement, then bytes derived from both. */
static inline void durable_record_fill(uint64_t seq, uint8_t out[DURABLE_RECORD_SIZE]) {
    uint64_t inverted = ~seq;
    memcpy(out, &seq, sizeof(seq));
    memcpy(out + 8, &inverted, sizeof(inverted));
    for (int i = 16; i < DURABLE_RECORD_SIZE; i++)
        out[i] = (uint8_t)(seq * 7 + (uint64_t)i);
}

#endif /* TESTS_INTEGRATION_DURABLE_RECORD_H */
