// LookupDevice and DeviceFor (declared in verbs_device.h).
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>

#include "rpma_core/src/log.h"
#include "rpma_core/src/provider/verbs/verbs_address.h"
#include "rpma_core/src/provider/verbs/verbs_device.h"
#include "rpma_core/src/provider/verbs/verbs_owners.h"

namespace rpma::provider::verbs {

namespace {

// librpma resolves with RPMA_DEFAULT_TIMEOUT_MS here.
constexpr int kLookupTimeoutMs = 1000;

// Whether rdma_cm knows any device at all. On a host without RDMA (no
// drivers, no /dev/infiniband/rdma_cm) librdmacm fails with ENODEV.
int CountRdmaDevices(int *count) {
    errno = 0;
    ibv_context **list = rdma_get_devices(count);
    if (list == nullptr) {
        *count = 0;
        int err = ErrnoOr(ENODEV);
        return err == ENOMEM ? ENOMEM : 0;
    }
    rdma_free_devices(list);
    return 0;
}

bool IsRdmaCmContext(ibv_context *ctx) {
    int count = 0;
    ibv_context **list = rdma_get_devices(&count);
    if (list == nullptr)
        return false;
    bool found = std::find(list, list + count, ctx) != list + count;
    rdma_free_devices(list);
    return found;
}

int NoDeviceServes(const char *addr, const char *why) {
    RPMA_LOG_NOTICE(
        "no RDMA device serves address '%s': %s (attach one to its interface, e.g. "
        "`rdma link add rxe0 type rxe netdev <interface>`, or use "
        "RPMA_PROVIDER=tcp)",
        addr, why);
    return ENODEV;
}

}  // namespace

int LookupDevice(const char *addr, bool local, ibv_context **ctx) {
    int count = 0;
    int err = CountRdmaDevices(&count);
    if (err != 0) {
        RPMA_LOG_ERROR("listing RDMA devices failed: %s", strerror(err));
        return err;
    }
    if (count == 0) {
        RPMA_LOG_NOTICE(
            "no RDMA device on this host (librdmacm finds none: are the RDMA "
            "drivers loaded? see `rdma link`), so address '%s' cannot be served by "
            "verbs; use RPMA_PROVIDER=tcp for the software provider",
            addr);
        return ENODEV;
    }

    Owned<rdma_addrinfo> info;
    err =
        ResolveAddress(addr, nullptr, local ? AddressSide::kPassive : AddressSide::kActive, &info);
    if (err != 0)
        return err;
    // No event channel: librdmacm's synchronous mode, in which bind and
    // resolve return only once they are done.
    rdma_cm_id *raw_id = nullptr;
    errno = 0;
    if (rdma_create_id(nullptr, &raw_id, nullptr, RDMA_PS_TCP) != 0) {
        err = ErrnoOr(ENOMEM);
        if (err == ENODEV)
            return NoDeviceServes(addr, "rdma_cm has no device");
        RPMA_LOG_ERROR("rdma_create_id failed: %s", strerror(err));
        return err;
    }
    Owned<rdma_cm_id> id(raw_id);

    errno = 0;
    int ret =
        local ? rdma_bind_addr(id.get(), info->ai_src_addr)
              : rdma_resolve_addr(id.get(), info->ai_src_addr, info->ai_dst_addr, kLookupTimeoutMs);
    if (ret != 0) {
        err = ErrnoOr(local ? EADDRNOTAVAIL : EHOSTUNREACH);
        if (err == ENODEV)
            return NoDeviceServes(addr, local ? "its interface has no RDMA device"
                                              : "the interface that leads to it has no RDMA "
                                                "device");
        if (local)
            RPMA_LOG_ERROR("cannot use '%s' as a local address: %s (%s)", addr, strerror(err),
                           err == EADDRNOTAVAIL ? "it is not an address of this host"
                                                : "rdma_bind_addr failed");
        else
            RPMA_LOG_ERROR(
                "cannot reach '%s': %s (is it up and reachable over RDMA? see `ip "
                "route get %s`)",
                addr, strerror(err), addr);
        return err;
    }
    if (id->verbs == nullptr)
        return NoDeviceServes(addr,
                              "it binds to no device in particular (a wildcard address?); "
                              "give the address of an RDMA interface");
    if (DeviceFor(id->verbs) == nullptr) {
        RPMA_LOG_ERROR("rdma_cm gave a device context that it does not list");
        return ENODEV;
    }
    *ctx = id->verbs;
    return 0;
}

Device *DeviceFor(ibv_context *ctx) {
    if (ctx == nullptr)
        return nullptr;
    static std::mutex mutex;
    static std::map<ibv_context *, std::unique_ptr<Device>> devices;
    std::lock_guard lock(mutex);
    auto found = devices.find(ctx);
    if (found != devices.end())
        return found->second.get();
    if (!IsRdmaCmContext(ctx))
        return nullptr;
    return devices.emplace(ctx, std::make_unique<Device>(ctx)).first->second.get();
}

}  // namespace rpma::provider::verbs
