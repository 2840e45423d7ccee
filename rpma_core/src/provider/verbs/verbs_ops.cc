#include "rpma_core/src/provider/verbs/verbs_ops.h"

#include "rpma_core/src/provider/verbs/verbs_device.h"

namespace rpma::provider::verbs {
namespace {

provider::Device *DeviceOf(ibv_context *ctx) {
    return DeviceFor(ctx);
}

// A persistent flush reaches the persistence domain only where the memory
// itself is byte-granular PMem (the NIC's flush or APM's read stops at the
// memory controller), and registering pages of a DAX file system needs
// on-demand paging.
constexpr Ops kOps = {"verbs", LookupDevice, DeviceOf, /*flush_persists=*/false,
                      /*pins_fsdax_pages=*/false};

}  // namespace

const Ops *ProviderOps() {
    return &kOps;
}

}  // namespace rpma::provider::verbs
