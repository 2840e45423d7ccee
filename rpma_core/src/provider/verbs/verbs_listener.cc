#include "rpma_core/src/provider/verbs/verbs_listener.h"

#include <cerrno>
#include <cstring>
#include <vector>

#include "rpma_core/src/log.h"
#include "rpma_core/src/provider/verbs/verbs_address.h"
#include "rpma_core/src/provider/verbs/verbs_cm_event.h"
#include "rpma_core/src/provider/verbs/verbs_cm_id.h"
#include "rpma_core/src/provider/verbs/verbs_device.h"
#include "rpma_core/src/provider/verbs/verbs_event_channel.h"

namespace rpma::provider::verbs {

int Listener::Create(const Device &device, const char *addr, const char *port,
                     std::unique_ptr<provider::Listener> *listener) {
    Owned<rdma_addrinfo> info;
    Owned<rdma_event_channel> channel;
    Owned<rdma_cm_id> id;
    int err = CreateIdFor(addr, port, AddressSide::kPassive, &info, &channel, &id);
    if (err != 0)
        return err;
    errno = 0;
    if (rdma_bind_addr(id.get(), info->ai_src_addr) != 0) {
        err = ErrnoOr(EADDRNOTAVAIL);
        const char *hint = err == EADDRINUSE      ? "something else listens on that port already"
                           : err == EADDRNOTAVAIL ? "it is not an address of this host"
                           : err == ENODEV        ? "its interface has no RDMA device"
                                                  : "check the address";
        RPMA_LOG_ERROR("binding to %s:%s failed: %s (%s)", addr, port, strerror(err), hint);
        return err;
    }
    // A wildcard address binds to no device in particular (verbs == NULL);
    // requests are then checked one by one in NextRequest.
    if (id->verbs != nullptr && id->verbs != device.RawContext()) {
        RPMA_LOG_ERROR(
            "%s:%s is served by %s, but the peer was made for %s (make the peer from "
            "rpma_utils_get_ibv_context() of the address you listen on)",
            addr, port, ibv_get_device_name(id->verbs->device), device.Name());
        return EINVAL;
    }
    errno = 0;
    if (rdma_listen(id.get(), 0 /* librdmacm's default backlog */) != 0) {
        err = ErrnoOr(EINVAL);
        RPMA_LOG_ERROR("rdma_listen on %s:%s failed: %s", addr, port, strerror(err));
        return err;
    }
    *listener = std::make_unique<Listener>(device, std::move(channel), std::move(id));
    return 0;
}

int Listener::NextRequest(std::unique_ptr<provider::CmId> *id) {
    for (;;) {
        Owned<rdma_cm_event> event;
        int err = TryGetEvent(channel_.get(), &event);
        if (err != 0) {
            if (err != EAGAIN)
                RPMA_LOG_ERROR("reading the next connection request failed: %s", strerror(err));
            return err;
        }
        if (event->event == RDMA_CM_EVENT_DEVICE_REMOVAL) {
            RPMA_LOG_ERROR("the RDMA device of this endpoint went away; shut the endpoint down");
            return ENODEV;
        }
        if (event->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
            RPMA_LOG_INFO("ignoring rdma_cm event %s on a listening endpoint",
                          rdma_event_str(event->event));
            continue;
        }
        // The event must be acknowledged before its id can move to another
        // channel (rdma_migrate_id waits for that), and its private data
        // lives only until then.
        std::vector<uint8_t> private_data = PrivateDataOf(*event);
        Owned<rdma_cm_id> request(event->id);
        event.reset();

        if (request->verbs != device_.RawContext()) {
            RPMA_LOG_ERROR(
                "rejected a connection request that arrived on %s: this endpoint's "
                "peer was made for %s (listen on an address of that device)",
                ibv_get_device_name(request->verbs->device), device_.Name());
            rdma_reject(request.get(), nullptr, 0);
            continue;
        }
        Owned<rdma_event_channel> channel;
        err = CreateEventChannel(&channel);
        if (err == 0) {
            errno = 0;
            if (rdma_migrate_id(request.get(), channel.get()) != 0) {
                err = ErrnoOr(EINVAL);
                RPMA_LOG_ERROR("rdma_migrate_id failed: %s", strerror(err));
            }
        }
        if (err != 0) {
            // Tell the peer now instead of letting it time out.
            rdma_reject(request.get(), nullptr, 0);
            return err;
        }
        *id =
            std::make_unique<CmId>(std::move(channel), std::move(request), std::move(private_data));
        return 0;
    }
}

}  // namespace rpma::provider::verbs
