// ibv_pd, with the device it was allocated on: registrations take their
// access rights from the device's capabilities.
#ifndef RPMA_CORE_SRC_PROVIDER_VERBS_VERBS_PROTECTION_DOMAIN_H
#define RPMA_CORE_SRC_PROVIDER_VERBS_VERBS_PROTECTION_DOMAIN_H

#include <infiniband/verbs.h>

#include <memory>

#include "rpma_core/src/provider/provider.h"
#include "rpma_core/src/provider/verbs/verbs_owners.h"

namespace rpma::provider::verbs {

class Device;

class ProtectionDomain final : public provider::ProtectionDomain {
  public:
    static int Create(const Device &device, std::unique_ptr<provider::ProtectionDomain> *pd);

    ProtectionDomain(const Device &device, Owned<ibv_pd> pd)
        : device_(device), pd_(std::move(pd)) {}

    // Returns ibv_reg_mr's errno: EOPNOTSUPP (memory that cannot be pinned)
    // makes the API layer retry with IBV_ACCESS_ON_DEMAND.
    int RegisterMemory(void *addr, size_t length, int access,
                       std::unique_ptr<provider::MemoryRegion> *mr) override;
    int CreateSrq(uint32_t max_wr, std::unique_ptr<provider::SharedReceiveQueue> *srq) override;

    const Device &device() const { return device_; }
    ibv_pd *Raw() const { return pd_.get(); }

  private:
    const Device &device_;  // lives as long as the process
    Owned<ibv_pd> pd_;
};

}  // namespace rpma::provider::verbs

#endif  // RPMA_CORE_SRC_PROVIDER_VERBS_VERBS_PROTECTION_DOMAIN_H
