#include "rpma_core/src/provider/verbs/verbs_protection_domain.h"

#include <cerrno>
#include <cstring>

#include "rpma_core/src/log.h"
#include "rpma_core/src/provider/verbs/verbs_capabilities.h"
#include "rpma_core/src/provider/verbs/verbs_device.h"
#include "rpma_core/src/provider/verbs/verbs_memory_region.h"
#include "rpma_core/src/provider/verbs/verbs_shared_receive_queue.h"

namespace rpma::provider::verbs {

int ProtectionDomain::Create(const Device &device,
                             std::unique_ptr<provider::ProtectionDomain> *pd) {
    // ibv_alloc_pd does not promise to set errno; librpma clears it first
    // to tell ENOMEM from the rest, and so do we.
    errno = 0;
    Owned<ibv_pd> created(ibv_alloc_pd(device.RawContext()));
    if (created == nullptr) {
        int err = ErrnoOr(ENOMEM);
        RPMA_LOG_ERROR("ibv_alloc_pd on %s failed: %s", device.Name(), strerror(err));
        return err;
    }
    *pd = std::make_unique<ProtectionDomain>(device, std::move(created));
    return 0;
}

int ProtectionDomain::RegisterMemory(void *addr, size_t length, int access,
                                     std::unique_ptr<provider::MemoryRegion> *mr) {
    const int granted = RegistrationAccess(access, device_.Caps());
    errno = 0;
    Owned<ibv_mr> registered(ibv_reg_mr(pd_.get(), addr, length, granted));
    if (registered == nullptr) {
        int err = ErrnoOr(ENOMEM);
        if (err == EOPNOTSUPP)
            // Not an error yet: the API layer retries with on-demand paging
            // when the device has it (e.g. for a file on FSDAX).
            RPMA_LOG_INFO("ibv_reg_mr(%p, %zu bytes, access=0x%x): these pages cannot be pinned",
                          addr, length, granted);
        else if (err == ENOMEM)
            RPMA_LOG_ERROR(
                "ibv_reg_mr(%p, %zu bytes, access=0x%x) failed: %s (the locked-memory "
                "limit is too low? raise it with ulimit -l or LimitMEMLOCK=)",
                addr, length, granted, strerror(err));
        else
            RPMA_LOG_ERROR("ibv_reg_mr(%p, %zu bytes, access=0x%x) failed: %s", addr, length,
                           granted, strerror(err));
        return err;
    }
    *mr = std::make_unique<MemoryRegion>(std::move(registered));
    return 0;
}

int ProtectionDomain::CreateSrq(uint32_t max_wr,
                                std::unique_ptr<provider::SharedReceiveQueue> *srq) {
    ibv_srq_init_attr init{};
    init.attr.max_wr = max_wr;
    init.attr.max_sge = 1;  // librpma posts one SGE per receive
    errno = 0;
    Owned<ibv_srq> created(ibv_create_srq(pd_.get(), &init));
    if (created == nullptr) {
        int err = ErrnoOr(ENOMEM);
        RPMA_LOG_ERROR(
            "ibv_create_srq(max_wr=%u) failed: %s (%s allows at most %d; lower the "
            "SRQ's rq_size)",
            max_wr, strerror(err), device_.Name(), device_.Attributes().max_srq_wr);
        return err;
    }
    *srq = std::make_unique<SharedReceiveQueue>(std::move(created));
    return 0;
}

}  // namespace rpma::provider::verbs
