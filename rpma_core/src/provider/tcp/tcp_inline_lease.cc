// Tests: tcp_inline_lease_test, and through connections
// tcp_inline_progress_test.
#include "rpma_core/src/provider/tcp/tcp_inline_lease.h"

namespace rpma::provider::tcp {

bool InlineLease::StartLinger(int linger_us, bool can_mute, bool deadline_pending) {
    const bool renewing = lease_ && deadline_pending;
    lease_ = linger_us > 0 && can_mute;
    if (!lease_)
        return false;
    if (renewing) {
        renewed_ = true;
        return false;
    }
    renewed_ = false;
    until_ = Clock::now() + std::chrono::microseconds(linger_us);
    return true;
}

void InlineLease::Expire(Clock::time_point now, int linger_us) {
    if (!Lingering() || until_ > now)
        return;
    if (renewed_) {
        renewed_ = false;
        until_ = now + std::chrono::microseconds(linger_us);
    } else {
        // Nobody came back: the progress thread serves the socket again
        // (level-triggered, so whatever arrived meanwhile is picked up).
        lease_ = false;
    }
}

bool InlineLease::MayWaitForDoorbell(size_t messages, size_t bytes) {
    if (!Lingering())
        return false;
    if (!doorbell_pending_ && messages > 1)
        return false;  // the socket did not take the queue; EPOLLOUT is on it
    if (bytes > kDoorbellBatchBytes)
        return false;
    if (!doorbell_pending_) {
        // The lease's deadline (at most a linger away) rings it at the latest.
        doorbell_pending_ = true;
        doorbell_by_ = until_;
    }
    return true;
}

}  // namespace rpma::provider::tcp
