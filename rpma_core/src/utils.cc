// rpma_utils_*: device lookup and helpers that belong to no object.
#include "librpma.h"
#include "rpma_core/src/devices.h"
#include "rpma_core/src/log.h"

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

int rpma_utils_get_ibv_context(const char *addr, enum rpma_util_ibv_context_type type,
                               struct ibv_context **ibv_ctx_ptr) {
    if (addr == nullptr || ibv_ctx_ptr == nullptr ||
        (type != RPMA_UTIL_IBV_CONTEXT_LOCAL && type != RPMA_UTIL_IBV_CONTEXT_REMOTE))
        return RPMA_E_INVAL;
    return rpma::LookupContext(addr, type, ibv_ctx_ptr);
}

int rpma_utils_ibv_context_is_odp_capable(struct ibv_context *ibv_ctx, int *is_odp_capable) {
    if (ibv_ctx == nullptr || is_odp_capable == nullptr)
        return RPMA_E_INVAL;
    rpma::provider::Device *device = rpma::FindDevice(ibv_ctx);
    if (device == nullptr) {
        RPMA_LOG_ERROR("this ibv_context belongs to no provider of this library");
        return RPMA_E_PROVIDER;
    }
    *is_odp_capable = device->IsOdpCapable() ? 1 : 0;
    return 0;
}
