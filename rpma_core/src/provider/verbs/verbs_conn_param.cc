#include "rpma_core/src/provider/verbs/verbs_conn_param.h"

namespace rpma::provider::verbs {

rdma_conn_param ConnParam(const void *private_data, uint8_t length) {
    rdma_conn_param param{};
    param.private_data = length != 0 ? private_data : nullptr;
    param.private_data_len = length;
    // RDMA_MAX_* make librdmacm use the device's limits (max_qp_rd_atom,
    // max_qp_init_rd_atom), lowered to what the other side offers, so the
    // READs of APM flushes may be outstanding as deeply as both allow.
    param.responder_resources = RDMA_MAX_RESP_RES;
    param.initiator_depth = RDMA_MAX_INIT_DEPTH;
    param.flow_control = 1;
    // The largest 3-bit values: retry as long as the transport lets us
    // (7 means "infinite" for RNR retries) rather than break a connection
    // over a lost packet or a receiver that has not posted a buffer yet.
    param.retry_count = 7;
    param.rnr_retry_count = 7;
    return param;
}

}  // namespace rpma::provider::verbs
