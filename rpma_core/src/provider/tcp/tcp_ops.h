// The tcp provider's entry in the table of providers (providers.h), and its
// own extension calls (rpma_ext_tcp_*): the one header of the provider that
// rpma_core/src includes.
#ifndef RPMA_CORE_SRC_PROVIDER_TCP_TCP_OPS_H
#define RPMA_CORE_SRC_PROVIDER_TCP_TCP_OPS_H

#include "rpma_core/src/provider/provider_ops.h"
#include "rpma_ext.h"

namespace rpma::provider::tcp {

const Ops *ProviderOps();

// The process's knobs (tcp_options.h) from and into *opts, as
// rpma_ext_tcp_set_options and rpma_ext_tcp_get_options describe them.
// 0 or EINVAL (NULL, too small, a value out of range: nothing set), logged.
int SetOptions(const rpma_ext_tcp_options *opts);
int GetOptions(rpma_ext_tcp_options *opts);

}  // namespace rpma::provider::tcp

#endif  // RPMA_CORE_SRC_PROVIDER_TCP_TCP_OPS_H
