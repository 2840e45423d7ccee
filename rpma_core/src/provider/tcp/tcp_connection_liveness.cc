// Connection, liveness (tcp_liveness.h): while a connection waits for its
// peer, the progress thread looks at it every quarter of the bound, probes a
// quiet peer and breaks the connection once the peer made no progress for
// the whole bound. Test: tcp_liveness_test.
#include "rpma_core/src/provider/tcp/tcp_connection.h"

#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>

#include "rpma_core/src/log.h"

namespace rpma::provider::tcp {
namespace {

// How often a connection waiting for its peer looks at it: a quarter of the
// bound, so a silent peer is probed after a quarter and given up on within
// a quarter after the whole.
std::chrono::milliseconds PeerLookInterval(std::chrono::milliseconds timeout) {
    return std::max(std::chrono::milliseconds(1), timeout / 4);
}

}  // namespace

void Connection::ScheduleLook() {
    // Apart from ScheduleDeadline, whose one earliest deadline the lease
    // replaces every linger: the engine keeps each deadline it is given
    // until it passes, and a look rescheduled at every lease's end piled up
    // hundreds of them, all due at once.
    if (look_scheduled_ && look_scheduled_at_ <= peer_look_at_)
        return;  // OnDeadline runs first and schedules this one
    look_scheduled_ = true;
    look_scheduled_at_ = peer_look_at_;
    deps_.engine->ScheduleDeadline(peer_look_at_, weak_from_this());
}

void Connection::StartWatchingPeer() {
    watch_timeout_ms_ = deps_.request_timeout_ms->load(std::memory_order_relaxed);
    if (watch_timeout_ms_ <= 0 || !socket_.Valid() || !IsLive())
        return;
    watching_peer_ = true;
    const ProgressEngine::Clock::time_point now = ProgressEngine::Clock::now();
    peer_watch_.Start(socket_.Get(), now);
    peer_look_at_ = now + PeerLookInterval(std::chrono::milliseconds(watch_timeout_ms_));
    ScheduleLook();
}

void Connection::LookAtPeer(ProgressEngine::Clock::time_point now) {
    // Waiting for the peer: for answers to our requests, or for it to read
    // what we have queued for it.
    const bool waiting_for_peer = !sq_.Empty() || !out_.Empty();
    // Holding the peer's message for want of a receive, or persisting what
    // it asked: it waits for us.
    const bool holding_message =
        in_.phase == Inbound::Phase::kWaitingForReceive || in_.phase == Inbound::Phase::kPersisting;
    if (!IsLive() || !socket_.Valid() || (!waiting_for_peer && !holding_message)) {
        watching_peer_ = false;  // the next wait for the peer starts afresh
        return;
    }
    const std::chrono::milliseconds timeout(watch_timeout_ms_);
    peer_look_at_ = now + PeerLookInterval(timeout);
    if (!waiting_for_peer) {
        peer_watch_.Start(socket_.Get(), now);
    } else {
        switch (peer_watch_.Check(socket_.Get(), !out_.Empty(), now, timeout)) {
            case PeerWatch::Verdict::kAlive:
                break;
            case PeerWatch::Verdict::kProbe:
                // An answer owed for anything (an unsignaled request is
                // acknowledged lazily) or a repeated ACK: either shows life.
                if (!sq_.Empty()) {
                    OutboundMessage ask;
                    ask.header.opcode = wire::Opcode::kAckRequest;
                    out_.Push(std::move(ask));
                }
                break;
            case PeerWatch::Verdict::kDead:
                RPMA_LOG_ERROR_RATELIMITED(
                    "connection to %s lost: no progress from the peer for %d ms while %s (a "
                    "stopped process or a vanished host?); the oldest request completes with "
                    "IBV_WC_RETRY_EXC_ERR (%s sets the bound)",
                    peer_.c_str(), watch_timeout_ms_,
                    sq_.Empty() ? "our messages waited for it to read them"
                                : "requests waited for its answer",
                    kRequestTimeoutVariable);
                watching_peer_ = false;
                Fail(IBV_WC_RETRY_EXC_ERR, /*send_nothing=*/true);
                return;
        }
    }
    if (holding_message) {
        // A repeated ACK tells the sender that we live, as an RNR NAK does.
        acks_.Force();
    }
    AfterProgress();
}

}  // namespace rpma::provider::tcp
