/*
 * protocol.h -- what the server and the clients of the multi-client example agree on.
 *
 * A client connects with its id (one byte) as private data. The server answers with the
 * descriptor of a slot of its memory reserved for that client. The client fills the slot
 * chunk by chunk, reading every chunk back, and finally sends a struct done_msg; the server
 * then checks the slot.
 */
#ifndef EXAMPLES_MULTI_CLIENT_EPOLL_PROTOCOL_H
#define EXAMPLES_MULTI_CLIENT_EPOLL_PROTOCOL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define MAX_CLIENTS 64
#define CHUNK_SIZE 2048
#define ROUNDS 8
#define SLOT_SIZE (CHUNK_SIZE * ROUNDS)

struct done_msg {
    uint32_t client_id;
    uint32_t bytes_written;
};

/* what client `id` stores at byte i of its slot */
static inline uint8_t slot_byte(uint32_t id, size_t i) {
    return (uint8_t)(i * 11 + id * 37 + 1);
}

/* Checks that the range [offset, offset + len) of client id's slot, copied at buf, is right. */
static inline int check_slot(uint32_t id, const uint8_t *buf, size_t offset, size_t len) {
    for (size_t i = 0; i < len; i++) {
        if (buf[i] != slot_byte(id, offset + i)) {
            fprintf(stderr, "client %u: slot byte %zu is %#x, expected %#x\n", (unsigned)id,
                    offset + i, buf[i], slot_byte(id, offset + i));
            return -1;
        }
    }
    return 0;
}

#endif /* EXAMPLES_MULTI_CLIENT_EPOLL_PROTOCOL_H */
