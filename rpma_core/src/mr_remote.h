// struct rpma_mr_remote: a peer's memory region as its descriptor told it.
#ifndef RPMA_CORE_SRC_MR_REMOTE_H
#define RPMA_CORE_SRC_MR_REMOTE_H

#include <cstddef>
#include <cstdint>

struct rpma_mr_remote {
    uint64_t addr;
    uint64_t size;
    uint32_t rkey;
    uint8_t usage;  // RPMA_MR_USAGE_* bits
};

namespace rpma {

// The memory-region descriptor: u64 addr, u64 length, u32 rkey, u8 usage,
// little-endian, packed; byte-identical to librpma's.
constexpr size_t kMrDescriptorSize = 2 * sizeof(uint64_t) + sizeof(uint32_t) + sizeof(uint8_t);

void EncodeMrDescriptor(const rpma_mr_remote &mr, void *desc);

}  // namespace rpma

#endif  // RPMA_CORE_SRC_MR_REMOTE_H
