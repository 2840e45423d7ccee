// Reading an rdma_cm event channel without touching the blocking mode of
// its fd. That mode belongs to the application: librpma hands the fd out
// (rpma_ep_get_fd, rpma_conn_get_event_fd), the application may set
// O_NONBLOCK on it, and the API layer waits on it while it is blocking. So
// a read that must not block first asks poll() whether an event is there.
// Each channel is read by one thread at a time (librpma's rule for an
// endpoint or a connection), so nobody can take the event in between.
#ifndef RPMA_CORE_SRC_PROVIDER_VERBS_VERBS_EVENT_CHANNEL_H
#define RPMA_CORE_SRC_PROVIDER_VERBS_VERBS_EVENT_CHANNEL_H

#include <rdma/rdma_cma.h>

#include "rpma_core/src/provider/verbs/verbs_address.h"
#include "rpma_core/src/provider/verbs/verbs_owners.h"

namespace rpma::provider::verbs {

// rdma_create_event_channel. Returns 0 or an errno (logged).
int CreateEventChannel(Owned<rdma_event_channel> *channel);

// The start of listening and of connecting alike: addr:port resolved for
// `side`, and a TCP-port-space CM id on an event channel of its own.
// Returns 0 or an errno (logged).
int CreateIdFor(const char *addr, const char *port, AddressSide side, Owned<rdma_addrinfo> *info,
                Owned<rdma_event_channel> *channel, Owned<rdma_cm_id> *id);

// The next event if one is pending, else EAGAIN. Other errnos: the read
// failed.
int TryGetEvent(rdma_event_channel *channel, Owned<rdma_cm_event> *event);

// The next event, waiting up to `timeout_ms` for it (ETIMEDOUT).
int WaitForEvent(rdma_event_channel *channel, int timeout_ms, Owned<rdma_cm_event> *event);

}  // namespace rpma::provider::verbs

#endif  // RPMA_CORE_SRC_PROVIDER_VERBS_VERBS_EVENT_CHANNEL_H
