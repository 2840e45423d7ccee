// rpma_peer_cfg_*: the peer configuration and its 1-byte descriptor.
#include "rpma_core/src/peer_cfg.h"

#include <cstdint>
#include <new>

#include "librpma.h"
#include "rpma_core/src/cfg_field.h"
#include "rpma_core/src/log.h"

namespace {
constexpr size_t kDescriptorSize = sizeof(uint8_t);
}

int rpma_peer_cfg_new(struct rpma_peer_cfg **pcfg_ptr) {
    return rpma::NewCfg(pcfg_ptr);
}

int rpma_peer_cfg_delete(struct rpma_peer_cfg **pcfg_ptr) {
    return rpma::DeleteCfg(pcfg_ptr);
}

int rpma_peer_cfg_set_direct_write_to_pmem(struct rpma_peer_cfg *pcfg, bool supported) {
    if (pcfg == nullptr)
        return RPMA_E_INVAL;
    pcfg->direct_write_to_pmem = supported;
    return 0;
}

int rpma_peer_cfg_get_direct_write_to_pmem(const struct rpma_peer_cfg *pcfg, bool *supported) {
    if (pcfg == nullptr || supported == nullptr)
        return RPMA_E_INVAL;
    *supported = pcfg->direct_write_to_pmem;
    return 0;
}

int rpma_peer_cfg_get_descriptor(const struct rpma_peer_cfg *pcfg, void *desc) {
    if (pcfg == nullptr || desc == nullptr)
        return RPMA_E_INVAL;
    *static_cast<uint8_t *>(desc) = pcfg->direct_write_to_pmem ? 1 : 0;
    return 0;
}

int rpma_peer_cfg_get_descriptor_size(const struct rpma_peer_cfg *pcfg, size_t *desc_size) {
    if (pcfg == nullptr || desc_size == nullptr)
        return RPMA_E_INVAL;
    *desc_size = kDescriptorSize;
    return 0;
}

int rpma_peer_cfg_from_descriptor(const void *desc, size_t desc_size,
                                  struct rpma_peer_cfg **pcfg_ptr) {
    if (desc == nullptr || pcfg_ptr == nullptr)
        return RPMA_E_INVAL;
    if (desc_size < kDescriptorSize) {
        RPMA_LOG_ERROR("peer configuration descriptor too short: %zu bytes (needs %zu)", desc_size,
                       kDescriptorSize);
        return RPMA_E_INVAL;
    }
    auto *cfg = new (std::nothrow) rpma_peer_cfg;
    if (cfg == nullptr)
        return RPMA_E_NOMEM;
    // Any non-zero byte means "supported", as in librpma.
    cfg->direct_write_to_pmem = *static_cast<const uint8_t *>(desc) != 0;
    *pcfg_ptr = cfg;
    RPMA_LOG_INFO("peer configuration from descriptor: direct write to pmem %s",
                  cfg->direct_write_to_pmem ? "supported" : "unsupported");
    return 0;
}
