// ibv_pd. Its id scopes memory registrations: a remote operation may only use
// a region registered in the protection domain of the target queue pair.
#ifndef RPMA_CORE_SRC_PROVIDER_TCP_TCP_PROTECTION_DOMAIN_H
#define RPMA_CORE_SRC_PROVIDER_TCP_TCP_PROTECTION_DOMAIN_H

#include <cstdint>
#include <memory>

#include "rpma_core/src/provider/provider.h"

namespace rpma::provider::tcp {

class MemoryTable;
class ProgressEngine;

// Queue depths beyond this are refused, as a device's max_qp_wr would.
inline constexpr uint32_t kMaxQueueDepth = 1u << 16;

class ProtectionDomain final : public provider::ProtectionDomain {
  public:
    ProtectionDomain(uint64_t id, MemoryTable &memory, ProgressEngine &engine)
        : id_(id), memory_(memory), engine_(engine) {}

    uint64_t Id() const { return id_; }

    int RegisterMemory(void *addr, size_t length, int access,
                       std::unique_ptr<provider::MemoryRegion> *mr) override;
    int CreateSrq(uint32_t max_wr, std::unique_ptr<provider::SharedReceiveQueue> *srq) override;

  private:
    const uint64_t id_;
    MemoryTable &memory_;
    ProgressEngine &engine_;
};

}  // namespace rpma::provider::tcp

#endif  // RPMA_CORE_SRC_PROVIDER_TCP_TCP_PROTECTION_DOMAIN_H
