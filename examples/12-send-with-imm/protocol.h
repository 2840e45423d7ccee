/*
 * protocol.h -- what the server and the client of the send-with-imm example agree on.
 *
 * The client sends SWI_MESSAGES messages with a text payload, message k carrying the
 * immediate value swi_imm(k), then one message without any payload whose immediate value,
 * SWI_IMM_NO_PAYLOAD, is all it says. The values differ in every byte, so a receiver that
 * forgets to convert them from network byte order (ntohl()) notices.
 */
#ifndef EXAMPLES_SEND_WITH_IMM_PROTOCOL_H
#define EXAMPLES_SEND_WITH_IMM_PROTOCOL_H

#include <stdint.h>
#include <stdio.h>

#define SWI_MESSAGES 4
#define SWI_TEXT_SIZE 32
#define SWI_IMM_NO_PAYLOAD 0xC0DEFFFFu

static inline uint32_t swi_imm(uint32_t k) {
    return 0xC0DE0000u | k;
}

/* the payload of message k (k < SWI_MESSAGES), terminating NUL included; the cast tells the
 * compiler that it fits (gcc -O1 and up warns otherwise) */
static inline void swi_text(uint32_t k, char text[SWI_TEXT_SIZE]) {
    snprintf(text, SWI_TEXT_SIZE, "message %u, see its immediate", (unsigned)(uint8_t)k);
}

#endif /* EXAMPLES_SEND_WITH_IMM_PROTOCOL_H */
