#include "rpma_core/src/provider/verbs/verbs_capabilities.h"

#include "rpma_core/src/provider/verbs/verbs_native_ops.h"

namespace rpma::provider::verbs {

Capabilities CapabilitiesOf(const ibv_device_attr_ex &attr, ibv_transport_type transport) {
    Capabilities caps;
    const ibv_odp_caps &odp = attr.odp_caps;
    const uint32_t rc_needed = IBV_ODP_SUPPORT_WRITE | IBV_ODP_SUPPORT_READ;
    caps.odp = (odp.general_caps & IBV_ODP_SUPPORT) != 0 &&
               (odp.per_transport_caps.rc_odp_caps & rc_needed) == rc_needed;

    const uint64_t flags = attr.device_cap_flags_ex;
    // Both placement types, as librpma requires: a region's descriptor may
    // promise either one.
    const bool device_flushes = (flags & native::kDeviceCapFlushGlobal) != 0 &&
                                (flags & native::kDeviceCapFlushPersistent) != 0;
    const bool device_writes_atomically = (flags & native::kDeviceCapAtomicWrite) != 0;
    caps.native_flush = native::kBuildHasFlush && device_flushes;
    caps.native_atomic_write = native::kBuildHasAtomicWrite && device_writes_atomically;
    caps.iwarp = transport == IBV_TRANSPORT_IWARP;
    return caps;
}

int RegistrationAccess(int access, const Capabilities &caps) {
    // On iWARP the READ response is placed into the reader's memory like an
    // RDMA WRITE from the responder, so a READ destination needs remote
    // write access (librpma grants it to RPMA_MR_USAGE_READ_DST). The API
    // layer hands over access bits, not usages; every READ destination asks
    // for local write, so every locally writable registration gets it.
    if (caps.iwarp && (access & IBV_ACCESS_LOCAL_WRITE) != 0)
        access |= IBV_ACCESS_REMOTE_WRITE;
    // A native FLUSH is checked against the target's registration. The API
    // layer opens every flushable region for remote reads (APM needs that),
    // so remote readability is where the flush rights go too.
    if (caps.native_flush && (access & IBV_ACCESS_REMOTE_READ) != 0)
        access |= static_cast<int>(native::kAccessFlushGlobal | native::kAccessFlushPersistent);
    return access;
}

}  // namespace rpma::provider::verbs
