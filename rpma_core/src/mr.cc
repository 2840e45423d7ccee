// rpma_mr_*: local memory registrations.
#include "rpma_core/src/mr.h"

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <new>

#include "librpma.h"
#include "rpma_core/src/log.h"
#include "rpma_core/src/mr_remote.h"
#include "rpma_core/src/peer.h"

namespace {

constexpr int kAllUsages =
    RPMA_MR_USAGE_READ_SRC | RPMA_MR_USAGE_READ_DST | RPMA_MR_USAGE_WRITE_SRC |
    RPMA_MR_USAGE_WRITE_DST | RPMA_MR_USAGE_FLUSH_TYPE_VISIBILITY |
    RPMA_MR_USAGE_FLUSH_TYPE_PERSISTENT | RPMA_MR_USAGE_SEND | RPMA_MR_USAGE_RECV;
static_assert(kAllUsages <= UINT8_MAX, "usage must fit the descriptor's one byte");

// librpma's mapping. Flushes need remote read because on verbs a flush may
// be an RDMA READ of the flushed range (APM).
int UsageToAccess(int usage) {
    int access = 0;
    if (usage & (RPMA_MR_USAGE_READ_SRC | RPMA_MR_USAGE_FLUSH_TYPE_VISIBILITY |
                 RPMA_MR_USAGE_FLUSH_TYPE_PERSISTENT))
        access |= IBV_ACCESS_REMOTE_READ;
    if (usage & (RPMA_MR_USAGE_READ_DST | RPMA_MR_USAGE_WRITE_SRC | RPMA_MR_USAGE_RECV))
        access |= IBV_ACCESS_LOCAL_WRITE;
    if (usage & RPMA_MR_USAGE_WRITE_DST)
        access |= IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE;
    return access;
}

}  // namespace

namespace rpma {

ibv_sge MakeSge(const rpma_mr_local *mr, size_t offset, size_t len) {
    if (mr == nullptr)
        return ibv_sge{0, 0, 0};
    return ibv_sge{reinterpret_cast<uintptr_t>(mr->region->Addr()) + offset,
                   static_cast<uint32_t>(len), mr->region->Lkey()};
}

ibv_recv_wr MakeRecvWr(const rpma_mr_local *dst, size_t offset, size_t len, const void *op_context,
                       ibv_sge *sge) {
    *sge = MakeSge(dst, offset, len);
    ibv_recv_wr wr{};
    wr.wr_id = reinterpret_cast<uintptr_t>(op_context);
    wr.sg_list = dst ? sge : nullptr;
    wr.num_sge = dst ? 1 : 0;
    return wr;
}

}  // namespace rpma

int rpma_mr_reg(struct rpma_peer *peer, void *ptr, size_t size, int usage,
                struct rpma_mr_local **mr_ptr) {
    if (peer == nullptr || ptr == nullptr || size == 0 || mr_ptr == nullptr)
        return RPMA_E_INVAL;
    if (usage == 0 || (usage & ~kAllUsages) != 0)
        return RPMA_E_INVAL;

    auto mr = std::unique_ptr<rpma_mr_local>(new (std::nothrow) rpma_mr_local);
    if (mr == nullptr)
        return RPMA_E_NOMEM;
    int access = UsageToAccess(usage);
    int err = peer->pd->RegisterMemory(ptr, size, access, &mr->region);
    if (err == EOPNOTSUPP && peer->device->IsOdpCapable()) {
        // The memory cannot be pinned (e.g. a DAX file): let the device
        // fault pages in on demand instead.
        err = peer->pd->RegisterMemory(ptr, size, access | IBV_ACCESS_ON_DEMAND, &mr->region);
    }
    if (err != 0) {
        RPMA_LOG_ERROR("registering %zu bytes at %p failed: %s", size, ptr, strerror(err));
        return err == ENOMEM ? RPMA_E_NOMEM : RPMA_E_PROVIDER;
    }
    mr->usage = usage;
    *mr_ptr = mr.release();
    return 0;
}

int rpma_mr_dereg(struct rpma_mr_local **mr_ptr) {
    if (mr_ptr == nullptr)
        return RPMA_E_INVAL;
    delete *mr_ptr;
    *mr_ptr = nullptr;
    return 0;
}

int rpma_mr_get_descriptor(const struct rpma_mr_local *mr, void *desc) {
    if (mr == nullptr || desc == nullptr)
        return RPMA_E_INVAL;
    rpma_mr_remote view{reinterpret_cast<uintptr_t>(mr->region->Addr()), mr->region->Length(),
                        mr->region->Rkey(), static_cast<uint8_t>(mr->usage)};
    rpma::EncodeMrDescriptor(view, desc);
    return 0;
}

int rpma_mr_get_descriptor_size(const struct rpma_mr_local *mr, size_t *desc_size) {
    if (mr == nullptr || desc_size == nullptr)
        return RPMA_E_INVAL;
    *desc_size = rpma::kMrDescriptorSize;
    return 0;
}

int rpma_mr_get_ptr(const struct rpma_mr_local *mr, void **ptr) {
    if (mr == nullptr || ptr == nullptr)
        return RPMA_E_INVAL;
    *ptr = mr->region->Addr();
    return 0;
}

int rpma_mr_get_size(const struct rpma_mr_local *mr, size_t *size) {
    if (mr == nullptr || size == nullptr)
        return RPMA_E_INVAL;
    *size = mr->region->Length();
    return 0;
}

int rpma_mr_advise(struct rpma_mr_local *mr, size_t offset, size_t len, int advice,
                   uint32_t flags) {
    if (mr == nullptr)
        return RPMA_E_INVAL;
    size_t length = mr->region->Length();
    if (offset > length || len > length - offset) {
        RPMA_LOG_ERROR("advise range [%zu, +%zu) exceeds the region of %zu bytes", offset, len,
                       length);
        return RPMA_E_INVAL;
    }
    // As ibv_advise_mr: prefetching for write needs a writable registration.
    if (advice == IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE &&
        (UsageToAccess(mr->usage) & IBV_ACCESS_LOCAL_WRITE) == 0) {
        RPMA_LOG_ERROR("prefetch for writing needs a region registered for writing");
        return RPMA_E_INVAL;
    }
    char *start = static_cast<char *>(mr->region->Addr()) + offset;
    int err = mr->region->Advise(start, len, advice, flags);
    switch (err) {
        case 0:
            return 0;
        case EOPNOTSUPP:
            RPMA_LOG_ERROR("advising memory is not supported here");
            return RPMA_E_NOSUPP;
        case EINVAL:
        case EFAULT:
            RPMA_LOG_ERROR("invalid advice %d or flags 0x%x", advice, flags);
            return RPMA_E_INVAL;
        default:
            RPMA_LOG_ERROR("advising memory failed: %s", strerror(err));
            return RPMA_E_PROVIDER;
    }
}
