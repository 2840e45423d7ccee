// ibv_mr: one registration in the process-wide MemoryTable. Destroying it
// deregisters the memory and returns only when no remote operation is still
// moving bytes in or out of it.
#ifndef RPMA_CORE_SRC_PROVIDER_TCP_TCP_MEMORY_REGION_H
#define RPMA_CORE_SRC_PROVIDER_TCP_TCP_MEMORY_REGION_H

#include <memory>

#include "rpma_core/src/provider/provider.h"
#include "rpma_core/src/provider/tcp/tcp_memory_table.h"

namespace rpma::provider::tcp {

class MemoryRegion final : public provider::MemoryRegion {
  public:
    MemoryRegion(MemoryTable &table, std::shared_ptr<Region> region);
    ~MemoryRegion() override;
    MemoryRegion(const MemoryRegion &) = delete;
    MemoryRegion &operator=(const MemoryRegion &) = delete;

    void *Addr() const override { return region_->Addr(); }
    size_t Length() const override { return region_->Length(); }
    uint32_t Lkey() const override { return region_->Key(); }
    uint32_t Rkey() const override { return region_->Key(); }
    // ibv_advise_mr: EINVAL for unknown advice or flags (or PREFETCH_WRITE on
    // memory registered without local write), EFAULT for a range outside the
    // region. Prefetching is synchronous, so IBV_ADVISE_MR_FLAG_FLUSH holds.
    int Advise(void *addr, size_t length, int advice, uint32_t flags) override;
    // Counted where the progress threads apply each remote operation
    // (tcp_connection_target.cc, tcp_connection_inbound.cc): never fails.
    int RemoteCounts(RemoteAccessCounts *counts) const override {
        *counts = region_->Counts();
        return 0;
    }

  private:
    MemoryTable &table_;
    const std::shared_ptr<Region> region_;
};

}  // namespace rpma::provider::tcp

#endif  // RPMA_CORE_SRC_PROVIDER_TCP_TCP_MEMORY_REGION_H
