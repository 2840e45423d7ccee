// Where APM flush reads land: kApmReadLength bytes that nobody looks at,
// registered on the connection's protection domain. Like librpma, the
// buffer gets a shared anonymous page of its own: pinning it pins nothing
// else, and a fork shares the page instead of copying one that the device
// may be writing to.
#ifndef RPMA_CORE_SRC_PROVIDER_VERBS_VERBS_APM_BUFFER_H
#define RPMA_CORE_SRC_PROVIDER_VERBS_VERBS_APM_BUFFER_H

#include <infiniband/verbs.h>

#include <cstddef>
#include <memory>

#include "rpma_core/src/provider/provider.h"

namespace rpma::provider::verbs {

class ApmBuffer {
  public:
    // Registers the buffer for local write: an RDMA READ destination (on
    // iWARP RegisterMemory adds remote write).
    static int Create(provider::ProtectionDomain &pd, std::unique_ptr<ApmBuffer> *buffer);

    ApmBuffer(void *page, size_t page_size) : page_(page), page_size_(page_size) {}
    ~ApmBuffer();
    ApmBuffer(const ApmBuffer &) = delete;
    ApmBuffer &operator=(const ApmBuffer &) = delete;

    // The scatter-gather entry of the whole buffer.
    ibv_sge Sge() const;

  private:
    void *page_;
    size_t page_size_;
    std::unique_ptr<provider::MemoryRegion> region_;  // over the page's first bytes
};

}  // namespace rpma::provider::verbs

#endif  // RPMA_CORE_SRC_PROVIDER_VERBS_VERBS_APM_BUFFER_H
