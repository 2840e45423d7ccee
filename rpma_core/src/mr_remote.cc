// rpma_mr_remote_*: parse and query a peer's memory-region descriptor. The
// descriptor arrives from the network, so it is checked before it is trusted.
#include "rpma_core/src/mr_remote.h"

#include <endian.h>

#include <cinttypes>
#include <cstring>
#include <new>

#include "librpma.h"
#include "rpma_core/src/log.h"

namespace {

template <typename T>
const unsigned char *Load(const unsigned char *in, T *value) {
    memcpy(value, in, sizeof(T));
    return in + sizeof(T);
}

template <typename T>
unsigned char *Store(unsigned char *out, T value) {
    memcpy(out, &value, sizeof(T));
    return out + sizeof(T);
}

}  // namespace

namespace rpma {

void EncodeMrDescriptor(const rpma_mr_remote &mr, void *desc) {
    auto *out = static_cast<unsigned char *>(desc);
    out = Store(out, htole64(mr.addr));
    out = Store(out, htole64(mr.size));
    out = Store(out, htole32(mr.rkey));
    Store(out, mr.usage);
}

}  // namespace rpma

int rpma_mr_remote_from_descriptor(const void *desc, size_t desc_size,
                                   struct rpma_mr_remote **mr_ptr) {
    if (desc == nullptr || mr_ptr == nullptr)
        return RPMA_E_INVAL;
    if (desc_size < rpma::kMrDescriptorSize) {
        RPMA_LOG_ERROR("memory region descriptor too short: %zu bytes (needs %zu)", desc_size,
                       rpma::kMrDescriptorSize);
        return RPMA_E_INVAL;
    }

    rpma_mr_remote parsed{};
    const auto *in = static_cast<const unsigned char *>(desc);
    in = Load(in, &parsed.addr);
    in = Load(in, &parsed.size);
    in = Load(in, &parsed.rkey);
    Load(in, &parsed.usage);
    if (parsed.usage == 0) {
        RPMA_LOG_ERROR("memory region descriptor has no usage bits set");
        return RPMA_E_INVAL;
    }
    parsed.addr = le64toh(parsed.addr);
    parsed.size = le64toh(parsed.size);
    parsed.rkey = le32toh(parsed.rkey);

    auto *mr = new (std::nothrow) rpma_mr_remote(parsed);
    if (mr == nullptr)
        return RPMA_E_NOMEM;
    *mr_ptr = mr;
    RPMA_LOG_INFO("remote memory region: addr 0x%" PRIx64 ", size %" PRIu64 ", rkey 0x%" PRIx32
                  ", usage 0x%" PRIx8,
                  mr->addr, mr->size, mr->rkey, mr->usage);
    return 0;
}

int rpma_mr_remote_get_size(const struct rpma_mr_remote *mr, size_t *size) {
    if (mr == nullptr || size == nullptr)
        return RPMA_E_INVAL;
    *size = mr->size;
    return 0;
}

int rpma_mr_remote_get_flush_type(const struct rpma_mr_remote *mr, int *flush_type) {
    if (mr == nullptr || flush_type == nullptr)
        return RPMA_E_INVAL;
    *flush_type =
        mr->usage & (RPMA_MR_USAGE_FLUSH_TYPE_PERSISTENT | RPMA_MR_USAGE_FLUSH_TYPE_VISIBILITY);
    return 0;
}

int rpma_mr_remote_delete(struct rpma_mr_remote **mr_ptr) {
    if (mr_ptr == nullptr)
        return RPMA_E_INVAL;
    delete *mr_ptr;
    *mr_ptr = nullptr;
    return 0;
}
