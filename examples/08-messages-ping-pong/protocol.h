/*
 * protocol.h -- what the server and the client of the ping-pong examples (08, 09, 14) agree on.
 *
 * The client connects with a struct pp_hello as private data: how many rounds it plays and a
 * tag marking its messages. In each round it sends a ping and the server answers with a pong
 * carrying the ping's value plus one; the client's next ping carries the last pong's value. So
 * ping #seq of a client carries pp_ping_value(tag, seq), and each side checks every message.
 */
#ifndef EXAMPLES_MESSAGES_PING_PONG_PROTOCOL_H
#define EXAMPLES_MESSAGES_PING_PONG_PROTOCOL_H

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>

#define PP_MAX_ROUNDS 100000

/* the client's private data */
struct pp_hello {
    uint32_t rounds;
    uint32_t tag;
};

/* a ping or a pong */
struct pp_msg {
    uint32_t tag; /* the client's */
    uint32_t seq; /* the round */
    uint64_t value;
};

static inline uint64_t pp_ping_value(uint32_t tag, uint32_t seq) {
    return (uint64_t)tag * 1000003u + 17u + seq;
}

/* Checks that msg (a `what`, e.g. "ping") is {tag, seq, value}; prints the difference. */
static inline int pp_check_msg(const char *what, const struct pp_msg *msg, uint32_t tag,
                               uint32_t seq, uint64_t value) {
    if (msg->tag != tag || msg->seq != seq || msg->value != value) {
        fprintf(stderr,
                "unexpected %s {tag %" PRIu32 ", seq %" PRIu32 ", value %" PRIu64
                "}, expected {%" PRIu32 ", %" PRIu32 ", %" PRIu64 "}\n",
                what, msg->tag, msg->seq, msg->value, tag, seq, value);
        return -1;
    }
    return 0;
}

#endif /* EXAMPLES_MESSAGES_PING_PONG_PROTOCOL_H */
