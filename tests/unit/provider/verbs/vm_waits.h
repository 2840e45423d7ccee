// Waiting on the provider's pollable objects, for the programs that run in
// the Soft-RoCE VM. Each wait gives up after kVmWaitMs: TCG emulation is
// slow, but nothing here should take that long.
#ifndef TESTS_UNIT_PROVIDER_VERBS_VM_WAITS_H
#define TESTS_UNIT_PROVIDER_VERBS_VM_WAITS_H

#include <poll.h>
#include <time.h>

#include <cerrno>
#include <cstdint>
#include <memory>

#include "rpma_core/src/provider/provider.h"

namespace rpma::provider::verbs::testing {

inline constexpr int kVmWaitMs = 10000;

inline int64_t NowMs() {
    timespec now{};
    clock_gettime(CLOCK_MONOTONIC, &now);
    return int64_t{now.tv_sec} * 1000 + now.tv_nsec / 1000000;
}

inline bool WaitReadable(int fd, int timeout_ms) {
    pollfd pfd{fd, POLLIN, 0};
    return poll(&pfd, 1, timeout_ms) == 1;
}

// Retries `attempt` (0, EAGAIN or an errno) while it says EAGAIN, waiting for
// `fd` in between. Returns 0, the errno, or ETIMEDOUT.
template <typename Attempt>
int RetryWhileAgain(int fd, Attempt attempt) {
    const int64_t deadline = NowMs() + kVmWaitMs;
    for (;;) {
        int err = attempt();
        if (err != EAGAIN)
            return err;
        int left = static_cast<int>(deadline - NowMs());
        if (left <= 0 || !WaitReadable(fd, left))
            return ETIMEDOUT;
    }
}

inline int WaitEvent(CmId &id, CmEvent *event) {
    return RetryWhileAgain(id.EventFd(), [&] { return id.NextEvent(event); });
}

inline int WaitRequest(Listener &listener, std::unique_ptr<CmId> *id) {
    return RetryWhileAgain(listener.Fd(), [&] { return listener.NextRequest(id); });
}

// Polls `cq` (busy, with short naps) for one completion. Returns 0,
// ETIMEDOUT, or the poll's errno.
inline int WaitCompletion(CompletionQueue &cq, ibv_wc *wc) {
    const int64_t deadline = NowMs() + kVmWaitMs;
    while (NowMs() < deadline) {
        int got = cq.Poll(1, wc);
        if (got == 1)
            return 0;
        if (got < 0)
            return -got;
        timespec nap{0, 100 * 1000};
        nanosleep(&nap, nullptr);
    }
    return ETIMEDOUT;
}

}  // namespace rpma::provider::verbs::testing

#endif  // TESTS_UNIT_PROVIDER_VERBS_VM_WAITS_H
