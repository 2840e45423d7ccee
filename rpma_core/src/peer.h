// struct rpma_peer: a device and the protection domain everything else
// registered through this peer lives in.
#ifndef RPMA_CORE_SRC_PEER_H
#define RPMA_CORE_SRC_PEER_H

#include <memory>

#include "rpma_core/src/provider/provider.h"

struct rpma_peer {
    rpma::provider::Device *device = nullptr;
    std::unique_ptr<rpma::provider::ProtectionDomain> pd;
};

#endif  // RPMA_CORE_SRC_PEER_H
