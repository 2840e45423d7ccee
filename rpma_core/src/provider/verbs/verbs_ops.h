// The verbs provider's entry in the table of providers (providers.h).
#ifndef RPMA_CORE_SRC_PROVIDER_VERBS_VERBS_OPS_H
#define RPMA_CORE_SRC_PROVIDER_VERBS_VERBS_OPS_H

#include "rpma_core/src/provider/provider_ops.h"

namespace rpma::provider::verbs {

const Ops *ProviderOps();

}  // namespace rpma::provider::verbs

#endif  // RPMA_CORE_SRC_PROVIDER_VERBS_VERBS_OPS_H
