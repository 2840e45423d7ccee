// struct rpma_conn_cfg: queue sizes, timeout and completion-channel mode of a
// connection. Fields are atomic because librpma lets one thread read a
// configuration while another changes it.
#ifndef RPMA_CORE_SRC_CONN_CFG_H
#define RPMA_CORE_SRC_CONN_CFG_H

#include <atomic>
#include <cstdint>

#include "librpma.h"

struct rpma_conn_cfg {
    std::atomic<int> timeout_ms{RPMA_DEFAULT_TIMEOUT_MS};
    std::atomic<uint32_t> cq_size{10};
    std::atomic<uint32_t> rcq_size{0};
    std::atomic<uint32_t> sq_size{10};
    std::atomic<uint32_t> rq_size{10};
    std::atomic<bool> shared_channel{false};
    std::atomic<struct rpma_srq *> srq{nullptr};
};

namespace rpma {

// The configuration used when a caller passes NULL.
const rpma_conn_cfg &DefaultConnCfg();

}  // namespace rpma

#endif  // RPMA_CORE_SRC_CONN_CFG_H
