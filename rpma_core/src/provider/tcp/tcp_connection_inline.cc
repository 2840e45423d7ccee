// Connection, inline progress: an application thread that waits for this
// connection's completions reads its socket itself. Who waits, the lease
// and the direct read are InlineProgress's (tcp_inline_progress.h); here
// the connection acts on what it says. Test: tcp_inline_progress_test.
#include "rpma_core/src/provider/tcp/tcp_connection.h"

#include <atomic>
#include <mutex>

#include "rpma_core/src/provider/tcp/tcp_completion_queue.h"

namespace rpma::provider::tcp {

// First sends what waits for the doorbell (the waiter's own post may).
int Connection::PrepareInlineWait(bool *muted, uint64_t *token, InlineWatcher *watcher) {
    std::lock_guard lock(mu_);
    RingDoorbell();
    const bool readable = ReadingEnabled();
    *token = socket_token_;
    if (readable && watcher != nullptr && !watcher->Watching(socket_token_))
        watcher->Watch(socket_.Get(), socket_token_);
    if (inline_.Follow(muted, readable))
        UpdateInterest();
    return readable ? socket_.Get() : -1;
}

void Connection::RewatchInline(bool muted, InlineWatcher *watcher) {
    std::lock_guard lock(mu_);
    if (muted && ReadingEnabled() && !watcher->Watching(socket_token_))
        watcher->Watch(socket_.Get(), socket_token_);
}

void Connection::EndInlineWait(bool *muted) {
    if (!*muted)
        return;
    std::lock_guard lock(mu_);
    EndInlineWaitLocked(muted);
}

void Connection::EndInlineWaitLocked(bool *muted) {
    bool deadline;
    if (!inline_.End(muted, deps_.inline_linger_us->load(std::memory_order_relaxed),
                     ReadingEnabled(), &deadline))
        return;
    if (deadline)
        deps_.engine->ScheduleDeadline(inline_.lease().Until(), weak_from_this());
    UpdateInterest();
}

void Connection::SendHeld() {
    std::lock_guard lock(mu_);
    RingDoorbell();
}

// Sends what posts left queued for the next doorbell.
void Connection::RingDoorbell() {
    if (inline_.lease().DoorbellPending())
        AfterProgress();  // piggybacks a pending ACK, sends, updates the interest
}

bool Connection::DriveInbound(bool try_only) {
    std::unique_lock lock(mu_, std::defer_lock);
    if (try_only) {
        if (!lock.try_lock())
            return false;
    } else {
        lock.lock();
    }
    RingDoorbell();
    if (!ReadingEnabled())
        return false;
    if (try_only && initiator_.TakeSkip()) {
        // A poll right after a post: the answer is at least a round trip
        // away, so the read would only say EAGAIN. The next poll reads.
        return false;
    }
    ReadInbound();
    AfterProgress();
    return true;
}

Connection::DirectRead Connection::WaitDirect(bool *muted, CompletionQueue *const *caught,
                                              const SignalingQueue<CompletionQueue *> &events) {
    std::unique_lock lock(mu_);
    RingDoorbell();
    if (!ReadingEnabled() || inline_.ReaderBusy()) {
        EndInlineWaitLocked(muted);
        return DirectRead::kUnavailable;
    }
    if (inline_.Follow(muted, true))
        UpdateInterest();
    if (!inline_.Alone())
        return DirectRead::kUnavailable;  // another thread waits on it too
    // The progress thread read the socket and fired the event after the
    // waiter last looked at the channel, before the mute: the recv would
    // only sit out its timeout, which the kernel rounds up to a tick or two
    // (4-8 ms at HZ=250; it was the 3-replica p99 at a 2 ms round trip).
    // From here on the socket is this waiter's to read.
    if (!events.Empty())
        return DirectRead::kRead;
    bool drained = true;  // staged already: the socket was read
    if (reader_.StagedBytes() == 0) {
        ssize_t got = 0;
        switch (inline_.DirectRecv(lock, socket_.Get(), reader_.StageBuffer(), Stage::kSize, peer_,
                                   &got)) {
            case InlineProgress::Recv::kUnavailable:
                return DirectRead::kUnavailable;
            case InlineProgress::Recv::kTimedOut:
                return DirectRead::kTimedOut;
            case InlineProgress::Recv::kClosed:
                return DirectRead::kRead;  // what was read went with the socket
            case InlineProgress::Recv::kReceived:
                break;
        }
        if (!ReadingEnabled())
            return DirectRead::kRead;  // closing meanwhile: what was read goes
        bool closed;
        if (!reader_.Received(got, &closed)) {
            if (closed)
                OnPeerGone(reader_.peer_error());
            AfterProgress();
            return DirectRead::kRead;
        }
        drained = static_cast<size_t>(got) < Stage::kSize;
    }
    ReadInbound(drained);
    AfterProgress();
    if (*caught != nullptr)
        EndInlineWaitLocked(muted);
    return DirectRead::kRead;
}

}  // namespace rpma::provider::tcp
