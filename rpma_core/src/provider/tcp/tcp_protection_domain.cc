#include "rpma_core/src/provider/tcp/tcp_protection_domain.h"

#include <cerrno>

#include "rpma_core/src/log.h"
#include "rpma_core/src/provider/tcp/tcp_memory_region.h"
#include "rpma_core/src/provider/tcp/tcp_shared_receive_queue.h"

namespace rpma::provider::tcp {

int ProtectionDomain::RegisterMemory(void *addr, size_t length, int access,
                                     std::unique_ptr<provider::MemoryRegion> *mr) {
    if (mr == nullptr)
        return EINVAL;
    std::shared_ptr<Region> region;
    if (const int err = memory_.Register(addr, length, access, id_, &region); err != 0)
        return err;
    *mr = std::make_unique<MemoryRegion>(memory_, std::move(region));
    return 0;
}

int ProtectionDomain::CreateSrq(uint32_t max_wr,
                                std::unique_ptr<provider::SharedReceiveQueue> *srq) {
    if (srq == nullptr || max_wr == 0 || max_wr > kMaxQueueDepth) {
        RPMA_LOG_ERROR("cannot create a shared receive queue of %u entries (1 to %u)", max_wr,
                       kMaxQueueDepth);
        return EINVAL;
    }
    *srq = std::make_unique<SharedReceiveQueue>(memory_, engine_, id_, max_wr);
    return 0;
}

}  // namespace rpma::provider::tcp
