#include "rpma_core/src/provider/verbs/verbs_memory_region.h"

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "rpma_core/src/log.h"

namespace rpma::provider::verbs {

int MemoryRegion::Advise(void *addr, size_t length, int advice, uint32_t flags) {
    // An SGE holds at most 4 GiB - 1: advise a larger range piece by piece.
    constexpr size_t kMaxPiece = 1u << 30;
    auto start = reinterpret_cast<uintptr_t>(addr);
    do {
        size_t piece = length < kMaxPiece ? length : kMaxPiece;
        ibv_sge sge{start, static_cast<uint32_t>(piece), mr_->lkey};
        int err = ibv_advise_mr(mr_->pd, static_cast<ibv_advise_mr_advice>(advice), flags, &sge, 1);
        if (err != 0) {
            if (err == EOPNOTSUPP)
                RPMA_LOG_INFO(
                    "ibv_advise_mr: the device does not support advice (it is meant "
                    "for on-demand paging memory)");
            else
                RPMA_LOG_ERROR("ibv_advise_mr(advice=%d, flags=0x%x, %zu bytes) failed: %s", advice,
                               flags, piece, strerror(err));
            return err;
        }
        start += piece;
        length -= piece;
    } while (length > 0);
    return 0;
}

}  // namespace rpma::provider::verbs
