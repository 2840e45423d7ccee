/*
 * fault_common.h -- what fault_server and fault_client agree on.
 */
#ifndef TESTS_INTEGRATION_FAULT_COMMON_H
#define TESTS_INTEGRATION_FAULT_COMMON_H

#include <librpma.h>

/* "guarded" mode: a registered page followed by an unregistered one, all of it GUARD_BYTE */
#define GUARDED_REGION_SIZE 4096
#define GUARDED_BUFFER_SIZE (2 * GUARDED_REGION_SIZE)
#define GUARD_BYTE 0xAB

/* Stable names for the tests to match ("event: LOST"). */
static inline const char *event_name(enum rpma_conn_event event) {
    switch (event) {
        case RPMA_CONN_ESTABLISHED:
            return "ESTABLISHED";
        case RPMA_CONN_CLOSED:
            return "CLOSED";
        case RPMA_CONN_LOST:
            return "LOST";
        case RPMA_CONN_REJECTED:
            return "REJECTED";
        case RPMA_CONN_UNREACHABLE:
            return "UNREACHABLE";
        default:
            return "UNDEFINED";
    }
}

#endif /* TESTS_INTEGRATION_FAULT_COMMON_H */
