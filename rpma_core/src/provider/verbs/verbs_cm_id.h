// One side of one connection: an rdma_cm id on an event channel of its own,
// so that rpma_conn_get_event_fd reports this connection's events only
// (librpma migrates each connection's id to its own channel the same way).
#ifndef RPMA_CORE_SRC_PROVIDER_VERBS_VERBS_CM_ID_H
#define RPMA_CORE_SRC_PROVIDER_VERBS_VERBS_CM_ID_H

#include <rdma/rdma_cma.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "rpma_core/src/provider/provider.h"
#include "rpma_core/src/provider/verbs/verbs_owners.h"
#include "rpma_core/src/provider/verbs/verbs_queue_pair.h"

namespace rpma::provider::verbs {

class CmId final : public provider::CmId {
  public:
    // `id` reports its events on `channel`. `request_private_data`: what the
    // peer's connection request carried (passive side), else empty.
    CmId(Owned<rdma_event_channel> channel, Owned<rdma_cm_id> id,
         std::vector<uint8_t> request_private_data = {});

    ibv_context *Context() const override { return id_->verbs; }
    int CreateQp(provider::ProtectionDomain &pd, const QueuePairInit &init) override;
    provider::QueuePair *Qp() const override { return qp_.get(); }
    // ~QueuePair calls rdma_destroy_qp and frees the APM buffer after it.
    void DestroyQp() override { qp_.reset(); }
    int PeerAddress(sockaddr_storage *address) const override;
    const std::vector<uint8_t> &RequestPrivateData() const override {
        return request_private_data_;
    }
    // rdma_connect. The IB CM bounds the attempt with its own retries;
    // librpma's timeout applies to address and route resolution
    // (Device::Resolve), so `timeout_ms` is not used here either.
    int Connect(const void *private_data, uint8_t length, int timeout_ms) override;
    int Accept(const void *private_data, uint8_t length) override;
    int Reject() override;
    int Disconnect() override;
    int EventFd() const override { return channel_->fd; }
    int NextEvent(CmEvent *event) override;

  private:
    // Destroyed in reverse: the QP, then the id, then its channel.
    Owned<rdma_event_channel> channel_;
    Owned<rdma_cm_id> id_;
    std::unique_ptr<QueuePair> qp_;
    std::vector<uint8_t> request_private_data_;
};

}  // namespace rpma::provider::verbs

#endif  // RPMA_CORE_SRC_PROVIDER_VERBS_VERBS_CM_ID_H
