#include "rpma_core/src/provider/verbs/verbs_device.h"

#include <cerrno>
#include <climits>
#include <cstring>

#include "rpma_core/src/log.h"
#include "rpma_core/src/provider/verbs/verbs_address.h"
#include "rpma_core/src/provider/verbs/verbs_cm_event.h"
#include "rpma_core/src/provider/verbs/verbs_cm_id.h"
#include "rpma_core/src/provider/verbs/verbs_completion_channel.h"
#include "rpma_core/src/provider/verbs/verbs_completion_queue.h"
#include "rpma_core/src/provider/verbs/verbs_event_channel.h"
#include "rpma_core/src/provider/verbs/verbs_listener.h"
#include "rpma_core/src/provider/verbs/verbs_protection_domain.h"

namespace rpma::provider::verbs {

namespace {

// The kernel ends a resolution step with an event once its own timeout has
// passed; waiting a little longer than that keeps a lost event from hanging
// the caller without cutting the kernel short.
constexpr int kResolutionGraceMs = 1000;

const char *ResolutionHint(int err) {
    switch (err) {
        case ENODEV:
            return "the interface that leads there has no RDMA device";
        case ETIMEDOUT:
        case EHOSTUNREACH:
        case ENETUNREACH:
            return "is the address right, and reachable from an RDMA interface? see "
                   "`ip route get <address>` and `rdma link`";
        default:
            return "see the rdma_cm documentation of this error";
    }
}

// Waits for the event that ends one resolution step.
int AwaitResolution(rdma_event_channel *channel, int timeout_ms, rdma_cm_event_type expected,
                    const char *step, const char *addr, const char *port) {
    Owned<rdma_cm_event> event;
    const int wait_ms =
        timeout_ms > INT_MAX - kResolutionGraceMs ? INT_MAX : timeout_ms + kResolutionGraceMs;
    int err = WaitForEvent(channel, wait_ms, &event);
    if (err == 0 && event->event == expected)
        return 0;
    if (err == 0)
        err = EventError(*event);
    RPMA_LOG_ERROR("resolving the %s of %s:%s failed: %s (%s)", step, addr, port, strerror(err),
                   ResolutionHint(err));
    return err;
}

}  // namespace

Device::Device(ibv_context *context) : context_(context) {
    int err = ibv_query_device_ex(context, nullptr, &attr_);
    if (err != 0) {
        attr_ = {};
        err = ibv_query_device(context, &attr_.orig_attr);
        if (err != 0)
            RPMA_LOG_WARNING(
                "querying the attributes of %s failed: %s; assuming it has no "
                "optional capabilities",
                Name(), strerror(err));
    }
    caps_ = CapabilitiesOf(attr_, context->device->transport_type);
    RPMA_LOG_INFO("%s: on-demand paging %s; flush: %s; atomic write: %s", Name(),
                  caps_.odp ? "yes" : "no", caps_.native_flush ? "native" : "APM (RDMA READ)",
                  caps_.native_atomic_write ? "native" : "fenced inline RDMA WRITE");
}

int Device::AllocPd(std::unique_ptr<provider::ProtectionDomain> *pd) {
    return ProtectionDomain::Create(*this, pd);
}

int Device::CreateCompletionChannel(std::unique_ptr<provider::CompletionChannel> *channel) {
    return CompletionChannel::Create(context_, channel);
}

int Device::CreateCq(int capacity, provider::CompletionChannel *channel,
                     std::unique_ptr<provider::CompletionQueue> *cq) {
    return CompletionQueue::Create(context_, capacity, channel, cq);
}

int Device::Listen(const char *addr, const char *port,
                   std::unique_ptr<provider::Listener> *listener) {
    return Listener::Create(*this, addr, port, listener);
}

int Device::Resolve(const char *addr, const char *port, int timeout_ms,
                    std::unique_ptr<provider::CmId> *id) {
    Owned<rdma_addrinfo> info;
    Owned<rdma_event_channel> channel;
    Owned<rdma_cm_id> cm_id;
    int err = CreateIdFor(addr, port, AddressSide::kActive, &info, &channel, &cm_id);
    if (err != 0)
        return err;

    errno = 0;
    if (rdma_resolve_addr(cm_id.get(), info->ai_src_addr, info->ai_dst_addr, timeout_ms) != 0) {
        err = ErrnoOr(EHOSTUNREACH);
        RPMA_LOG_ERROR("resolving the address of %s:%s failed: %s (%s)", addr, port, strerror(err),
                       ResolutionHint(err));
        return err;
    }
    err = AwaitResolution(channel.get(), timeout_ms, RDMA_CM_EVENT_ADDR_RESOLVED, "address", addr,
                          port);
    if (err != 0)
        return err;
    errno = 0;
    if (rdma_resolve_route(cm_id.get(), timeout_ms) != 0) {
        err = ErrnoOr(EHOSTUNREACH);
        RPMA_LOG_ERROR("resolving the route to %s:%s failed: %s (%s)", addr, port, strerror(err),
                       ResolutionHint(err));
        return err;
    }
    err = AwaitResolution(channel.get(), timeout_ms, RDMA_CM_EVENT_ROUTE_RESOLVED, "route", addr,
                          port);
    if (err != 0)
        return err;

    if (cm_id->verbs != context_) {
        RPMA_LOG_ERROR(
            "%s:%s is reached through %s, but the peer was made for %s (make the peer "
            "from rpma_utils_get_ibv_context() of the address you connect to)",
            addr, port, ibv_get_device_name(cm_id->verbs->device), Name());
        return EINVAL;
    }
    *id = std::make_unique<CmId>(std::move(channel), std::move(cm_id));
    return 0;
}

}  // namespace rpma::provider::verbs
