// Connection, deadlines: what the engine's OnDeadline does for a connection
// — ringing the doorbell a post left waiting, ending the inline linger
// (tcp_inline_lease.h), and the looks of its PeerLiveness (tcp_liveness.h):
// when they start, asking a quiet peer for an answer, a heartbeat while the
// peer waits for us, breaking the connection when the peer made no progress
// for the whole bound. Tests: tcp_inline_progress_test, tcp_liveness_test.
#include <atomic>
#include <chrono>
#include <mutex>

#include "rpma_core/src/log.h"
#include "rpma_core/src/provider/tcp/tcp_connection.h"

namespace rpma::provider::tcp {

void Connection::OnDeadline() {
    std::lock_guard lock(mu_);
    const ProgressEngine::Clock::time_point now = ProgressEngine::Clock::now();
    inline_.DeadlinePassed(now);
    liveness_.DeadlinePassed(now);
    InlineLease &lease = inline_.lease();
    if (lease.DoorbellDue(now))
        RingDoorbell();
    if (liveness_.Due(now))
        LookAtPeer(now);
    lease.Expire(now, deps_.inline_linger_us->load(std::memory_order_relaxed));
    if (lease.DoorbellPending())
        ScheduleDeadline(lease.DoorbellBy());
    if (lease.Lingering())
        ScheduleDeadline(lease.Until());
    if (liveness_.Watching())
        ScheduleLook();
    UpdateInterest();
}

// The lease's deadlines (the doorbell, the linger's end) share one.
void Connection::ScheduleDeadline(ProgressEngine::Clock::time_point at) {
    if (inline_.AskDeadline(at))
        deps_.engine->ScheduleDeadline(at, weak_from_this());
}

// Asks the engine for OnDeadline at the next look unless a deadline no
// later than that is pending already.
void Connection::ScheduleLook() {
    // Apart from ScheduleDeadline, whose one earliest deadline the lease
    // replaces every linger.
    ProgressEngine::Clock::time_point at;
    if (liveness_.NeedsDeadline(&at))
        deps_.engine->ScheduleDeadline(at, weak_from_this());
}

void Connection::StartWatchingPeer() {
    const int timeout_ms = deps_.request_timeout_ms->load(std::memory_order_relaxed);
    if (timeout_ms <= 0 || !socket_.Valid() || !IsLive())
        return;
    liveness_.Start(socket_.Get(), timeout_ms, ProgressEngine::Clock::now());
    ScheduleLook();
}

// One look, on the progress thread: probe, heartbeat, or break.
void Connection::LookAtPeer(ProgressEngine::Clock::time_point now) {
    if (!IsLive() || !socket_.Valid()) {
        liveness_.Stop();
        return;
    }
    // Holding the peer's message for want of a receive, or persisting what
    // it asked: it waits for us.
    const bool holding_message = in().phase == Inbound::Phase::kWaitingForReceive ||
                                 in().phase == Inbound::Phase::kPersisting;
    // Waiting for the peer: for answers to our requests, or for it to read
    // what we have queued for it.
    switch (liveness_.Check(socket_.Get(), !initiator_.queue().Empty() || !out_.Empty(),
                            !out_.Empty(), holding_message, now)) {
        case PeerLiveness::Look::kStopped:
            return;
        case PeerLiveness::Look::kAlive:
            break;
        case PeerLiveness::Look::kProbe:
            // An answer owed for anything (an unsignaled request is
            // acknowledged lazily) or a repeated ACK: either shows life.
            if (!initiator_.queue().Empty()) {
                OutboundMessage ask;
                ask.header.opcode = wire::Opcode::kAckRequest;
                out_.Push(std::move(ask));
            }
            break;
        case PeerLiveness::Look::kDead:
            RPMA_LOG_ERROR_RATELIMITED(
                "connection to %s lost: no progress from the peer for %d ms while %s (a "
                "stopped process or a vanished host?); the oldest request completes with "
                "IBV_WC_RETRY_EXC_ERR (%s sets the bound)",
                peer_.c_str(), liveness_.TimeoutMs(),
                initiator_.queue().Empty() ? "our messages waited for it to read them"
                                           : "requests waited for its answer",
                kRequestTimeoutVariable);
            Fail(IBV_WC_RETRY_EXC_ERR, /*send_nothing=*/true);
            return;
    }
    if (holding_message) {
        // A repeated ACK tells the sender that we live, as an RNR NAK does.
        acks_.Force();
    }
    AfterProgress();
}

}  // namespace rpma::provider::tcp
