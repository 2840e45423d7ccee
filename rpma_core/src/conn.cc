// rpma_conn_*: connections, their events and completion channels.
#include "rpma_core/src/conn.h"

#include <cerrno>
#include <cstring>
#include <new>

#include "librpma.h"
#include "rpma_core/src/fd_wait.h"
#include "rpma_core/src/log.h"
#include "rpma_core/src/peer_cfg.h"

namespace {

enum rpma_conn_event ToConnEvent(rpma::provider::CmEventType type) {
    using rpma::provider::CmEventType;
    switch (type) {
        case CmEventType::kEstablished:
            return RPMA_CONN_ESTABLISHED;
        case CmEventType::kConnectError:
        case CmEventType::kDeviceRemoval:
            return RPMA_CONN_LOST;
        case CmEventType::kDisconnected:
        case CmEventType::kTimewaitExit:
            return RPMA_CONN_CLOSED;
        case CmEventType::kRejected:
            return RPMA_CONN_REJECTED;
        case CmEventType::kUnreachable:
            return RPMA_CONN_UNREACHABLE;
        case CmEventType::kOther:
            break;
    }
    return RPMA_CONN_UNDEFINED;
}

}  // namespace

namespace rpma {

int NewConn(rpma_conn_req &&req, rpma_conn **conn_ptr) {
    auto conn = std::unique_ptr<rpma_conn>(new (std::nothrow) rpma_conn);
    if (conn == nullptr)
        return RPMA_E_NOMEM;
    if (req.incoming)
        conn->private_data = req.id->RequestPrivateData();
    conn->queues = std::move(req.queues);
    conn->id = std::move(req.id);
    *conn_ptr = conn.release();
    return 0;
}

}  // namespace rpma

int rpma_conn_get_event_fd(const struct rpma_conn *conn, int *fd) {
    if (conn == nullptr || fd == nullptr)
        return RPMA_E_INVAL;
    *fd = conn->id->EventFd();
    return 0;
}

int rpma_conn_next_event(struct rpma_conn *conn, enum rpma_conn_event *event) {
    if (conn == nullptr || event == nullptr)
        return RPMA_E_INVAL;
    int fd = conn->id->EventFd();
    bool blocking = !rpma::IsNonBlocking(fd);
    rpma::provider::CmEvent cm_event;
    int err;
    while ((err = conn->id->NextEvent(&cm_event)) == EAGAIN && blocking) {
        err = rpma::WaitReadable(fd);
        if (err != 0)
            break;
    }
    if (err == EAGAIN)
        return RPMA_E_NO_EVENT;
    if (err != 0) {
        RPMA_LOG_ERROR("reading the next connection event failed: %s", strerror(err));
        return RPMA_E_PROVIDER;
    }
    enum rpma_conn_event mapped = ToConnEvent(cm_event.type);
    if (mapped == RPMA_CONN_UNDEFINED) {
        RPMA_LOG_WARNING("a connection event with no librpma meaning arrived");
        return RPMA_E_UNKNOWN;
    }
    if (mapped == RPMA_CONN_ESTABLISHED && !cm_event.private_data.empty())
        conn->private_data = std::move(cm_event.private_data);
    RPMA_LOG_NOTICE("%s", rpma_utils_conn_event_2str(mapped));
    *event = mapped;
    return 0;
}

int rpma_conn_get_private_data(const struct rpma_conn *conn, struct rpma_conn_private_data *pdata) {
    if (conn == nullptr || pdata == nullptr)
        return RPMA_E_INVAL;
    const std::vector<uint8_t> &data = conn->private_data;
    pdata->ptr = data.empty() ? nullptr : const_cast<uint8_t *>(data.data());
    pdata->len = static_cast<uint8_t>(data.size());
    return 0;
}

int rpma_conn_apply_remote_peer_cfg(struct rpma_conn *conn, const struct rpma_peer_cfg *pcfg) {
    if (conn == nullptr || pcfg == nullptr)
        return RPMA_E_INVAL;
    conn->direct_write_to_pmem = pcfg->direct_write_to_pmem.load();
    return 0;
}

int rpma_conn_get_qp_num(const struct rpma_conn *conn, uint32_t *qp_num) {
    if (conn == nullptr || qp_num == nullptr)
        return RPMA_E_INVAL;
    *qp_num = conn->id->Qp()->QpNum();
    return 0;
}

int rpma_conn_get_cq(const struct rpma_conn *conn, struct rpma_cq **cq_ptr) {
    if (conn == nullptr || cq_ptr == nullptr)
        return RPMA_E_INVAL;
    *cq_ptr = conn->queues.cq.get();
    return 0;
}

int rpma_conn_get_rcq(const struct rpma_conn *conn, struct rpma_cq **rcq_ptr) {
    if (conn == nullptr || rcq_ptr == nullptr)
        return RPMA_E_INVAL;
    *rcq_ptr = conn->queues.rcq.get();
    return 0;
}

int rpma_conn_get_compl_fd(const struct rpma_conn *conn, int *fd) {
    if (conn == nullptr || fd == nullptr)
        return RPMA_E_INVAL;
    if (!conn->queues.shared_channel)
        return RPMA_E_NOT_SHARED_CHNL;
    *fd = conn->queues.channel->Fd();
    return 0;
}

int rpma_conn_wait(struct rpma_conn *conn, int flags, struct rpma_cq **cq, bool *is_rcq) {
    (void)flags;  // reserved by librpma
    if (conn == nullptr || cq == nullptr)
        return RPMA_E_INVAL;
    if (!conn->queues.shared_channel)
        return RPMA_E_NOT_SHARED_CHNL;
    rpma::provider::CompletionQueue *fired = nullptr;
    int ret = rpma::WaitForCqEvent(*conn->queues.channel, &fired);
    if (ret == RPMA_E_PROVIDER)
        *cq = nullptr;
    if (ret != 0)
        return ret;
    rpma_cq *main = conn->queues.cq.get();
    rpma_cq *receive = conn->queues.rcq.get();
    bool from_rcq = receive != nullptr && fired == receive->queue.get();
    if (!from_rcq && fired != main->queue.get())
        return RPMA_E_UNKNOWN;
    *cq = from_rcq ? receive : main;
    if (is_rcq != nullptr)
        *is_rcq = from_rcq;
    return 0;
}

int rpma_conn_disconnect(struct rpma_conn *conn) {
    if (conn == nullptr)
        return RPMA_E_INVAL;
    int err = conn->id->Disconnect();
    if (err != 0) {
        RPMA_LOG_ERROR("disconnecting failed: %s", strerror(err));
        return RPMA_E_PROVIDER;
    }
    RPMA_LOG_NOTICE("requested disconnection");
    return 0;
}

int rpma_conn_delete(struct rpma_conn **conn_ptr) {
    if (conn_ptr == nullptr)
        return RPMA_E_INVAL;
    delete *conn_ptr;
    *conn_ptr = nullptr;
    return 0;
}
