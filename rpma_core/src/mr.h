// struct rpma_mr_local: a registered local memory region.
#ifndef RPMA_CORE_SRC_MR_H
#define RPMA_CORE_SRC_MR_H

#include <infiniband/verbs.h>

#include <cstddef>
#include <memory>

#include "rpma_core/src/provider/provider.h"

struct rpma_mr_local {
    std::unique_ptr<rpma::provider::MemoryRegion> region;
    int usage = 0;  // RPMA_MR_USAGE_* bits
};

namespace rpma {

// The scatter-gather entry for [offset, offset + len) of mr; a NULL mr gives
// an empty entry (librpma allows zero-length operations without a region).
ibv_sge MakeSge(const rpma_mr_local *mr, size_t offset, size_t len);

// A receive work request into [offset, offset + len) of dst, using *sge.
ibv_recv_wr MakeRecvWr(const rpma_mr_local *dst, size_t offset, size_t len, const void *op_context,
                       ibv_sge *sge);

}  // namespace rpma

#endif  // RPMA_CORE_SRC_MR_H
