// Connection, inline progress: an application thread that waits for this
// connection's completions reads its socket itself (tcp_connection.h says
// how, and what the linger after a wait is for). Test:
// tcp_inline_progress_test.
#include "rpma_core/src/provider/tcp/tcp_connection.h"

#include <fcntl.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "rpma_core/src/log.h"
#include "rpma_core/src/provider/tcp/tcp_completion_queue.h"

namespace rpma::provider::tcp {
namespace {

// How long WaitDirect's recv waits before the waiter falls back to
// epoll (the kernel rounds it up to a timer tick). Completions another
// thread makes for a channel whose waiter is in that recv are seen when it
// returns, so this also bounds their delay.
constexpr int kDirectReadTimeoutUs = 1000;

}  // namespace

bool Connection::MakeSocketBlocking() {
    if (socket_blocking_)
        return true;
    const int flags = fcntl(socket_.Get(), F_GETFL);
    timeval timeout{};
    timeout.tv_usec = kDirectReadTimeoutUs;
    if (flags < 0 || fcntl(socket_.Get(), F_SETFL, flags & ~O_NONBLOCK) != 0 ||
        setsockopt(socket_.Get(), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout)) != 0) {
        RPMA_LOG_WARNING("cannot prepare the socket to %s for blocking reads: %s", peer_.c_str(),
                         strerror(errno));
        return false;
    }
    socket_blocking_ = true;
    return true;
}

int Connection::PrepareInlineWait(bool *muted, uint64_t *token, InlineWatcher *watcher) {
    std::lock_guard lock(mu_);
    RingDoorbell();
    const bool readable = socket_.Valid() && ReadingEnabled();
    *token = socket_token_;
    if (readable && watcher != nullptr && !watcher->Watching(socket_token_))
        watcher->Watch(socket_.Get(), socket_token_);
    if (readable != *muted) {
        if (readable)
            lease_.Join();
        else
            lease_.Leave();
        *muted = readable;
        UpdateInterest();
    }
    return readable ? socket_.Get() : -1;
}

void Connection::RewatchInline(bool muted, InlineWatcher *watcher) {
    std::lock_guard lock(mu_);
    if (muted && socket_.Valid() && ReadingEnabled() && !watcher->Watching(socket_token_))
        watcher->Watch(socket_.Get(), socket_token_);
}

void Connection::EndInlineWait(bool *muted) {
    if (!*muted)
        return;
    std::lock_guard lock(mu_);
    EndInlineWaitLocked(muted);
}

void Connection::EndInlineWaitLocked(bool *muted) {
    if (!*muted)
        return;
    *muted = false;
    if (lease_.Leave() &&
        lease_.StartLinger(deps_.inline_linger_us->load(std::memory_order_relaxed),
                           socket_.Valid() && ReadingEnabled(), deadline_scheduled_))
        ScheduleDeadline(lease_.Until());
    UpdateInterest();
}

void Connection::RingDoorbell() {
    if (lease_.DoorbellPending())
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
    if (!socket_.Valid() || !ReadingEnabled())
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

Connection::DirectRead Connection::WaitDirect(bool *muted, CompletionQueue *const *caught) {
    std::unique_lock lock(mu_);
    RingDoorbell();
    if (!socket_.Valid() || !ReadingEnabled() || reader_busy_) {
        EndInlineWaitLocked(muted);
        return DirectRead::kUnavailable;
    }
    if (!*muted) {
        lease_.Join();
        *muted = true;
        UpdateInterest();
    }
    if (lease_.Waiters() != 1)
        return DirectRead::kUnavailable;  // another thread waits on it too
    bool drained = true;                  // staged already: the socket was read
    if (reader_.StagedBytes() == 0) {
        if (!MakeSocketBlocking())
            return DirectRead::kUnavailable;
        reader_busy_ = true;
        const int fd = socket_.Get();
        uint8_t *const stage = reader_.StageBuffer();
        lock.unlock();
        const ssize_t got = SocketRecv(fd, stage, Stage::kSize, 0);
        const int err = got < 0 ? errno : 0;
        lock.lock();
        reader_busy_ = false;
        if (deferred_close_.Valid()) {
            deferred_close_.Reset();  // closed meanwhile: what was read goes too
            return DirectRead::kRead;
        }
        if (got < 0 && (err == EAGAIN || err == EWOULDBLOCK))
            return DirectRead::kTimedOut;
        if (!ReadingEnabled())
            return DirectRead::kRead;  // closing meanwhile: what was read goes
        if (got < 0)
            errno = err;
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
