// rdma_cm_id: the application's handle on one connection, active (from
// Device::Resolve) or passive (from Listener::NextRequest), and the owner of
// its queue pair. Destroying it without a disconnect cuts the connection; the
// peer sees it as lost.
#ifndef RPMA_CORE_SRC_PROVIDER_TCP_TCP_CM_ID_H
#define RPMA_CORE_SRC_PROVIDER_TCP_TCP_CM_ID_H

#include <memory>
#include <vector>

#include "rpma_core/src/provider/provider.h"

namespace rpma::provider::tcp {

class Connection;
class QpNumberAllocator;

struct CmIdDeps {
    ibv_context *context;
    QpNumberAllocator *qp_numbers;
};

class CmId final : public provider::CmId {
  public:
    CmId(const CmIdDeps &deps, std::shared_ptr<Connection> connection);
    ~CmId() override;
    CmId(const CmId &) = delete;
    CmId &operator=(const CmId &) = delete;

    ibv_context *Context() const override { return deps_.context; }
    // EINVAL for objects of another provider, missing CQs, depths outside
    // 1..kMaxQueueDepth, or a second QP on the same id.
    int CreateQp(provider::ProtectionDomain &pd, const QueuePairInit &init) override;
    QueuePair *Qp() const override;
    // The QueuePair's destruction unbinds it from the connection (dropping
    // posted receives, detaching the CQs) and frees its number, exactly as
    // ~CmId does; a new QP may then be bound.
    void DestroyQp() override;
    int PeerAddress(sockaddr_storage *address) const override;
    const std::vector<uint8_t> &RequestPrivateData() const override;
    int Connect(const void *private_data, uint8_t length, int timeout_ms) override;
    int Accept(const void *private_data, uint8_t length) override;
    int Reject() override;
    int Disconnect() override;
    int EventFd() const override;
    int NextEvent(CmEvent *event) override;
    // The connection behind it (its unit tests drive it directly).
    Connection &connection() const { return *connection_; }

  private:
    const CmIdDeps deps_;
    const std::shared_ptr<Connection> connection_;
    // Destroyed in ~CmId before the connection is abandoned.
    std::unique_ptr<QueuePair> qp_;
};

}  // namespace rpma::provider::tcp

#endif  // RPMA_CORE_SRC_PROVIDER_TCP_TCP_CM_ID_H
