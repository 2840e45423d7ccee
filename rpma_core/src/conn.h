// struct rpma_conn: an established (or establishing) connection.
#ifndef RPMA_CORE_SRC_CONN_H
#define RPMA_CORE_SRC_CONN_H

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "rpma_core/src/conn_req.h"

struct rpma_conn {
    rpma::ConnQueues queues;
    std::unique_ptr<rpma::provider::CmId> id;
    // The other side's private data: from its request (incoming) or from the
    // ESTABLISHED event (outgoing).
    std::vector<uint8_t> private_data;
    std::atomic<bool> direct_write_to_pmem{false};
};

namespace rpma {

// Turns a request that has been connected or accepted into a connection.
int NewConn(rpma_conn_req &&req, rpma_conn **conn_ptr);

}  // namespace rpma

#endif  // RPMA_CORE_SRC_CONN_H
