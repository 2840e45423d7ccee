// The rdma_connect / rdma_accept parameters librpma uses on both sides.
#ifndef RPMA_CORE_SRC_PROVIDER_VERBS_VERBS_CONN_PARAM_H
#define RPMA_CORE_SRC_PROVIDER_VERBS_VERBS_CONN_PARAM_H

#include <rdma/rdma_cma.h>

#include <cstdint>

namespace rpma::provider::verbs {

// What the IB CM carries for the application in the TCP port space (RoCE
// and InfiniBand): a connection request has room for 56 bytes after
// rdma_cm's own header, a reply for 196. iWARP has its own limits.
inline constexpr uint8_t kMaxRequestPrivateData = 56;
inline constexpr uint8_t kMaxReplyPrivateData = 196;

// `private_data` (may be null when `length` is 0) is carried verbatim and
// must outlive the rdma_connect/rdma_accept call.
rdma_conn_param ConnParam(const void *private_data, uint8_t length);

}  // namespace rpma::provider::verbs

#endif  // RPMA_CORE_SRC_PROVIDER_VERBS_VERBS_CONN_PARAM_H
