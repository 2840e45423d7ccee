// The verbs provider's entry points: finding the RDMA device that serves an
// address (librpma's rpma_utils_get_ibv_context) and the Device that stands
// for one of rdma_cm's device contexts.
#ifndef RPMA_CORE_SRC_PROVIDER_VERBS_VERBS_DEVICE_H
#define RPMA_CORE_SRC_PROVIDER_VERBS_VERBS_DEVICE_H

#include <infiniband/verbs.h>

#include <memory>

#include "rpma_core/src/provider/provider.h"
#include "rpma_core/src/provider/verbs/verbs_capabilities.h"

namespace rpma::provider::verbs {

class Device final : public provider::Device {
  public:
    // Reads the attributes and capabilities of `context`.
    explicit Device(ibv_context *context);

    ibv_context *Context() override { return context_; }
    bool IsOdpCapable() const override { return caps_.odp; }
    int AllocPd(std::unique_ptr<provider::ProtectionDomain> *pd) override;
    int CreateCompletionChannel(std::unique_ptr<provider::CompletionChannel> *channel) override;
    int CreateCq(int capacity, provider::CompletionChannel *channel,
                 std::unique_ptr<provider::CompletionQueue> *cq) override;
    int Listen(const char *addr, const char *port,
               std::unique_ptr<provider::Listener> *listener) override;
    // rdma_resolve_addr + rdma_resolve_route, each waited for up to
    // `timeout_ms`. Errors: the kernel's reason (EHOSTUNREACH, ENETUNREACH,
    // ETIMEDOUT, ENODEV, ...), or EINVAL when another device serves the
    // address.
    int Resolve(const char *addr, const char *port, int timeout_ms,
                std::unique_ptr<provider::CmId> *id) override;

    ibv_context *RawContext() const { return context_; }
    const char *Name() const { return ibv_get_device_name(context_->device); }
    const Capabilities &Caps() const { return caps_; }
    const ibv_device_attr &Attributes() const { return attr_.orig_attr; }

  private:
    ibv_context *context_;
    ibv_device_attr_ex attr_{};
    Capabilities caps_;
};

// The context of the RDMA device that serves `addr`: the device the address
// is bound to (local) or the one that leads to it (remote), found as
// rpma_utils_get_ibv_context does (rdma_getaddrinfo, rdma_create_id, then
// rdma_bind_addr or rdma_resolve_addr). Returns 0, ENODEV when no RDMA
// device serves the address (the caller may fall back to another
// provider), or another errno when the lookup itself failed. Logs why.
int LookupDevice(const char *addr, bool local, ibv_context **ctx);

// The Device of `ctx`, one per context for the life of the process, or
// nullptr when `ctx` is not one of rdma_cm's device contexts (those stay
// open while librdmacm is loaded; an rdma_cm id can only use a protection
// domain of the very context it runs on). Thread-safe.
Device *DeviceFor(ibv_context *ctx);

}  // namespace rpma::provider::verbs

#endif  // RPMA_CORE_SRC_PROVIDER_VERBS_VERBS_DEVICE_H
