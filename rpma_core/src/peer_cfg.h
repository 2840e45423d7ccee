// struct rpma_peer_cfg: what a peer declares about its platform.
#ifndef RPMA_CORE_SRC_PEER_CFG_H
#define RPMA_CORE_SRC_PEER_CFG_H

#include <atomic>

struct rpma_peer_cfg {
    std::atomic<bool> direct_write_to_pmem{false};
};

#endif  // RPMA_CORE_SRC_PEER_CFG_H
