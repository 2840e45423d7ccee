// The argument checks and atomic access shared by every get/set pair of the
// configuration objects (conn_cfg, srq_cfg).
#ifndef RPMA_CORE_SRC_CFG_FIELD_H
#define RPMA_CORE_SRC_CFG_FIELD_H

#include <atomic>
#include <new>

#include "librpma.h"

namespace rpma {

template <typename Cfg, typename T>
int SetCfgField(Cfg *cfg, std::atomic<T> Cfg::*field, T value) {
    if (cfg == nullptr)
        return RPMA_E_INVAL;
    (cfg->*field).store(value);
    return 0;
}

template <typename Cfg, typename T>
int GetCfgField(const Cfg *cfg, std::atomic<T> Cfg::*field, T *value) {
    if (cfg == nullptr || value == nullptr)
        return RPMA_E_INVAL;
    *value = (cfg->*field).load();
    return 0;
}

// rpma_*_cfg_new / _delete.
template <typename Cfg>
int NewCfg(Cfg **cfg_ptr) {
    if (cfg_ptr == nullptr)
        return RPMA_E_INVAL;
    Cfg *cfg = new (std::nothrow) Cfg;
    if (cfg == nullptr)
        return RPMA_E_NOMEM;
    *cfg_ptr = cfg;
    return 0;
}

template <typename Cfg>
int DeleteCfg(Cfg **cfg_ptr) {
    if (cfg_ptr == nullptr)
        return RPMA_E_INVAL;
    delete *cfg_ptr;
    *cfg_ptr = nullptr;
    return 0;
}

}  // namespace rpma

#endif  // RPMA_CORE_SRC_CFG_FIELD_H
