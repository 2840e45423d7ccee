#include "rpma_core/src/provider/providers.h"

#include "rpma_core/src/provider/tcp/tcp_ops.h"
#include "rpma_core/src/provider/verbs/verbs_ops.h"

namespace rpma::provider {

std::span<const Ops *const> Providers() {
    // verbs first: an RDMA device that serves an address beats the software
    // provider, which serves every address of the host.
    static const Ops *const providers[] = {verbs::ProviderOps(), tcp::ProviderOps()};
    return providers;
}

}  // namespace rpma::provider
