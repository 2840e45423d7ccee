// One owner per ibverbs and librdmacm object: std::unique_ptr with the
// library's destroy call as the deleter (Owned<ibv_pd>, Owned<rdma_cm_id>,
// ...). A destructor cannot return an error, so a failed destroy is logged
// with what usually causes it.
//
// Owned<rdma_cm_event> acknowledges the event. librdmacm blocks
// rdma_destroy_id and rdma_migrate_id until every event of the id has been
// acknowledged, so an event owner must go out of scope before its id is
// destroyed or migrated.
#ifndef RPMA_CORE_SRC_PROVIDER_VERBS_VERBS_OWNERS_H
#define RPMA_CORE_SRC_PROVIDER_VERBS_VERBS_OWNERS_H

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <memory>

namespace rpma::provider::verbs {

struct Destroy {
    void operator()(ibv_pd *pd) const;
    void operator()(ibv_mr *mr) const;
    void operator()(ibv_comp_channel *channel) const;
    void operator()(ibv_cq *cq) const;
    void operator()(ibv_srq *srq) const;
    void operator()(rdma_event_channel *channel) const;
    void operator()(rdma_cm_id *id) const;
    void operator()(rdma_cm_event *event) const;
    void operator()(rdma_addrinfo *info) const;
};

template <typename T>
using Owned = std::unique_ptr<T, Destroy>;

// The errno of a failed ibverbs/librdmacm call that returned NULL or -1.
// Some of them fail without setting errno; `fallback` stands in then.
int ErrnoOr(int fallback);

}  // namespace rpma::provider::verbs

#endif  // RPMA_CORE_SRC_PROVIDER_VERBS_VERBS_OWNERS_H
