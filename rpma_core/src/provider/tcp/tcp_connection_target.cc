// Connection as a target: what it does with its Target's verdicts
// (tcp_target.h): read the payload, hold the message for a receive (bounded
// by the RNR timer), hand a persist to a worker, refuse the request with a
// NAK and break. Tests: tcp_target_test, tcp_remote_ops_test,
// tcp_messaging_test, tcp_persist_workers_test, tcp_hostile_peer_test.
#include "rpma_core/src/provider/tcp/tcp_connection.h"

#include <mutex>

#include "rpma_core/src/log.h"
#include "rpma_core/src/provider/tcp/tcp_persist_workers.h"

namespace rpma::provider::tcp {

void Connection::Act(Target::Verdict verdict) {
    switch (verdict.kind) {
        case Target::Verdict::Kind::kDone:
            return;
        case Target::Verdict::Kind::kReadPayload:
            return BeginPayload(wire::PayloadLength(in().header));
        case Target::Verdict::Kind::kWaitForReceive:
            // Meanwhile the looks at the peer tell it that we live.
            WatchPeer();
            if (timer_.Armed() != TimerPurpose::kReceiverNotReady)
                timer_.Arm(TimerPurpose::kReceiverNotReady, deps_.rnr_timeout_ms->load());
            return;
        case Target::Verdict::Kind::kPersistOnWorker:
            // Reading stops until the worker answers; meanwhile the looks at
            // the peer tell it that we live.
            WatchPeer();
            deps_.persist_workers->Submit(
                [weak = weak_from_this(), segment = target_.TakePersist()] {
                    const int err = segment.region->PersistUnlocked(segment.addr, segment.length);
                    if (err == 0)
                        segment.region->CountPersisted(segment.length);
                    if (const std::shared_ptr<Connection> connection = weak.lock())
                        connection->OnPersisted(err);
                });
            return;
        case Target::Verdict::Kind::kReject:
            // The peer's request violated our rules: its NAK carries the
            // status (Target::Refuse), and the connection breaks.
            if (state_ == State::kClosing || state_ == State::kClosed)
                return;
            RPMA_LOG_ERROR_RATELIMITED(
                "refusing %s request %llu from %s (rkey %#x, address %#llx, length %u): %s; "
                "breaking the connection",
                wire::OpcodeName(in().header.opcode),
                static_cast<unsigned long long>(in().header.sequence), peer_.c_str(),
                in().header.rkey, static_cast<unsigned long long>(in().header.remote_addr),
                in().header.length, verdict.why);
            target_.Refuse(verdict.status);
            return Fail(IBV_WC_WR_FLUSH_ERR, /*send_nothing=*/false);
        case Target::Verdict::Kind::kProtocolError:
            return ProtocolError(verdict.why);
        case Target::Verdict::Kind::kCompletionLost:
            return OnCompletionLost();
    }
}

// The worker's answer to a persist handed to it, on the worker thread.
void Connection::OnPersisted(int error) {
    std::lock_guard lock(mu_);
    if (!target_.Persisting() || !socket_.Valid())
        return;  // the connection broke meanwhile
    Act(target_.OnPersisted(error));
    if (ReadingEnabled())
        ReadInbound();
    AfterProgress();
}

void Connection::ResumeReceiving() {
    std::lock_guard lock(mu_);
    if (!target_.WaitingForReceive() || !socket_.Valid())
        return;
    in().phase = InboundMessage::Phase::kHeader;
    Act(target_.OnRequest(IsLive(state_)));
    if (!target_.WaitingForReceive())
        timer_.Disarm(TimerPurpose::kReceiverNotReady);
    if (ReadingEnabled())
        ReadInbound();
    AfterProgress();
}

}  // namespace rpma::provider::tcp
