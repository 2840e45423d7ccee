// rdma_getaddrinfo as librpma calls it: an RC queue pair in the TCP port
// space, passive (an address to bind and listen on) or active (one to
// connect to).
#ifndef RPMA_CORE_SRC_PROVIDER_VERBS_VERBS_ADDRESS_H
#define RPMA_CORE_SRC_PROVIDER_VERBS_VERBS_ADDRESS_H

#include <rdma/rdma_cma.h>

#include "rpma_core/src/provider/verbs/verbs_owners.h"

namespace rpma::provider::verbs {

enum class AddressSide { kPassive, kActive };

// `port` may be null (no port: device lookup). Returns 0 or an errno, and
// logs the failure.
int ResolveAddress(const char *addr, const char *port, AddressSide side,
                   Owned<rdma_addrinfo> *info);

// librdmacm's rdma_getaddrinfo returns -1 with errno for its own failures
// but getaddrinfo's EAI_* code for name resolution failures; this turns
// either into an errno. `saved_errno` is errno right after the call.
int AddressInfoError(int ret, int saved_errno);

}  // namespace rpma::provider::verbs

#endif  // RPMA_CORE_SRC_PROVIDER_VERBS_VERBS_ADDRESS_H
