// rdma_cm events as librpma reads them: the type the API layer maps, the
// private data they carry, and the errno a failed step of address or route
// resolution stands for.
#ifndef RPMA_CORE_SRC_PROVIDER_VERBS_VERBS_CM_EVENT_H
#define RPMA_CORE_SRC_PROVIDER_VERBS_VERBS_CM_EVENT_H

#include <rdma/rdma_cma.h>

#include <cstdint>
#include <vector>

#include "rpma_core/src/provider/provider.h"

namespace rpma::provider::verbs {

CmEventType ToCmEventType(rdma_cm_event_type type);

// The private data of a CONNECT_REQUEST or ESTABLISHED event, byte for byte
// and at the length the event reports. Over InfiniBand/RoCE the CM pads the
// application's bytes with zeros to the size of its message field
// (kMaxRequestPrivateData, kMaxReplyPrivateData); librpma hands that padded
// length on, and so do we, so both report the same private data.
std::vector<uint8_t> PrivateDataOf(const rdma_cm_event &event);

// The errno for an event that ended address or route resolution (or a
// connection attempt) instead of the one that was expected.
int EventError(const rdma_cm_event &event);

// Why a connection attempt was rejected, in words, for the REJECTED event's
// status (an IB CM reject reason on IB and RoCE).
const char *RejectReason(int status);

}  // namespace rpma::provider::verbs

#endif  // RPMA_CORE_SRC_PROVIDER_VERBS_VERBS_CM_EVENT_H
