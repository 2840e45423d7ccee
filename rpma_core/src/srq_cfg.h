// struct rpma_srq_cfg: sizes of a shared receive queue and of its own
// receive CQ (0 = the SRQ has no CQ of its own).
#ifndef RPMA_CORE_SRC_SRQ_CFG_H
#define RPMA_CORE_SRC_SRQ_CFG_H

#include <atomic>
#include <cstdint>

struct rpma_srq_cfg {
    std::atomic<uint32_t> rq_size{20};
    std::atomic<uint32_t> rcq_size{20};
};

namespace rpma {

// The configuration used when a caller passes NULL.
const rpma_srq_cfg &DefaultSrqCfg();

}  // namespace rpma

#endif  // RPMA_CORE_SRC_SRQ_CFG_H
