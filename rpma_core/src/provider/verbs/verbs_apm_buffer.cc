#include "rpma_core/src/provider/verbs/verbs_apm_buffer.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "rpma_core/src/log.h"
#include "rpma_core/src/provider/verbs/verbs_work_requests.h"

namespace rpma::provider::verbs {

int ApmBuffer::Create(provider::ProtectionDomain &pd, std::unique_ptr<ApmBuffer> *buffer) {
    long page_size = sysconf(_SC_PAGESIZE);
    if (page_size <= 0)
        page_size = 4096;
    void *page = mmap(nullptr, static_cast<size_t>(page_size), PROT_READ | PROT_WRITE,
                      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (page == MAP_FAILED) {
        int err = errno;
        RPMA_LOG_ERROR("mapping a page for APM flush reads failed: %s", strerror(err));
        return err;
    }
    auto created = std::make_unique<ApmBuffer>(page, static_cast<size_t>(page_size));
    int err = pd.RegisterMemory(page, kApmReadLength, IBV_ACCESS_LOCAL_WRITE, &created->region_);
    if (err != 0)
        return err;  // logged by RegisterMemory
    *buffer = std::move(created);
    return 0;
}

ApmBuffer::~ApmBuffer() {
    region_.reset();  // the registration goes before the memory it covers
    munmap(page_, page_size_);
}

ibv_sge ApmBuffer::Sge() const {
    return ibv_sge{reinterpret_cast<uintptr_t>(page_), kApmReadLength, region_->Lkey()};
}

}  // namespace rpma::provider::verbs
