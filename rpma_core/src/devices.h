// Which provider serves an address, and which provider owns an ibv_context.
// RPMA_PROVIDER=auto|verbs|tcp chooses (default auto: verbs when an RDMA
// device serves the address, tcp otherwise).
#ifndef RPMA_CORE_SRC_DEVICES_H
#define RPMA_CORE_SRC_DEVICES_H

#include "librpma.h"
#include "rpma_core/src/provider/provider.h"
#include "rpma_core/src/provider/provider_ops.h"

namespace rpma {

// rpma_utils_get_ibv_context without the argument checks. Returns 0 or RPMA_E_*.
int LookupContext(const char *addr, enum rpma_util_ibv_context_type type, ibv_context **ctx);

// The provider that owns ctx, with its Device in *device, or nullptr when
// none does.
const provider::Ops *OwnerOf(ibv_context *ctx, provider::Device **device);

// The device behind ctx, or nullptr when no provider of this library owns it.
provider::Device *FindDevice(ibv_context *ctx);

}  // namespace rpma

#endif  // RPMA_CORE_SRC_DEVICES_H
