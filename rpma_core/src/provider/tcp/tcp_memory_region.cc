#include "rpma_core/src/provider/tcp/tcp_memory_region.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>

#include "rpma_core/src/log.h"

namespace rpma::provider::tcp {

MemoryRegion::MemoryRegion(MemoryTable &table, std::shared_ptr<Region> region)
    : table_(table), region_(std::move(region)) {}

MemoryRegion::~MemoryRegion() {
    table_.Deregister(region_);
}

int MemoryRegion::Advise(void *addr, size_t length, int advice, uint32_t flags) {
    if (advice != IBV_ADVISE_MR_ADVICE_PREFETCH && advice != IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE &&
        advice != IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT) {
        RPMA_LOG_ERROR("cannot advise a memory region: unknown advice %d", advice);
        return EINVAL;
    }
    if ((flags & ~static_cast<uint32_t>(IBV_ADVISE_MR_FLAG_FLUSH)) != 0) {
        RPMA_LOG_ERROR("cannot advise a memory region: unknown flags %#x", flags);
        return EINVAL;
    }
    if (!region_->Contains(reinterpret_cast<uintptr_t>(addr), length)) {
        RPMA_LOG_ERROR("cannot advise %p+%zu: the range is outside the memory region %p+%zu", addr,
                       length, region_->Addr(), region_->Length());
        return EFAULT;
    }
    const bool write = advice == IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE;
    if (write && !(region_->Access() & IBV_ACCESS_LOCAL_WRITE)) {
        RPMA_LOG_ERROR(
            "cannot prefetch for writing: the memory region was registered without "
            "local write access");
        return EINVAL;
    }
    if (length == 0)
        return 0;

    const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
    const auto begin = reinterpret_cast<uintptr_t>(addr);
    const uintptr_t end = begin + length;
    const uintptr_t aligned_begin = begin & ~(page - 1);
    const uintptr_t aligned_end = (end + page - 1) & ~(page - 1);
    // A hint: failure (e.g. on an unusual mapping) only costs the prefetch.
    if (madvise(reinterpret_cast<void *>(aligned_begin), aligned_end - aligned_begin,
                MADV_WILLNEED) != 0)
        RPMA_LOG_DEBUG("madvise(MADV_WILLNEED) of %p+%zu failed: %s", addr, length,
                       strerror(errno));
    if (advice == IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT)
        return 0;

    // Fault every page in now, writable for PREFETCH_WRITE. Only bytes inside
    // the advised range are touched; a write stores the byte's own value
    // atomically, so concurrent writers (local or remote) lose nothing.
    for (uintptr_t page_start = aligned_begin; page_start < end; page_start += page) {
        auto *byte = reinterpret_cast<uint8_t *>(std::max(page_start, begin));
        if (write)
            std::atomic_ref<uint8_t>(*byte).fetch_add(0);
        else
            (void)std::atomic_ref<uint8_t>(*byte).load(std::memory_order_relaxed);
    }
    return 0;
}

}  // namespace rpma::provider::tcp
