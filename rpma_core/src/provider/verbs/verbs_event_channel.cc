#include "rpma_core/src/provider/verbs/verbs_event_channel.h"

#include <poll.h>
#include <time.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "rpma_core/src/log.h"

namespace rpma::provider::verbs {

namespace {

int64_t NowMs() {
    timespec now{};
    clock_gettime(CLOCK_MONOTONIC, &now);
    return int64_t{now.tv_sec} * 1000 + now.tv_nsec / 1000000;
}

// 0 when the fd is readable within timeout_ms, else ETIMEDOUT or an errno.
int WaitReadable(int fd, int timeout_ms) {
    const int64_t deadline = NowMs() + timeout_ms;
    for (;;) {
        pollfd pfd{fd, POLLIN, 0};
        const int64_t left = deadline - NowMs();
        int ready = poll(&pfd, 1, left > 0 ? static_cast<int>(left) : 0);
        if (ready > 0)
            return 0;
        if (ready == 0)
            return ETIMEDOUT;
        if (errno != EINTR)
            return errno;
    }
}

int GetEvent(rdma_event_channel *channel, Owned<rdma_cm_event> *event) {
    rdma_cm_event *got = nullptr;
    errno = 0;
    if (rdma_get_cm_event(channel, &got) != 0) {
        int err = ErrnoOr(EIO);
        // An application that set O_NONBLOCK on the fd: librdmacm says
        // ENODATA or EAGAIN for "nothing there".
        return err == ENODATA ? EAGAIN : err;
    }
    event->reset(got);
    return 0;
}

}  // namespace

int CreateEventChannel(Owned<rdma_event_channel> *channel) {
    errno = 0;
    channel->reset(rdma_create_event_channel());
    if (*channel == nullptr) {
        int err = ErrnoOr(ENOMEM);
        RPMA_LOG_ERROR("creating an rdma_cm event channel failed: %s", strerror(err));
        return err;
    }
    return 0;
}

int CreateIdFor(const char *addr, const char *port, AddressSide side, Owned<rdma_addrinfo> *info,
                Owned<rdma_event_channel> *channel, Owned<rdma_cm_id> *id) {
    int err = ResolveAddress(addr, port, side, info);
    if (err == 0)
        err = CreateEventChannel(channel);
    if (err != 0)
        return err;
    rdma_cm_id *raw_id = nullptr;
    errno = 0;
    if (rdma_create_id(channel->get(), &raw_id, nullptr, RDMA_PS_TCP) != 0) {
        err = ErrnoOr(ENOMEM);
        RPMA_LOG_ERROR("rdma_create_id failed: %s", strerror(err));
        return err;
    }
    id->reset(raw_id);
    return 0;
}

int TryGetEvent(rdma_event_channel *channel, Owned<rdma_cm_event> *event) {
    int err = WaitReadable(channel->fd, 0);
    if (err == ETIMEDOUT)
        return EAGAIN;
    return err != 0 ? err : GetEvent(channel, event);
}

int WaitForEvent(rdma_event_channel *channel, int timeout_ms, Owned<rdma_cm_event> *event) {
    int err = WaitReadable(channel->fd, timeout_ms);
    if (err != 0)
        return err;
    err = GetEvent(channel, event);
    // Readable but drained: nothing else reads this channel, so this is a
    // spurious wake-up at worst; report it as the timeout it then becomes.
    return err == EAGAIN ? ETIMEDOUT : err;
}

}  // namespace rpma::provider::verbs
