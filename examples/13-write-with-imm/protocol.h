/*
 * protocol.h -- what the server (the target) and the client of the write-with-imm example
 * agree on.
 *
 * The client writes the server's region in WWI_CHUNKS chunks with rpma_write_with_imm(), chunk
 * k carrying the immediate value wwi_imm(k). Each such write consumes a receive posted by the
 * server, so the server tells the client when it may write which chunk: with a struct wwi_go
 * message, sent after the receive for that chunk is posted.
 */
#ifndef EXAMPLES_WRITE_WITH_IMM_PROTOCOL_H
#define EXAMPLES_WRITE_WITH_IMM_PROTOCOL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define WWI_CHUNKS 4
#define WWI_CHUNK_SIZE 1024
#define WWI_REGION_SIZE (WWI_CHUNKS * WWI_CHUNK_SIZE)

/* the server's go-ahead */
struct wwi_go {
    uint32_t next_chunk; /* the chunk to write now; WWI_CHUNKS: all written and checked */
};

/* differs in every byte, so a missing ntohl() shows */
static inline uint32_t wwi_imm(uint32_t chunk) {
    return 0x57490000u | chunk;
}

/* byte i of the region, as the client writes it */
static inline uint8_t wwi_byte(size_t i) {
    return (uint8_t)(i * 29 + i / WWI_CHUNK_SIZE + 3);
}

/* Checks chunks [first, first + count) of a copy of the region; prints the first difference. */
static inline int wwi_check_chunks(const uint8_t *region, uint32_t first, uint32_t count) {
    for (size_t i = first * WWI_CHUNK_SIZE; i < (size_t)(first + count) * WWI_CHUNK_SIZE; i++) {
        if (region[i] != wwi_byte(i)) {
            fprintf(stderr, "byte %zu is %#x, expected %#x\n", i, region[i], wwi_byte(i));
            return -1;
        }
    }
    return 0;
}

#endif /* EXAMPLES_WRITE_WITH_IMM_PROTOCOL_H */
