// The tcp provider's entry in the table of providers (providers.h).
#ifndef RPMA_CORE_SRC_PROVIDER_TCP_TCP_OPS_H
#define RPMA_CORE_SRC_PROVIDER_TCP_TCP_OPS_H

#include "rpma_core/src/provider/provider_ops.h"

namespace rpma::provider::tcp {

const Ops *ProviderOps();

}  // namespace rpma::provider::tcp

#endif  // RPMA_CORE_SRC_PROVIDER_TCP_TCP_OPS_H
