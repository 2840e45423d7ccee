#include "rpma_core/src/provider/verbs/verbs_cm_id.h"

#include <cerrno>
#include <cstring>

#include "rpma_core/src/log.h"
#include "rpma_core/src/provider/verbs/verbs_cm_event.h"
#include "rpma_core/src/provider/verbs/verbs_conn_param.h"
#include "rpma_core/src/provider/verbs/verbs_device.h"
#include "rpma_core/src/provider/verbs/verbs_event_channel.h"
#include "rpma_core/src/provider/verbs/verbs_protection_domain.h"

namespace rpma::provider::verbs {

namespace {

// librdmacm's -1-and-errno convention, logged, as an errno.
int CmResult(int ret, const char *call) {
    if (ret == 0)
        return 0;
    int err = ErrnoOr(EIO);
    RPMA_LOG_ERROR("%s failed: %s", call, strerror(err));
    return err;
}

}  // namespace

CmId::CmId(Owned<rdma_event_channel> channel, Owned<rdma_cm_id> id,
           std::vector<uint8_t> request_private_data)
    : channel_(std::move(channel)),
      id_(std::move(id)),
      request_private_data_(std::move(request_private_data)) {}

int CmId::CreateQp(provider::ProtectionDomain &pd, const QueuePairInit &init) {
    auto *verbs_pd = dynamic_cast<ProtectionDomain *>(&pd);
    if (verbs_pd == nullptr) {
        RPMA_LOG_ERROR("a verbs connection needs a peer of the verbs provider");
        return EINVAL;
    }
    if (qp_ != nullptr) {
        RPMA_LOG_ERROR("this connection already has a queue pair");
        return EEXIST;
    }
    if (verbs_pd->Raw()->context != id_->verbs) {
        RPMA_LOG_ERROR(
            "the connection runs on %s but the peer was made for %s (make the peer "
            "from rpma_utils_get_ibv_context() of the address you connect or listen "
            "on)",
            ibv_get_device_name(id_->verbs->device), verbs_pd->device().Name());
        return EINVAL;
    }
    return QueuePair::Create(id_.get(), *verbs_pd, init, &qp_);
}

int CmId::Connect(const void *private_data, uint8_t length, int /*timeout_ms*/) {
    rdma_conn_param param = ConnParam(private_data, length);
    errno = 0;
    int err = CmResult(rdma_connect(id_.get(), &param), "rdma_connect");
    if (err == EINVAL && length > kMaxRequestPrivateData)
        RPMA_LOG_ERROR(
            "a connection request carries at most %u bytes of private data here, not "
            "%u",
            kMaxRequestPrivateData, length);
    return err;
}

int CmId::Accept(const void *private_data, uint8_t length) {
    rdma_conn_param param = ConnParam(private_data, length);
    errno = 0;
    int err = CmResult(rdma_accept(id_.get(), &param), "rdma_accept");
    if (err == EINVAL && length > kMaxReplyPrivateData)
        RPMA_LOG_ERROR(
            "an accepted connection carries at most %u bytes of private data here, "
            "not %u",
            kMaxReplyPrivateData, length);
    return err;
}

int CmId::Reject() {
    errno = 0;
    return CmResult(rdma_reject(id_.get(), nullptr, 0), "rdma_reject");
}

int CmId::Disconnect() {
    errno = 0;
    return CmResult(rdma_disconnect(id_.get()), "rdma_disconnect");
}

int CmId::NextEvent(CmEvent *event) {
    Owned<rdma_cm_event> got;
    int err = TryGetEvent(channel_.get(), &got);
    if (err != 0) {
        if (err != EAGAIN)
            RPMA_LOG_ERROR("reading a connection event failed: %s", strerror(err));
        return err;
    }
    CmEvent mapped;
    mapped.type = ToCmEventType(got->event);
    switch (got->event) {
        case RDMA_CM_EVENT_ESTABLISHED:
            mapped.private_data = PrivateDataOf(*got);
            break;
        case RDMA_CM_EVENT_REJECTED:
            RPMA_LOG_NOTICE("connection rejected (status %d: %s)", got->status,
                            RejectReason(got->status));
            break;
        case RDMA_CM_EVENT_UNREACHABLE:
        case RDMA_CM_EVENT_CONNECT_ERROR:
            RPMA_LOG_NOTICE("%s: %s (is the peer up and reachable over RDMA?)",
                            rdma_event_str(got->event), strerror(EventError(*got)));
            break;
        default:
            if (mapped.type == CmEventType::kOther)
                RPMA_LOG_INFO("rdma_cm event %s (status %d) on a connection",
                              rdma_event_str(got->event), got->status);
            break;
    }
    *event = std::move(mapped);
    return 0;  // `got` is acknowledged here, after its private data was copied
}

int CmId::PeerAddress(sockaddr_storage *address) const {
    const sockaddr *peer = rdma_get_peer_addr(id_.get());
    const size_t length = peer == nullptr               ? 0
                          : peer->sa_family == AF_INET  ? sizeof(sockaddr_in)
                          : peer->sa_family == AF_INET6 ? sizeof(sockaddr_in6)
                                                        : 0;
    if (length == 0)
        return ENOTCONN;
    *address = sockaddr_storage{};
    std::memcpy(address, peer, length);
    return 0;
}

}  // namespace rpma::provider::verbs
