// A listening rdma_cm id on an event channel of its own. Each connection
// request leaves it on an id that NextRequest moves to a channel of its own
// (a CmId), as librpma does, so that the listener's fd reports connection
// requests only.
#ifndef RPMA_CORE_SRC_PROVIDER_VERBS_VERBS_LISTENER_H
#define RPMA_CORE_SRC_PROVIDER_VERBS_VERBS_LISTENER_H

#include <rdma/rdma_cma.h>

#include <memory>

#include "rpma_core/src/provider/provider.h"
#include "rpma_core/src/provider/verbs/verbs_owners.h"

namespace rpma::provider::verbs {

class Device;

class Listener final : public provider::Listener {
  public:
    // rdma_getaddrinfo + rdma_bind_addr + rdma_listen on addr:port, which
    // `device` must serve.
    static int Create(const Device &device, const char *addr, const char *port,
                      std::unique_ptr<provider::Listener> *listener);

    Listener(const Device &device, Owned<rdma_event_channel> channel, Owned<rdma_cm_id> id)
        : device_(device), channel_(std::move(channel)), id_(std::move(id)) {}

    int Fd() const override { return channel_->fd; }
    // Requests that arrive on another device than the peer's are rejected
    // and skipped: their queue pair could not use the peer's memory.
    int NextRequest(std::unique_ptr<provider::CmId> *id) override;

  private:
    const Device &device_;
    Owned<rdma_event_channel> channel_;
    Owned<rdma_cm_id> id_;
};

}  // namespace rpma::provider::verbs

#endif  // RPMA_CORE_SRC_PROVIDER_VERBS_VERBS_LISTENER_H
