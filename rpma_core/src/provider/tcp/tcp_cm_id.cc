#include "rpma_core/src/provider/tcp/tcp_cm_id.h"

#include <cerrno>

#include "rpma_core/src/log.h"
#include "rpma_core/src/provider/tcp/tcp_completion_queue.h"
#include "rpma_core/src/provider/tcp/tcp_connection.h"
#include "rpma_core/src/provider/tcp/tcp_protection_domain.h"
#include "rpma_core/src/provider/tcp/tcp_queue_pair.h"
#include "rpma_core/src/provider/tcp/tcp_shared_receive_queue.h"

namespace rpma::provider::tcp {

CmId::CmId(const CmIdDeps &deps, std::shared_ptr<Connection> connection)
    : deps_(deps), connection_(std::move(connection)) {}

CmId::~CmId() {
    connection_->Abandon();
}

int CmId::CreateQp(provider::ProtectionDomain &pd, const QueuePairInit &init) {
    auto *tcp_pd = dynamic_cast<ProtectionDomain *>(&pd);
    auto *send_cq = dynamic_cast<CompletionQueue *>(init.send_cq);
    auto *recv_cq = dynamic_cast<CompletionQueue *>(init.recv_cq);
    auto *srq = dynamic_cast<SharedReceiveQueue *>(init.srq);
    if (qp_ != nullptr) {
        RPMA_LOG_ERROR("cannot create a second queue pair on one connection");
        return EINVAL;
    }
    if (tcp_pd == nullptr || send_cq == nullptr || recv_cq == nullptr ||
        (init.srq != nullptr && srq == nullptr)) {
        RPMA_LOG_ERROR(
            "cannot create a queue pair: the protection domain, both completion "
            "queues and the shared receive queue (if any) must come from the tcp "
            "provider");
        return EINVAL;
    }
    if (init.sq_size == 0 || init.sq_size > kMaxQueueDepth ||
        (srq == nullptr && (init.rq_size == 0 || init.rq_size > kMaxQueueDepth))) {
        RPMA_LOG_ERROR("cannot create a queue pair with sq_size %u and rq_size %u (1 to %u)",
                       init.sq_size, init.rq_size, kMaxQueueDepth);
        return EINVAL;
    }
    const uint32_t qp_num = deps_.qp_numbers->Allocate();
    if (qp_num == 0) {
        RPMA_LOG_ERROR("cannot create a queue pair: all queue pair numbers are in use");
        return ENOMEM;
    }
    auto created = std::make_unique<tcp::QueuePair>(connection_, qp_num, *deps_.qp_numbers);
    QueuePairBinding binding;
    binding.handle = created.get();
    binding.qp_num = qp_num;
    binding.pd_id = tcp_pd->Id();
    binding.send_cq = send_cq;
    binding.recv_cq = recv_cq;
    binding.srq = srq != nullptr ? &srq->Queue() : nullptr;
    binding.sq_size = init.sq_size;
    binding.rq_size = init.rq_size;
    if (const int err = connection_->BindQp(binding); err != 0)
        return err;
    qp_ = std::move(created);
    return 0;
}

provider::QueuePair *CmId::Qp() const {
    return qp_.get();
}

void CmId::DestroyQp() {
    qp_.reset();
}

int CmId::PeerAddress(sockaddr_storage *address) const {
    return connection_->PeerAddress(address);
}

const std::vector<uint8_t> &CmId::RequestPrivateData() const {
    return connection_->RequestPrivateData();
}

int CmId::Connect(const void *private_data, uint8_t length, int timeout_ms) {
    return connection_->Connect(private_data, length, timeout_ms);
}

int CmId::Accept(const void *private_data, uint8_t length) {
    return connection_->Accept(private_data, length);
}

int CmId::Reject() {
    return connection_->Reject();
}

int CmId::Disconnect() {
    return connection_->Disconnect();
}

int CmId::EventFd() const {
    return connection_->EventFd();
}

int CmId::NextEvent(CmEvent *event) {
    if (event == nullptr)
        return EINVAL;
    return connection_->NextEvent(event);
}

}  // namespace rpma::provider::tcp
