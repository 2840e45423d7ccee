// Connection, deadlines: what the engine's OnDeadline does for a connection
// — ringing the doorbell a post left waiting, ending the inline linger
// (tcp_inline_lease.h), and the looks at the peer: when they start, and
// doing what PeerLiveness (tcp_liveness.h) says a look found — asking a
// quiet peer for an answer, a heartbeat while the peer waits for us,
// breaking the connection when the peer made no progress for the whole
// bound. Tests: tcp_inline_progress_test, tcp_peer_liveness_test,
// tcp_liveness_test.
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
    // The lease's deadlines (the doorbell, the linger's end) share one.
    if (lease.DoorbellPending() && inline_.AskDeadline(lease.DoorbellBy()))
        deps_.engine->ScheduleDeadline(lease.DoorbellBy(), weak_from_this());
    if (lease.Lingering() && inline_.AskDeadline(lease.Until()))
        deps_.engine->ScheduleDeadline(lease.Until(), weak_from_this());
    // Apart from the lease's deadline, which the lease replaces every
    // linger: the looks keep their own.
    ProgressEngine::Clock::time_point look;
    if (liveness_.Watching() && liveness_.NeedsDeadline(&look))
        deps_.engine->ScheduleDeadline(look, weak_from_this());
    UpdateInterest();
}

// The looks at the peer begin unless they run (or are off).
void Connection::WatchPeer() {
    if (liveness_.Watching())
        return;
    const int timeout_ms = deps_.request_timeout_ms->load(std::memory_order_relaxed);
    if (timeout_ms <= 0 || !socket_.Valid() || !IsLive(state_))
        return;
    liveness_.Start(socket_.Get(), timeout_ms, ProgressEngine::Clock::now());
    ProgressEngine::Clock::time_point look;
    if (liveness_.NeedsDeadline(&look))
        deps_.engine->ScheduleDeadline(look, weak_from_this());
}

// One look, on the progress thread: what PeerLiveness finds, done.
void Connection::LookAtPeer(ProgressEngine::Clock::time_point now) {
    PeerLiveness::Waits waits;
    waits.live = IsLive(state_) && socket_.Valid();
    waits.answers = !initiator_.queue().Empty();
    waits.backlog = !out_.Empty();
    waits.holding_message = target_.Holding();
    const PeerLiveness::Look look = liveness_.Check(socket_.Get(), waits, now);
    switch (look.kind) {
        case PeerLiveness::Look::Kind::kStopped:
            return;
        case PeerLiveness::Look::Kind::kDead:
            RPMA_LOG_ERROR_RATELIMITED(
                "connection to %s lost: no progress from the peer for %d ms while %s (a "
                "stopped process or a vanished host?); the oldest request completes with "
                "IBV_WC_RETRY_EXC_ERR (%s sets the bound)",
                peer_.c_str(), liveness_.TimeoutMs(),
                waits.answers ? "requests waited for its answer"
                              : "our messages waited for it to read them",
                kRequestTimeoutVariable);
            Fail(IBV_WC_RETRY_EXC_ERR, /*send_nothing=*/true);
            return;
        case PeerLiveness::Look::Kind::kAlive:
            break;
    }
    if (look.ask_for_ack) {
        OutboundMessage ask;
        ask.header.opcode = wire::Opcode::kAckRequest;
        out_.Push(std::move(ask));
    }
    if (look.heartbeat)
        acks_.Force();
    AfterProgress();
}

}  // namespace rpma::provider::tcp
