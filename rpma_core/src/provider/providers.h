// The providers this library is built with, in RPMA_PROVIDER=auto's order
// of preference.
#ifndef RPMA_CORE_SRC_PROVIDER_PROVIDERS_H
#define RPMA_CORE_SRC_PROVIDER_PROVIDERS_H

#include <span>

#include "rpma_core/src/provider/provider_ops.h"

namespace rpma::provider {

std::span<const Ops *const> Providers();

}  // namespace rpma::provider

#endif  // RPMA_CORE_SRC_PROVIDER_PROVIDERS_H
