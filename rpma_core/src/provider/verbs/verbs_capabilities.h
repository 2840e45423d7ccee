// What a device can do, decided once from its attributes, and what that
// means for the access rights of a memory registration.
#ifndef RPMA_CORE_SRC_PROVIDER_VERBS_VERBS_CAPABILITIES_H
#define RPMA_CORE_SRC_PROVIDER_VERBS_VERBS_CAPABILITIES_H

#include <infiniband/verbs.h>

namespace rpma::provider::verbs {

struct Capabilities {
    // On-demand paging for RC RDMA READ and WRITE: librpma's test in
    // rpma_utils_ibv_context_is_odp_capable (SEND/RECV/ATOMIC are not asked
    // for; librpma never needs them on demand-paged memory).
    bool odp = false;
    // This build can post ibv_wr_flush and the device executes both
    // placement types; otherwise flushes are APM reads.
    bool native_flush = false;
    // This build can post ibv_wr_atomic_write and the device executes it;
    // otherwise atomic writes are fenced inline RDMA WRITEs.
    bool native_atomic_write = false;
    // iWARP turns an RDMA READ into an RDMA WRITE of the responder into the
    // reader's memory (see RegistrationAccess).
    bool iwarp = false;
};

// `attr` as ibv_query_device_ex filled it (zeroed where it could not).
Capabilities CapabilitiesOf(const ibv_device_attr_ex &attr, ibv_transport_type transport);

// The IBV_ACCESS_* bits to register memory with on such a device, given the
// bits the API layer asks for.
int RegistrationAccess(int access, const Capabilities &caps);

}  // namespace rpma::provider::verbs

#endif  // RPMA_CORE_SRC_PROVIDER_VERBS_VERBS_CAPABILITIES_H
