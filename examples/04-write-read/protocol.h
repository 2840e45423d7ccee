/*
 * protocol.h -- what the server and the client of the write-read example agree on: the
 * region's size, where the client writes and what.
 */
#ifndef EXAMPLES_WRITE_READ_PROTOCOL_H
#define EXAMPLES_WRITE_READ_PROTOCOL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define REGION_SIZE 8192
/* an unaligned range crossing a page boundary; the rest of the region stays zero */
#define WRITE_OFFSET 1000
#define WRITE_LEN 5000

static inline uint8_t written_byte(size_t i) {
    return (uint8_t)(i * 7 + 3);
}

/* What the whole region must hold after the client's write. */
static inline uint8_t expected_byte(size_t offset) {
    if (offset < WRITE_OFFSET || offset >= WRITE_OFFSET + WRITE_LEN)
        return 0;
    return written_byte(offset - WRITE_OFFSET);
}

/* Checks a copy of the whole region; prints the first difference. */
static inline int check_region(const uint8_t *region, const char *who) {
    for (size_t i = 0; i < REGION_SIZE; i++) {
        if (region[i] != expected_byte(i)) {
            fprintf(stderr, "%s: region byte %zu is %#x, expected %#x\n", who, i, region[i],
                    expected_byte(i));
            return -1;
        }
    }
    return 0;
}

#endif /* EXAMPLES_WRITE_READ_PROTOCOL_H */
