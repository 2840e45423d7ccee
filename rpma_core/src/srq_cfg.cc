// rpma_srq_cfg_*: the shared receive queue configuration.
#include "rpma_core/src/srq_cfg.h"

#include "rpma_core/src/cfg_field.h"

namespace rpma {

const rpma_srq_cfg &DefaultSrqCfg() {
    static const rpma_srq_cfg defaults;
    return defaults;
}

}  // namespace rpma

int rpma_srq_cfg_new(struct rpma_srq_cfg **cfg_ptr) {
    return rpma::NewCfg(cfg_ptr);
}

int rpma_srq_cfg_delete(struct rpma_srq_cfg **cfg_ptr) {
    return rpma::DeleteCfg(cfg_ptr);
}

int rpma_srq_cfg_set_rq_size(struct rpma_srq_cfg *cfg, uint32_t rq_size) {
    return rpma::SetCfgField(cfg, &rpma_srq_cfg::rq_size, rq_size);
}

int rpma_srq_cfg_get_rq_size(const struct rpma_srq_cfg *cfg, uint32_t *rq_size) {
    return rpma::GetCfgField(cfg, &rpma_srq_cfg::rq_size, rq_size);
}

int rpma_srq_cfg_set_rcq_size(struct rpma_srq_cfg *cfg, uint32_t rcq_size) {
    return rpma::SetCfgField(cfg, &rpma_srq_cfg::rcq_size, rcq_size);
}

int rpma_srq_cfg_get_rcq_size(const struct rpma_srq_cfg *cfg, uint32_t *rcq_size) {
    return rpma::GetCfgField(cfg, &rpma_srq_cfg::rcq_size, rcq_size);
}
