// ibv_mr.
#ifndef RPMA_CORE_SRC_PROVIDER_VERBS_VERBS_MEMORY_REGION_H
#define RPMA_CORE_SRC_PROVIDER_VERBS_VERBS_MEMORY_REGION_H

#include <infiniband/verbs.h>

#include <cerrno>

#include "rpma_core/src/provider/provider.h"
#include "rpma_core/src/provider/verbs/verbs_owners.h"

namespace rpma::provider::verbs {

class MemoryRegion final : public provider::MemoryRegion {
  public:
    explicit MemoryRegion(Owned<ibv_mr> mr) : mr_(std::move(mr)) {}

    void *Addr() const override { return mr_->addr; }
    size_t Length() const override { return mr_->length; }
    uint32_t Lkey() const override { return mr_->lkey; }
    uint32_t Rkey() const override { return mr_->rkey; }
    int Advise(void *addr, size_t length, int advice, uint32_t flags) override;
    // The NIC applies the peers' operations without the CPU: nothing counts
    // them.
    int RemoteCounts(RemoteAccessCounts *) const override { return EOPNOTSUPP; }

  private:
    Owned<ibv_mr> mr_;
};

}  // namespace rpma::provider::verbs

#endif  // RPMA_CORE_SRC_PROVIDER_VERBS_VERBS_MEMORY_REGION_H
