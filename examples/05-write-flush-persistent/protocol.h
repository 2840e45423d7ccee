/*
 * protocol.h -- what the server and the client of the write-flush-persistent example agree
 * on: the size of the server's persistent region and what the client stores in it.
 */
#ifndef EXAMPLES_WRITE_FLUSH_PERSISTENT_PROTOCOL_H
#define EXAMPLES_WRITE_FLUSH_PERSISTENT_PROTOCOL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define PMEM_REGION_SIZE (3 * 4096)

#define STORED_GREETING "Hello, persistent memory! -- your client"

/* The client fills the whole region: the greeting, then a byte pattern. */
static inline uint8_t stored_byte(size_t i) {
    static const char greeting[] = STORED_GREETING;
    return i < sizeof(greeting) ? (uint8_t)greeting[i] : (uint8_t)(i * 13 + 5);
}

/* Checks a copy of the whole region; prints the first difference. */
static inline int check_stored(const uint8_t *region) {
    for (size_t i = 0; i < PMEM_REGION_SIZE; i++) {
        if (region[i] != stored_byte(i)) {
            fprintf(stderr, "byte %zu is %#x, expected %#x\n", i, region[i], stored_byte(i));
            return -1;
        }
    }
    return 0;
}

#endif /* EXAMPLES_WRITE_FLUSH_PERSISTENT_PROTOCOL_H */
