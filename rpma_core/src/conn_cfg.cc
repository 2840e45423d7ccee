// rpma_conn_cfg_*: the connection configuration.
#include "rpma_core/src/conn_cfg.h"

#include "rpma_core/src/cfg_field.h"

namespace rpma {

const rpma_conn_cfg &DefaultConnCfg() {
    static const rpma_conn_cfg defaults;
    return defaults;
}

}  // namespace rpma

int rpma_conn_cfg_new(struct rpma_conn_cfg **cfg_ptr) {
    return rpma::NewCfg(cfg_ptr);
}

int rpma_conn_cfg_delete(struct rpma_conn_cfg **cfg_ptr) {
    return rpma::DeleteCfg(cfg_ptr);
}

int rpma_conn_cfg_set_timeout(struct rpma_conn_cfg *cfg, int timeout_ms) {
    if (timeout_ms < 0)
        return RPMA_E_INVAL;
    return rpma::SetCfgField(cfg, &rpma_conn_cfg::timeout_ms, timeout_ms);
}

int rpma_conn_cfg_get_timeout(const struct rpma_conn_cfg *cfg, int *timeout_ms) {
    return rpma::GetCfgField(cfg, &rpma_conn_cfg::timeout_ms, timeout_ms);
}

int rpma_conn_cfg_set_cq_size(struct rpma_conn_cfg *cfg, uint32_t cq_size) {
    return rpma::SetCfgField(cfg, &rpma_conn_cfg::cq_size, cq_size);
}

int rpma_conn_cfg_get_cq_size(const struct rpma_conn_cfg *cfg, uint32_t *cq_size) {
    return rpma::GetCfgField(cfg, &rpma_conn_cfg::cq_size, cq_size);
}

int rpma_conn_cfg_set_rcq_size(struct rpma_conn_cfg *cfg, uint32_t rcq_size) {
    return rpma::SetCfgField(cfg, &rpma_conn_cfg::rcq_size, rcq_size);
}

int rpma_conn_cfg_get_rcq_size(const struct rpma_conn_cfg *cfg, uint32_t *rcq_size) {
    return rpma::GetCfgField(cfg, &rpma_conn_cfg::rcq_size, rcq_size);
}

int rpma_conn_cfg_set_sq_size(struct rpma_conn_cfg *cfg, uint32_t sq_size) {
    return rpma::SetCfgField(cfg, &rpma_conn_cfg::sq_size, sq_size);
}

int rpma_conn_cfg_get_sq_size(const struct rpma_conn_cfg *cfg, uint32_t *sq_size) {
    return rpma::GetCfgField(cfg, &rpma_conn_cfg::sq_size, sq_size);
}

int rpma_conn_cfg_set_rq_size(struct rpma_conn_cfg *cfg, uint32_t rq_size) {
    return rpma::SetCfgField(cfg, &rpma_conn_cfg::rq_size, rq_size);
}

int rpma_conn_cfg_get_rq_size(const struct rpma_conn_cfg *cfg, uint32_t *rq_size) {
    return rpma::GetCfgField(cfg, &rpma_conn_cfg::rq_size, rq_size);
}

int rpma_conn_cfg_set_compl_channel(struct rpma_conn_cfg *cfg, bool shared) {
    return rpma::SetCfgField(cfg, &rpma_conn_cfg::shared_channel, shared);
}

int rpma_conn_cfg_get_compl_channel(const struct rpma_conn_cfg *cfg, bool *shared) {
    return rpma::GetCfgField(cfg, &rpma_conn_cfg::shared_channel, shared);
}

int rpma_conn_cfg_set_srq(struct rpma_conn_cfg *cfg, struct rpma_srq *srq) {
    // librpma rejects NULL: a connection leaves the SRQ by using another cfg.
    if (srq == nullptr)
        return RPMA_E_INVAL;
    return rpma::SetCfgField(cfg, &rpma_conn_cfg::srq, srq);
}

int rpma_conn_cfg_get_srq(const struct rpma_conn_cfg *cfg, struct rpma_srq **srq_ptr) {
    return rpma::GetCfgField(cfg, &rpma_conn_cfg::srq, srq_ptr);
}
