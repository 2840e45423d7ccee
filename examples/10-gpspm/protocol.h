/*
 * protocol.h -- what the server and the client of the GPSPM examples (10, 11) agree on.
 *
 * The server's region is a file mapped with libpmem2. The client fills it in GPSPM_CHUNKS
 * writes of GPSPM_CHUNK_SIZE bytes (gpspm_byte() says what goes where). After each write it
 * sends a flush request for the range just written and waits for the response: the server has
 * made the range durable before it answers.
 */
#ifndef EXAMPLES_GPSPM_PROTOCOL_H
#define EXAMPLES_GPSPM_PROTOCOL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define GPSPM_CHUNKS 3
#define GPSPM_CHUNK_SIZE 4096
#define GPSPM_REGION_SIZE (GPSPM_CHUNKS * GPSPM_CHUNK_SIZE)

struct gpspm_flush_request {
    uint64_t op_id; /* the chunk's index, echoed in the response */
    uint64_t offset;
    uint64_t length;
};

struct gpspm_flush_response {
    uint64_t op_id;
    int64_t status; /* 0: the range is durable; -1: the request was invalid */
};

/* byte i of the region, as the client writes it: every chunk differs from the others */
static inline uint8_t gpspm_byte(size_t i) {
    return (uint8_t)((i / GPSPM_CHUNK_SIZE + 1) * 0x31 + i * 7);
}

/* Checks a copy of the whole region; prints the first difference. */
static inline int gpspm_check_region(const uint8_t *region) {
    for (size_t i = 0; i < GPSPM_REGION_SIZE; i++) {
        if (region[i] != gpspm_byte(i)) {
            fprintf(stderr, "byte %zu is %#x, expected %#x\n", i, region[i], gpspm_byte(i));
            return -1;
        }
    }
    return 0;
}

#endif /* EXAMPLES_GPSPM_PROTOCOL_H */
