/*
 * protocol.h -- what the server and the client of the read examples agree on: the size and
 * the content of the server's region.
 */
#ifndef EXAMPLES_READ_VOLATILE_PROTOCOL_H
#define EXAMPLES_READ_VOLATILE_PROTOCOL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* two pages and a bit: the read crosses page boundaries */
#define REGION_SIZE (2 * 4096 + 512)

/* the server's content: a greeting followed by a byte pattern */
#define CONTENT_GREETING "Hello, client! Read me."

static inline uint8_t content_byte(size_t i) {
    static const char greeting[] = CONTENT_GREETING;
    return i < sizeof(greeting) ? (uint8_t)greeting[i] : (uint8_t)(i * 31 + 7);
}

static inline void fill_content(uint8_t *buf, size_t len) {
    for (size_t i = 0; i < len; i++)
        buf[i] = content_byte(i);
}

/* Checks that buf holds the server's content; prints the first difference. */
static inline int check_content(const uint8_t *buf, size_t len) {
    for (size_t i = 0; i < len; i++) {
        if (buf[i] != content_byte(i)) {
            fprintf(stderr, "content differs at byte %zu: %#x instead of %#x\n", i, buf[i],
                    content_byte(i));
            return -1;
        }
    }
    return 0;
}

#endif /* EXAMPLES_READ_VOLATILE_PROTOCOL_H */
