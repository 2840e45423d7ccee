#include "rpma_core/src/provider/verbs/verbs_cm_event.h"

#include <cerrno>

namespace rpma::provider::verbs {

CmEventType ToCmEventType(rdma_cm_event_type type) {
    switch (type) {
        case RDMA_CM_EVENT_ESTABLISHED:
            return CmEventType::kEstablished;
        case RDMA_CM_EVENT_REJECTED:
            return CmEventType::kRejected;
        case RDMA_CM_EVENT_ADDR_ERROR:
        case RDMA_CM_EVENT_ROUTE_ERROR:
        case RDMA_CM_EVENT_UNREACHABLE:
            return CmEventType::kUnreachable;
        case RDMA_CM_EVENT_CONNECT_ERROR:
            return CmEventType::kConnectError;
        case RDMA_CM_EVENT_DEVICE_REMOVAL:
            return CmEventType::kDeviceRemoval;
        case RDMA_CM_EVENT_DISCONNECTED:
            return CmEventType::kDisconnected;
        case RDMA_CM_EVENT_TIMEWAIT_EXIT:
            return CmEventType::kTimewaitExit;
        default:
            return CmEventType::kOther;
    }
}

std::vector<uint8_t> PrivateDataOf(const rdma_cm_event &event) {
    const rdma_conn_param &conn = event.param.conn;
    if (conn.private_data == nullptr || conn.private_data_len == 0)
        return {};
    const auto *bytes = static_cast<const uint8_t *>(conn.private_data);
    return std::vector<uint8_t>(bytes, bytes + conn.private_data_len);
}

int EventError(const rdma_cm_event &event) {
    switch (event.event) {
        case RDMA_CM_EVENT_ADDR_ERROR:
        case RDMA_CM_EVENT_ROUTE_ERROR:
        case RDMA_CM_EVENT_UNREACHABLE:
        case RDMA_CM_EVENT_CONNECT_ERROR:
            // The kernel reports these with a negative errno (ETIMEDOUT,
            // ENETUNREACH, ENODEV, ...) when it has one.
            return event.status < 0 ? -event.status : EHOSTUNREACH;
        case RDMA_CM_EVENT_REJECTED:
            return ECONNREFUSED;
        case RDMA_CM_EVENT_DEVICE_REMOVAL:
            return ENODEV;
        default:
            return EPROTO;
    }
}

const char *RejectReason(int status) {
    switch (status) {
        case 8:  // IB_CM_REJ_INVALID_SERVICE_ID
            return "nobody listens on that address and port; start the server first";
        case 28:  // IB_CM_REJ_CONSUMER_DEFINED
            return "the server rejected the connection";
        default:
            return "see the IB CM reject reasons";
    }
}

}  // namespace rpma::provider::verbs
