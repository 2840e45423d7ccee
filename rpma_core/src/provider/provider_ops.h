// What the generic layer knows of a provider: one table of entry points,
// exported by each provider folder as one `const Ops *` and listed in
// providers.cc. Nothing outside a provider's folder includes its headers
// but that one.
#ifndef RPMA_CORE_SRC_PROVIDER_PROVIDER_OPS_H
#define RPMA_CORE_SRC_PROVIDER_PROVIDER_OPS_H

#include <infiniband/verbs.h>

#include "rpma_core/src/provider/provider.h"

namespace rpma::provider {

struct Ops {
    // What RPMA_PROVIDER names it by, and rpma_ext_device_query reports.
    const char *name;
    // The context of this provider's device that serves `addr`: the one it
    // is bound to (local) or that leads to it (remote). 0, ENODEV when this
    // provider serves no such address (RPMA_PROVIDER=auto then asks the next
    // provider), or another errno when the lookup itself failed. Logs why.
    int (*lookup)(const char *addr, bool local, ibv_context **ctx);
    // The Device of `ctx`, or nullptr when the provider does not own it.
    // Thread-safe; the Device lives as long as the process.
    Device *(*device)(ibv_context *ctx);
    // What a program may ask of a device of this provider
    // (rpma_ext_device_info in rpma_ext.h says what each means).
    bool flush_persists;
    bool pins_fsdax_pages;
};

}  // namespace rpma::provider

#endif  // RPMA_CORE_SRC_PROVIDER_PROVIDER_OPS_H
