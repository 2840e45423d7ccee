// rpma_utils_*: helpers that belong to no object.
#include "librpma.h"

const char *rpma_utils_conn_event_2str(enum rpma_conn_event conn_event) {
    switch (conn_event) {
        case RPMA_CONN_UNDEFINED:
            return "Undefined connection event";
        case RPMA_CONN_ESTABLISHED:
            return "Connection established";
        case RPMA_CONN_CLOSED:
            return "Connection closed";
        case RPMA_CONN_LOST:
            return "Connection lost";
        case RPMA_CONN_REJECTED:
            return "Connection rejected";
        case RPMA_CONN_UNREACHABLE:
            return "Connection unreachable";
    }
    return "Unsupported connection event";
}
