#include "rpma_core/src/provider/verbs/verbs_owners.h"

#include <cerrno>
#include <cstring>

#include "rpma_core/src/log.h"

namespace rpma::provider::verbs {

void Destroy::operator()(ibv_pd *pd) const {
    if (int err = ibv_dealloc_pd(pd); err != 0)
        RPMA_LOG_ERROR(
            "deallocating a protection domain failed: %s (deregister its memory "
            "regions and delete its connections and SRQs before the peer)",
            strerror(err));
}

void Destroy::operator()(ibv_mr *mr) const {
    if (int err = ibv_dereg_mr(mr); err != 0)
        RPMA_LOG_ERROR("deregistering a memory region failed: %s", strerror(err));
}

void Destroy::operator()(ibv_comp_channel *channel) const {
    if (ibv_destroy_comp_channel(channel) != 0)
        RPMA_LOG_ERROR(
            "destroying a completion channel failed: %s (delete every CQ that uses "
            "it first)",
            strerror(ErrnoOr(EBUSY)));
}

void Destroy::operator()(ibv_cq *cq) const {
    if (int err = ibv_destroy_cq(cq); err != 0)
        RPMA_LOG_ERROR(
            "destroying a completion queue failed: %s (delete the connections that "
            "use it first)",
            strerror(err));
}

void Destroy::operator()(ibv_srq *srq) const {
    if (int err = ibv_destroy_srq(srq); err != 0)
        RPMA_LOG_ERROR(
            "destroying a shared receive queue failed: %s (delete the connections "
            "that use it first)",
            strerror(err));
}

void Destroy::operator()(rdma_event_channel *channel) const {
    rdma_destroy_event_channel(channel);
}

void Destroy::operator()(rdma_cm_id *id) const {
    if (rdma_destroy_id(id) != 0)
        RPMA_LOG_ERROR("destroying an rdma_cm id failed: %s", strerror(ErrnoOr(EINVAL)));
}

void Destroy::operator()(rdma_cm_event *event) const {
    if (rdma_ack_cm_event(event) != 0)
        RPMA_LOG_ERROR("acknowledging an rdma_cm event failed: %s", strerror(ErrnoOr(EINVAL)));
}

void Destroy::operator()(rdma_addrinfo *info) const {
    rdma_freeaddrinfo(info);
}

int ErrnoOr(int fallback) {
    return errno != 0 ? errno : fallback;
}

}  // namespace rpma::provider::verbs
