// struct rpma_conn_req: a connection being set up, outgoing (from
// rpma_conn_req_new) or incoming (from rpma_ep_next_conn_req). It owns the
// queues the connection will use and hands them to it when it connects.
#ifndef RPMA_CORE_SRC_CONN_REQ_H
#define RPMA_CORE_SRC_CONN_REQ_H

#include <memory>

#include "librpma.h"
#include "rpma_core/src/cq.h"
#include "rpma_core/src/provider/provider.h"

namespace rpma {

// The completion side of a connection. Declared before the CmId in every
// owner so that the QP (owned by the CmId) is destroyed before its CQs, and
// the CQs before their channels.
struct ConnQueues {
    std::unique_ptr<provider::CompletionChannel> channel;      // the CQ's, or the shared one
    std::unique_ptr<provider::CompletionChannel> rcq_channel;  // the RCQ's own, unless shared
    std::unique_ptr<rpma_cq> cq;
    std::unique_ptr<rpma_cq> rcq;  // nullptr unless rcq_size > 0 (and no SRQ RCQ)
    bool shared_channel = false;
};

}  // namespace rpma

struct rpma_conn_req {
    rpma_peer *peer = nullptr;
    rpma::ConnQueues queues;
    std::unique_ptr<rpma::provider::CmId> id;
    bool incoming = false;
    int timeout_ms = RPMA_DEFAULT_TIMEOUT_MS;
    // How the QP was made, so that rpma_ext_conn_req_move_to_peer can make
    // it again in another protection domain.
    rpma::provider::QueuePairInit qp_init;
    // Set by rpma_conn_req_recv: those receives live on the QP and would be
    // lost if it were made again.
    bool recv_posted = false;
};

namespace rpma {

// Creates the queues and the QP on `id` as `cfg` (NULL = defaults) says.
// Returns 0 or RPMA_E_*.
int NewConnReq(rpma_peer *peer, std::unique_ptr<provider::CmId> id, const rpma_conn_cfg *cfg,
               bool incoming, rpma_conn_req **req_ptr);

// Creates req's QP in peer's protection domain as req->qp_init says and
// makes peer the request's peer. The request must have no QP. Returns 0 or
// RPMA_E_*.
int CreateConnReqQp(rpma_conn_req &req, rpma_peer *peer);

}  // namespace rpma

#endif  // RPMA_CORE_SRC_CONN_REQ_H
