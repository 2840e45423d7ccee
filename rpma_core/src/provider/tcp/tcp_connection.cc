#include "rpma_core/src/provider/tcp/tcp_connection.h"

#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "rpma_core/src/log.h"
#include "rpma_core/src/provider/tcp/tcp_completion_queue.h"
#include "rpma_core/src/provider/tcp/tcp_protection_domain.h"
#include "rpma_core/src/provider/tcp/tcp_request_queue.h"

namespace rpma::provider::tcp {
namespace {

// A peer's declared send-queue depth, as this side bounds it: no honest
// peer has a deeper queue than this provider creates (kMaxQueueDepth, its
// max_qp_wr), and a depth of 0 still lets one READ be answered. Nothing a
// peer declares is used unchecked.
uint32_t ClampPeerDepth(uint32_t declared) {
    return std::clamp<uint32_t>(declared, 1, kMaxQueueDepth);
}

// A passive side gives a peer this long to send its CONNECT_REQUEST, and to
// send its READY_TO_USE after ACCEPT, so a silent client cannot pin a socket.
constexpr int kPassiveHandshakeTimeoutMs = 10000;
// How long a disconnect waits for the peer's DISCONNECT and end of stream.
constexpr int kDisconnectTimeoutMs = 2000;
// How long a dead connection keeps trying to deliver its last NAK or REJECT.
constexpr int kClosingLingerMs = 1000;
// Bytes read from one connection per wake-up, so one busy peer cannot starve
// the others (the socket stays readable and epoll brings us back).
constexpr size_t kReadBudgetBytes = size_t{4} << 20;
// Inbound bytes go through a per-connection stage: one recv takes a header
// with a small payload, or several messages, at once.
constexpr size_t kStageSize = size_t{16} << 10;
// What is left of a payload at least this long is read straight into its
// destination (with the stage behind it for what follows).
constexpr size_t kDirectPayloadBytes = size_t{8} << 10;
// Small unsignaled requests posted in the linger after an inline wait are
// held for the next doorbell while the queue stays below this.
constexpr size_t kDoorbellBatchBytes = size_t{64} << 10;
// How long WaitDirect's recv waits before the waiter falls back to
// epoll (the kernel rounds it up to a timer tick). Completions another
// thread makes for a channel whose waiter is in that recv are seen when it
// returns, so this also bounds their delay.
constexpr int kDirectReadTimeoutUs = 1000;
// Largest IBV_SEND_INLINE payload (the QP's max_inline_data).
constexpr uint32_t kMaxInlineData = 64;

// How often a connection waiting for its peer looks at it: a quarter of the
// bound, so a silent peer is probed after a quarter and given up on within
// a quarter after the whole.
std::chrono::milliseconds PeerLookInterval(std::chrono::milliseconds timeout) {
    return std::max(std::chrono::milliseconds(1), timeout / 4);
}

bool IsNakStatus(uint32_t status) {
    switch (status) {
        case IBV_WC_REM_ACCESS_ERR:
        case IBV_WC_REM_INV_REQ_ERR:
        case IBV_WC_REM_OP_ERR:
        case IBV_WC_RNR_RETRY_EXC_ERR:
            return true;
        default:
            return false;
    }
}

// Makes the segment durable (earlier writes are already applied: requests
// run in order) by the method its region's registration chose
// (tcp_persist.h): CPU cache flushes on DAX, msync on a page-cache file,
// nothing on private memory. 0, EFAULT when the region was deregistered, or
// msync's errno.
int Persist(const MemorySegment &segment) {
    return segment.region->Persist(segment.addr, segment.length);
}

}  // namespace

const char *Connection::StateName(State state) {
    switch (state) {
        case State::kIdle:
            return "idle";
        case State::kConnecting:
            return "connecting";
        case State::kAwaitingReply:
            return "awaiting reply";
        case State::kAwaitingRequest:
            return "awaiting request";
        case State::kRequestQueued:
            return "request queued";
        case State::kAwaitingRtu:
            return "awaiting ready-to-use";
        case State::kEstablished:
            return "established";
        case State::kDisconnecting:
            return "disconnecting";
        case State::kClosing:
            return "closing";
        case State::kClosed:
            return "closed";
    }
    return "unknown";
}

std::shared_ptr<Connection> Connection::CreateActive(const ConnectionDeps &deps,
                                                     std::vector<SocketAddress> addresses) {
    auto connection = std::make_shared<Connection>(deps, /*active=*/true);
    deps.memory->AddUser(connection);
    connection->addresses_ = std::move(addresses);
    if (!connection->addresses_.empty())
        connection->peer_ = connection->addresses_.front().ToString();
    return connection;
}

int Connection::StartPassive(const ConnectionDeps &deps, UniqueFd socket,
                             std::weak_ptr<RequestQueue> requests) {
    auto connection = std::make_shared<Connection>(deps, /*active=*/false);
    deps.memory->AddUser(connection);
    std::lock_guard lock(connection->mu_);
    SocketAddress peer;
    peer.length = sizeof(peer.storage);
    if (getpeername(socket.Get(), reinterpret_cast<sockaddr *>(&peer.storage), &peer.length) == 0)
        connection->peer_ = peer.ToString();
    connection->requests_ = std::move(requests);
    if (const int err = connection->EnsureTimer(); err != 0)
        return err;
    if (const int err = connection->AttachSocket(std::move(socket)); err != 0) {
        connection->CloseNow();
        return err;
    }
    connection->ArmTimer(TimerPurpose::kHandshake, kPassiveHandshakeTimeoutMs);
    return 0;
}

Connection::Connection(const ConnectionDeps &deps, bool active)
    : deps_(deps), active_(active), state_(active ? State::kIdle : State::kAwaitingRequest) {}

Connection::~Connection() = default;

void Connection::Quiesce() {
    // Region memory is touched only under the lock (MemoryTable).
    std::lock_guard lock(mu_);
}

// ---------------------------------------------------------------------------
// Socket and timer plumbing.

int Connection::AttachSocket(UniqueFd socket) {
    socket_ = std::move(socket);
    socklen_t length = sizeof(peer_address_);
    if (getpeername(socket_.Get(), reinterpret_cast<sockaddr *>(&peer_address_), &length) != 0)
        peer_address_.ss_family = AF_UNSPEC;
    const std::chrono::milliseconds timeout(deps_.request_timeout_ms->load());
    if (const int err = SetSocketLiveness(socket_.Get(), timeout); err != 0) {
        // Requests are still bounded; only an idle connection to a host that
        // vanished goes unnoticed, as on verbs.
        RPMA_LOG_WARNING("cannot set TCP keepalive on the connection to %s: %s", peer_.c_str(),
                         strerror(err));
    }
    socket_blocking_ = false;
    write_shut_down_ = false;
    interest_ = WantedEvents();
    const int err = deps_.engine->Add(socket_.Get(), interest_, shared_from_this(), &socket_token_);
    if (err != 0) {
        socket_.Reset();
        interest_ = 0;
    }
    return err;
}

void Connection::DetachSocket() {
    if (!socket_.Valid())
        return;
    deps_.engine->Remove(socket_token_, socket_.Get());
    if (reader_busy_) {
        // Its number must not be reused under that recv: wake the reader
        // (end of stream) and leave the close to it.
        shutdown(socket_.Get(), SHUT_RDWR);
        deferred_close_ = std::move(socket_);
    } else {
        socket_.Reset();
    }
    interest_ = 0;
}

void Connection::EnsureStage() {
    // Page-aligned: a payload behind a 64-byte header then keeps its
    // alignment in the stage, for the kernel's copy into it and for ours
    // out of it (see wire::kHeaderSize).
    if (stage_ == nullptr)
        stage_.reset(new (std::align_val_t{kStageAlignment}) uint8_t[kStageSize]);
}

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

int Connection::EnsureTimer() {
    if (timer_.Valid())
        return 0;
    UniqueFd timer(timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC));
    if (!timer.Valid()) {
        const int err = errno;
        RPMA_LOG_ERROR("cannot create a connection timer: %s", strerror(err));
        return err;
    }
    const int err = deps_.engine->Add(timer.Get(), EPOLLIN, shared_from_this(), &timer_token_);
    if (err != 0)
        return err;
    timer_ = std::move(timer);
    return 0;
}

void Connection::ArmTimer(TimerPurpose purpose, int milliseconds) {
    if (!timer_.Valid())
        return;
    itimerspec spec{};
    spec.it_value.tv_sec = milliseconds / 1000;
    spec.it_value.tv_nsec = static_cast<long>(milliseconds % 1000) * 1000000L;
    if (milliseconds <= 0)
        spec.it_value.tv_nsec = 1;  // zero would disarm
    timerfd_settime(timer_.Get(), 0, &spec, nullptr);
    timer_purpose_ = purpose;
}

void Connection::DisarmTimer(TimerPurpose purpose) {
    if (timer_purpose_ != purpose || !timer_.Valid())
        return;
    itimerspec spec{};
    timerfd_settime(timer_.Get(), 0, &spec, nullptr);
    timer_purpose_ = TimerPurpose::kNone;
}

bool Connection::ReadingEnabled() const {
    if (!socket_.Valid() || in_.phase == Inbound::Phase::kWaitingForReceive ||
        in_.phase == Inbound::Phase::kPersisting)
        return false;
    switch (state_) {
        case State::kAwaitingReply:
        case State::kAwaitingRequest:
        case State::kAwaitingRtu:
        case State::kEstablished:
        case State::kDisconnecting:
            return true;
        default:
            return false;
    }
}

uint32_t Connection::WantedEvents() const {
    uint32_t events = 0;
    if (!ReadingEnabled()) {
        // RDHUP stays on while reading is paused so a vanished peer is noticed.
        events |= EPOLLRDHUP;
    } else if (inline_waiters_ == 0 && !mute_lease_) {
        events |= EPOLLIN | EPOLLRDHUP;
    }
    // Otherwise a thread reading inline has the socket (or the linger after
    // it runs): the progress thread does not watch it at all, as a socket in
    // an epoll set costs a callback per packet even for events nobody asked
    // for. The reader sees a vanished peer itself; past the linger the
    // progress thread watches again and finds what happened meanwhile.
    // Messages waiting for their doorbell are not the progress thread's to
    // send (yet); EPOLLOUT is for a queue the socket did not take.
    if (state_ == State::kConnecting || (!out_.Empty() && !doorbell_pending_))
        events |= EPOLLOUT;
    return events;
}

void Connection::UpdateInterest() {
    if (!socket_.Valid())
        return;
    const uint32_t wanted = WantedEvents();
    if (wanted != interest_ &&
        deps_.engine->Modify(socket_token_, socket_.Get(), interest_, wanted) == 0)
        interest_ = wanted;
}

void Connection::FlushOutbound() {
    doorbell_pending_ = false;
    if (!socket_.Valid() || state_ == State::kConnecting || out_.Empty())
        return;
    const OutboundQueue::FlushResult result = out_.Flush(socket_.Get());
    switch (result.status) {
        case OutboundQueue::FlushStatus::kDrained:
            return;
        case OutboundQueue::FlushStatus::kBlocked:
            // The peer must read for the rest to go: watch that it does.
            WatchPeer();
            return;
        case OutboundQueue::FlushStatus::kRevoked:
            RPMA_LOG_ERROR(
                "connection to %s broken: a memory region was deregistered while a "
                "transfer from it was in flight (deregister only after the "
                "operations using it completed)",
                peer_.c_str());
            Fail(IBV_WC_WR_FLUSH_ERR, /*send_nothing=*/true);
            return;
        case OutboundQueue::FlushStatus::kError:
            OnPeerGone(result.error);
            return;
    }
}

void Connection::PushPendingAck() {
    ack_requested_ = false;
    const bool forced = std::exchange(ack_forced_, false);
    if (applied_sequence_ > acknowledged_sequence_ || forced) {
        out_.PushAck(applied_sequence_);
        acknowledged_sequence_ = applied_sequence_;
    }
}

void Connection::AfterProgress() {
    if (!socket_.Valid())
        return;
    // Staged bytes wait for reading to be enabled again (after a handshake
    // step); nothing else would bring them back.
    if (stage_begin_ < stage_end_ && ReadingEnabled())
        ReadInbound();
    if (!socket_.Valid())
        return;
    // An acknowledgement goes out when the peer asked for one, or rides
    // along with whatever else is about to be sent (one sendmsg).
    if (IsLive() && !write_shut_down_ && (ack_requested_ || !out_.Empty())) {
        if (!ack_requested_ || !out_.Empty() || !SendAckAtOnce())
            PushPendingAck();
    }
    FlushOutbound();
    if (!socket_.Valid())
        return;
    if (state_ == State::kClosing && out_.Empty()) {
        CloseNow();
        return;
    }
    // Both goodbyes exchanged and everything sent: end our half of the
    // stream; the peer's end of stream then completes the disconnect.
    if (state_ == State::kDisconnecting && sent_disconnect_ && received_disconnect_ &&
        out_.Empty() && !write_shut_down_) {
        shutdown(socket_.Get(), SHUT_WR);
        write_shut_down_ = true;
    }
    UpdateInterest();
}

void Connection::OnEvents(int fd, uint32_t events) {
    std::lock_guard lock(mu_);
    if (timer_.Valid() && fd == timer_.Get()) {
        uint64_t expirations;
        if (read(timer_.Get(), &expirations, sizeof(expirations)) == sizeof(expirations))
            OnTimer();
        AfterProgress();
        return;
    }
    if (!socket_.Valid() || fd != socket_.Get())
        return;
    if (state_ == State::kConnecting) {
        if (events & (EPOLLOUT | EPOLLERR | EPOLLHUP))
            FinishTcpConnect();
        AfterProgress();
        return;
    }
    if (events & EPOLLOUT)
        FlushOutbound();
    if (ReadingEnabled()) {
        if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
            ReadInbound();
    } else if (socket_.Valid() && (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR))) {
        OnPeerGone(0);
    }
    AfterProgress();
}

int Connection::PrepareInlineWait(bool *muted, uint64_t *token, InlineWatcher *watcher) {
    std::lock_guard lock(mu_);
    RingDoorbell();
    const bool readable = socket_.Valid() && ReadingEnabled();
    *token = socket_token_;
    if (readable && watcher != nullptr && !watcher->Watching(socket_token_))
        watcher->Watch(socket_.Get(), socket_token_);
    if (readable != *muted) {
        inline_waiters_ += readable ? 1 : -1;
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
    --inline_waiters_;
    *muted = false;
    if (inline_waiters_ == 0) {
        const int linger_us = deps_.inline_linger_us->load(std::memory_order_relaxed);
        const bool renewing = mute_lease_ && deadline_scheduled_;
        mute_lease_ = linger_us > 0 && socket_.Valid() && ReadingEnabled();
        if (mute_lease_ && renewing) {
            // The running lease's deadline extends it (no clock read per wait).
            lease_renewed_ = true;
        } else if (mute_lease_) {
            lease_renewed_ = false;
            lease_until_ = ProgressEngine::Clock::now() + std::chrono::microseconds(linger_us);
            ScheduleDeadline(lease_until_);
        }
    }
    UpdateInterest();
}

void Connection::ScheduleDeadline(ProgressEngine::Clock::time_point at) {
    if (deadline_scheduled_ && deadline_at_ <= at)
        return;  // OnDeadline runs first and schedules what is left
    deadline_scheduled_ = true;
    deadline_at_ = at;
    deps_.engine->ScheduleDeadline(at, weak_from_this());
}

void Connection::OnDeadline() {
    std::lock_guard lock(mu_);
    const ProgressEngine::Clock::time_point now = ProgressEngine::Clock::now();
    if (deadline_scheduled_ && deadline_at_ <= now)
        deadline_scheduled_ = false;
    if (look_scheduled_ && look_scheduled_at_ <= now)
        look_scheduled_ = false;
    if (doorbell_pending_ && doorbell_by_ <= now)
        RingDoorbell();
    if (watching_peer_ && peer_look_at_ <= now)
        LookAtPeer(now);
    if (Lingering() && lease_until_ <= now) {
        if (std::exchange(lease_renewed_, false)) {
            // A wait ended during the lease: it runs another linger.
            lease_until_ = now + std::chrono::microseconds(
                                     deps_.inline_linger_us->load(std::memory_order_relaxed));
        } else {
            // Nobody came back: the progress thread serves the socket again
            // (level-triggered, so whatever arrived meanwhile is picked up).
            mute_lease_ = false;
        }
    }
    if (doorbell_pending_)
        ScheduleDeadline(doorbell_by_);
    if (Lingering())
        ScheduleDeadline(lease_until_);
    if (watching_peer_)
        ScheduleLook();
    UpdateInterest();
}

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
        ack_requested_ = true;
        ack_forced_ = true;
    }
    AfterProgress();
}

void Connection::RingDoorbell() {
    if (doorbell_pending_)
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
    if (try_only && std::exchange(posted_since_read_, false)) {
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
        ++inline_waiters_;
        *muted = true;
        UpdateInterest();
    }
    if (inline_waiters_ != 1)
        return DirectRead::kUnavailable;  // another thread waits on it too
    if (stage_begin_ == stage_end_) {
        if (!MakeSocketBlocking())
            return DirectRead::kUnavailable;
        EnsureStage();
        reader_busy_ = true;
        const int fd = socket_.Get();
        uint8_t *const stage = stage_.get();
        lock.unlock();
        const ssize_t got = SocketRecv(fd, stage, kStageSize, 0);
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
        if (!ConsumeReadResult(got)) {
            AfterProgress();
            return DirectRead::kRead;
        }
        stage_begin_ = 0;
        stage_end_ = static_cast<size_t>(got);
    }
    ReadInbound(/*drained=*/stage_end_ - stage_begin_ < kStageSize);
    AfterProgress();
    if (*caught != nullptr)
        EndInlineWaitLocked(muted);
    return DirectRead::kRead;
}

void Connection::OnTimer() {
    const TimerPurpose purpose = std::exchange(timer_purpose_, TimerPurpose::kNone);
    switch (purpose) {
        case TimerPurpose::kNone:
            return;
        case TimerPurpose::kConnect:
            if (state_ == State::kConnecting || state_ == State::kAwaitingReply) {
                RPMA_LOG_ERROR("%s did not %s in time", peer_.c_str(),
                               state_ == State::kConnecting ? "answer the connection"
                                                            : "accept or reject the request");
                Emit(CmEventType::kUnreachable);
                CloseNow();
            }
            return;
        case TimerPurpose::kHandshake:
            if (state_ == State::kAwaitingRequest) {
                RPMA_LOG_INFO_RATELIMITED(
                    "%s opened a connection but sent no connection request within "
                    "%d ms; closing it",
                    peer_.c_str(), kPassiveHandshakeTimeoutMs);
                CloseNow();
            } else if (state_ == State::kAwaitingRtu) {
                RPMA_LOG_ERROR_RATELIMITED(
                    "%s did not confirm the accepted connection within %d ms", peer_.c_str(),
                    kPassiveHandshakeTimeoutMs);
                Fail(IBV_WC_WR_FLUSH_ERR, /*send_nothing=*/true);
            }
            return;
        case TimerPurpose::kReceiverNotReady:
            if (in_.phase == Inbound::Phase::kWaitingForReceive) {
                RPMA_LOG_ERROR(
                    "%s sent a message but no receive was posted within %d ms; "
                    "failing the sender with IBV_WC_RNR_RETRY_EXC_ERR (post receives "
                    "before the peer sends)",
                    peer_.c_str(), deps_.rnr_timeout_ms->load());
                RejectRequest(IBV_WC_RNR_RETRY_EXC_ERR, "receiver not ready");
            }
            return;
        case TimerPurpose::kLinger:
            if (state_ == State::kDisconnecting) {
                RPMA_LOG_NOTICE_RATELIMITED(
                    "%s did not complete the disconnect within %d ms; closing", peer_.c_str(),
                    kDisconnectTimeoutMs);
                FinishDisconnect();
            } else if (state_ == State::kClosing) {
                CloseNow();
            }
            return;
    }
}

// ---------------------------------------------------------------------------
// Handshake.

int Connection::BindQp(const QueuePairBinding &binding) {
    std::lock_guard lock(mu_);
    if (has_qp_) {
        RPMA_LOG_ERROR("this connection already has a queue pair");
        return EINVAL;
    }
    qp_ = binding;
    has_qp_ = true;
    sq_.Attach(binding.sq_size, binding.qp_num, binding.send_cq);
    if (binding.send_cq != nullptr)
        binding.send_cq->AddFeeder(shared_from_this());
    if (binding.recv_cq != nullptr && binding.recv_cq != binding.send_cq)
        binding.recv_cq->AddFeeder(shared_from_this());
    if (binding.srq != nullptr) {
        rq_ = binding.srq;
    } else {
        private_rq_ = std::make_unique<ReceiveQueue>(*deps_.memory, *deps_.engine, binding.pd_id,
                                                     binding.rq_size, /*shared=*/false);
        rq_ = private_rq_.get();
    }
    return 0;
}

void Connection::UnbindQp(const provider::QueuePair *handle) {
    std::lock_guard lock(mu_);
    if (!has_qp_ || qp_.handle != handle)
        return;
    switch (state_) {
        case State::kConnecting:
        case State::kAwaitingReply:
        case State::kAwaitingRtu:
        case State::kEstablished:
            RPMA_LOG_NOTICE(
                "queue pair destroyed while connected to %s; closing the connection "
                "abruptly (disconnect first for a clean close)",
                peer_.c_str());
            CloseNow();
            break;
        default:
            break;
    }
    // A destroyed QP reports nothing more, like a verbs QP.
    sq_.Detach();
    if (in_.phase == Inbound::Phase::kPayload && in_.header.opcode == wire::Opcode::kReadResponse) {
        in_.destination.clear();
        in_.discard = true;
    }
    in_.has_receive = false;
    ReleaseReceive();
    rq_ = nullptr;
    private_rq_.reset();
    has_qp_ = false;
    if (qp_.send_cq != nullptr)
        qp_.send_cq->RemoveFeeder(this);
    if (qp_.recv_cq != nullptr && qp_.recv_cq != qp_.send_cq)
        qp_.recv_cq->RemoveFeeder(this);
    qp_.handle = nullptr;
    qp_.send_cq = nullptr;
    qp_.recv_cq = nullptr;
    qp_.srq = nullptr;
    AfterProgress();
}

int Connection::Connect(const void *private_data, uint8_t length, int timeout_ms) {
    std::lock_guard lock(mu_);
    if (!active_ || state_ != State::kIdle) {
        RPMA_LOG_ERROR("cannot connect: the connection is %s, not a fresh outgoing one",
                       StateName(state_));
        return EINVAL;
    }
    if (length > wire::kMaxPrivateData || (length > 0 && private_data == nullptr)) {
        RPMA_LOG_ERROR("cannot connect: private data of %u bytes (at most %zu)", length,
                       wire::kMaxPrivateData);
        return EINVAL;
    }
    if (!has_qp_) {
        RPMA_LOG_ERROR("cannot connect: create the queue pair first");
        return EINVAL;
    }
    const auto *bytes = static_cast<const uint8_t *>(private_data);
    connect_private_data_.assign(bytes, bytes + length);
    if (const int err = EnsureTimer(); err != 0)
        return err;
    state_ = State::kConnecting;
    if (timeout_ms > 0)
        ArmTimer(TimerPurpose::kConnect, timeout_ms);
    if (!TryNextAddress()) {
        RPMA_LOG_ERROR("cannot connect to %s: no address could be reached", peer_.c_str());
        Emit(CmEventType::kUnreachable);
        CloseNow();
    }
    AfterProgress();
    return 0;
}

bool Connection::TryNextAddress() {
    DetachSocket();
    while (next_address_ < addresses_.size()) {
        const SocketAddress &address = addresses_[next_address_++];
        peer_ = address.ToString();
        UniqueFd socket;
        if (OpenStreamSocket(address.Family(), &socket) != 0)
            continue;
        if (connect(socket.Get(), address.Get(), address.length) != 0 && errno != EINPROGRESS) {
            RPMA_LOG_INFO("connect to %s failed: %s", peer_.c_str(), strerror(errno));
            continue;
        }
        if (AttachSocket(std::move(socket)) == 0)
            return true;
    }
    return false;
}

void Connection::FinishTcpConnect() {
    int error = 0;
    socklen_t length = sizeof(error);
    if (getsockopt(socket_.Get(), SOL_SOCKET, SO_ERROR, &error, &length) != 0)
        error = errno;
    if (error != 0) {
        RPMA_LOG_INFO("connect to %s failed: %s", peer_.c_str(), strerror(error));
        if (!TryNextAddress()) {
            RPMA_LOG_ERROR("cannot connect to %s: %s", peer_.c_str(), strerror(error));
            Emit(CmEventType::kUnreachable);
            CloseNow();
        }
        return;
    }
    state_ = State::kAwaitingReply;
    ArmTimer(TimerPurpose::kConnect, deps_.reply_timeout_ms->load());
    PushHandshake(wire::Opcode::kConnectRequest, connect_private_data_.data(),
                  connect_private_data_.size());
}

void Connection::PushHandshake(wire::Opcode opcode, const void *private_data, size_t length) {
    OutboundMessage message;
    message.header.opcode = opcode;
    wire::HandshakePrefix prefix;
    prefix.send_queue_depth = qp_.sq_size;
    uint8_t encoded[wire::kHandshakePrefixSize];
    wire::EncodeHandshakePrefix(prefix, encoded);
    memcpy(message.inline_payload.data(), encoded, sizeof(encoded));
    if (length > 0)
        memcpy(message.inline_payload.data() + sizeof(encoded), private_data, length);
    message.inline_length = sizeof(encoded) + length;
    message.header.length = static_cast<uint32_t>(message.inline_length);
    out_.Push(std::move(message));
}

int Connection::Accept(const void *private_data, uint8_t length) {
    std::lock_guard lock(mu_);
    if (active_) {
        RPMA_LOG_ERROR("cannot accept an outgoing connection");
        return EINVAL;
    }
    if (length > wire::kMaxPrivateData || (length > 0 && private_data == nullptr)) {
        RPMA_LOG_ERROR("cannot accept: private data of %u bytes (at most %zu)", length,
                       wire::kMaxPrivateData);
        return EINVAL;
    }
    if (request_failed_) {
        RPMA_LOG_ERROR("cannot accept the connection from %s: the peer gave up on it",
                       peer_.c_str());
        Emit(CmEventType::kConnectError);
        return 0;
    }
    if (state_ != State::kRequestQueued) {
        RPMA_LOG_ERROR("cannot accept: the connection is %s, not a pending request",
                       StateName(state_));
        return EINVAL;
    }
    if (!has_qp_) {
        RPMA_LOG_ERROR("cannot accept: create the queue pair first");
        return EINVAL;
    }
    PushHandshake(wire::Opcode::kAccept, private_data, length);
    state_ = State::kAwaitingRtu;
    ArmTimer(TimerPurpose::kHandshake, kPassiveHandshakeTimeoutMs);
    AfterProgress();
    return 0;
}

int Connection::Reject() {
    std::lock_guard lock(mu_);
    if (active_) {
        RPMA_LOG_ERROR("cannot reject an outgoing connection");
        return EINVAL;
    }
    if (request_failed_)
        return 0;
    if (state_ != State::kRequestQueued) {
        RPMA_LOG_ERROR("cannot reject: the connection is %s, not a pending request",
                       StateName(state_));
        return EINVAL;
    }
    OutboundMessage reject;
    reject.header.opcode = wire::Opcode::kReject;
    out_.Push(std::move(reject));
    BeginClosing();
    AfterProgress();
    return 0;
}

int Connection::Disconnect() {
    std::lock_guard lock(mu_);
    switch (state_) {
        case State::kEstablished: {
            PushPendingAck();
            OutboundMessage goodbye;
            goodbye.header.opcode = wire::Opcode::kDisconnect;
            out_.Push(std::move(goodbye));
            sent_disconnect_ = true;
            state_ = State::kDisconnecting;
            ArmTimer(TimerPurpose::kLinger, kDisconnectTimeoutMs);
            break;
        }
        case State::kDisconnecting:
            break;
        case State::kConnecting:
        case State::kAwaitingReply:
        case State::kAwaitingRtu:
            sq_.FlushAll(IBV_WC_WR_FLUSH_ERR);
            FlushReceives();
            Emit(CmEventType::kDisconnected);
            CloseNow();
            break;
        case State::kClosing:
        case State::kClosed:
            // Already broken or closed; confirm it so a caller waiting for
            // the disconnected event does not hang.
            Emit(CmEventType::kDisconnected);
            break;
        case State::kIdle:
        case State::kAwaitingRequest:
        case State::kRequestQueued:
            RPMA_LOG_ERROR("cannot disconnect: the connection is %s", StateName(state_));
            return EINVAL;
    }
    AfterProgress();
    return 0;
}

void Connection::Abandon() {
    std::lock_guard lock(mu_);
    switch (state_) {
        case State::kRequestQueued: {
            // rdma_destroy_id on an unanswered request rejects it.
            OutboundMessage reject;
            reject.header.opcode = wire::Opcode::kReject;
            out_.Push(std::move(reject));
            BeginClosing();
            break;
        }
        case State::kConnecting:
        case State::kAwaitingReply:
        case State::kAwaitingRequest:
        case State::kAwaitingRtu:
        case State::kEstablished:
            sq_.FlushAll(IBV_WC_WR_FLUSH_ERR);
            FlushReceives();
            CloseNow();
            break;
        case State::kDisconnecting:
        case State::kClosing:
            // Finishes on its own, bounded by the linger timer.
            break;
        case State::kIdle:
        case State::kClosed:
            break;
    }
    AfterProgress();
}

void Connection::OnConnectRequest() {
    wire::HandshakePrefix prefix;
    if (!wire::ParseHandshakePrefix(in_.small.data(), in_.payload_length, &prefix)) {
        if (!wire::HasMagic(in_.small.data(), in_.payload_length))
            return ProtocolError("a connection request of another protocol");
        // rpma of another version: tell it, so that it reports REJECTED.
        RPMA_LOG_NOTICE_RATELIMITED(
            "rejecting the connection request from %s: another version of rpma", peer_.c_str());
        OutboundMessage reject;
        reject.header.opcode = wire::Opcode::kReject;
        out_.Push(std::move(reject));
        BeginClosing();
        return;
    }
    peer_send_queue_depth_ = ClampPeerDepth(prefix.send_queue_depth);
    request_private_data_.assign(in_.small.data() + wire::kHandshakePrefixSize,
                                 in_.small.data() + in_.payload_length);
    state_ = State::kRequestQueued;
    DisarmTimer(TimerPurpose::kHandshake);
    std::shared_ptr<RequestQueue> requests = requests_.lock();
    if (requests == nullptr || !requests->Offer(shared_from_this())) {
        RPMA_LOG_NOTICE("rejecting the connection request from %s: the listener is closed",
                        peer_.c_str());
        OutboundMessage reject;
        reject.header.opcode = wire::Opcode::kReject;
        out_.Push(std::move(reject));
        BeginClosing();
    }
}

void Connection::OnAccept() {
    wire::HandshakePrefix prefix;
    if (!wire::ParseHandshakePrefix(in_.small.data(), in_.payload_length, &prefix))
        return ProtocolError("it answered with another protocol or version");
    peer_send_queue_depth_ = ClampPeerDepth(prefix.send_queue_depth);
    state_ = State::kEstablished;
    DisarmTimer(TimerPurpose::kConnect);
    OutboundMessage ready;
    ready.header.opcode = wire::Opcode::kReadyToUse;
    out_.Push(std::move(ready));
    Emit(CmEventType::kEstablished,
         std::vector<uint8_t>(in_.small.data() + wire::kHandshakePrefixSize,
                              in_.small.data() + in_.payload_length));
}

// ---------------------------------------------------------------------------
// Reading and executing.

void Connection::ReadInbound(bool drained) {
    if (reader_busy_)
        return;  // WaitDirect has the socket; it reads on return
    posted_since_read_ = false;
    size_t budget = kReadBudgetBytes;
    // A read that came back short emptied the socket: another would only
    // say EAGAIN, and whoever watches the socket hears of the next bytes.
    while (ReadingEnabled()) {
        if (stage_begin_ < stage_end_) {
            ConsumeStaged();
            continue;
        }
        stage_begin_ = stage_end_ = 0;
        if (drained || budget == 0)
            return;
        const bool direct = in_.phase == Inbound::Phase::kPayload &&
                            in_.payload_length - in_.payload_received >= kDirectPayloadBytes;
        if (!(direct ? ReadPayloadDirect(&budget, &drained) : FillStage(&budget, &drained)))
            return;
    }
}

bool Connection::ConsumeReadResult(ssize_t result) {
    if (result > 0)
        return true;
    if (result == 0) {
        OnPeerGone(0);
        return false;
    }
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
        return false;
    OnPeerGone(errno);
    return false;
}

bool Connection::FillStage(size_t *budget, bool *drained) {
    EnsureStage();
    const ssize_t got = SocketRecv(socket_.Get(), stage_.get(), kStageSize, MSG_DONTWAIT);
    if (!ConsumeReadResult(got))
        return false;
    stage_end_ = static_cast<size_t>(got);
    *budget -= std::min(*budget, stage_end_);
    *drained = stage_end_ < kStageSize;
    return true;
}

void Connection::ConsumeStaged() {
    const uint8_t *data = stage_.get() + stage_begin_;
    const size_t available = stage_end_ - stage_begin_;
    if (in_.phase == Inbound::Phase::kPayload) {
        const size_t length = std::min(available, in_.payload_length - in_.payload_received);
        if (!CopyPayload(data, length))
            return;
        stage_begin_ += length;
        in_.payload_received += length;
        if (in_.payload_received == in_.payload_length) {
            in_.phase = Inbound::Phase::kHeader;
            OnPayloadComplete();
        }
        return;
    }
    const size_t length = std::min(available, wire::kHeaderSize - in_.header_received);
    memcpy(in_.header_bytes + in_.header_received, data, length);
    stage_begin_ += length;
    in_.header_received += length;
    if (in_.header_received < wire::kHeaderSize) {
        // Rare (a header split across reads): before the handshake, the
        // first bytes may already show that the peer is not rpma.
        if (!IsLive() && !PlausibleHandshake()) [[unlikely]]
            return ProtocolError("not an rpma handshake");
        return;
    }
    in_.header_received = 0;
    wire::Header header;
    const wire::ParseError error = wire::ParseHeader(in_.header_bytes, &header);
    if (error != wire::ParseError::kNone)
        return ProtocolError(wire::ParseErrorString(error));
    in_.header = header;
    OnHeader();
}

bool Connection::DestinationWindow(size_t length, iovec *iov, int *count) const {
    size_t skip = in_.payload_received;
    *count = 0;
    for (const MemorySegment &segment : in_.Destination()) {
        if (length == 0)
            break;
        if (skip >= segment.length) {
            skip -= segment.length;
            continue;
        }
        if (segment.region->Revoked())
            return false;
        const size_t part = std::min(segment.length - skip, length);
        iov[*count].iov_base = segment.addr + skip;
        iov[*count].iov_len = part;
        ++*count;
        length -= part;
        skip = 0;
    }
    return true;
}

bool Connection::CopyPayload(const uint8_t *data, size_t length) {
    if (in_.Destination().empty()) {
        if (!in_.discard)
            memcpy(in_.small.data() + in_.payload_received, data, length);
        return true;
    }
    iovec iov[kMaxSge];
    int count = 0;
    if (!DestinationWindow(length, iov, &count)) {
        OnPayloadRevoked();
        return false;
    }
    for (int i = 0; i < count; ++i) {
        memcpy(iov[i].iov_base, data, iov[i].iov_len);
        data += iov[i].iov_len;
    }
    return true;
}

void Connection::OnPayloadRevoked() {
    if (wire::IsRequest(in_.header.opcode)) {
        RejectRequest(IBV_WC_REM_ACCESS_ERR, "the target memory region was deregistered");
    } else {
        RPMA_LOG_ERROR(
            "the destination of a READ was deregistered while the READ was in "
            "flight");
        Fail(IBV_WC_LOC_PROT_ERR, /*send_nothing=*/true);
    }
}

ssize_t Connection::ReceivePayloadDirect(bool *revoked) {
    // The payload's destination, then room in the stage for the next header
    // only: a large payload is usually followed by another, whose bytes
    // should go straight to their destination too, not through the stage.
    iovec iov[kMaxSge + 1];
    int count = 0;
    if (!DestinationWindow(in_.payload_length - in_.payload_received, iov, &count)) {
        *revoked = true;
        return -1;
    }
    EnsureStage();
    iov[count].iov_base = stage_.get();
    iov[count].iov_len = wire::kHeaderSize;
    ++count;
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = static_cast<size_t>(count);
    return SocketRecvMsg(socket_.Get(), &msg, MSG_DONTWAIT);
}

bool Connection::ReadPayloadDirect(size_t *budget, bool *drained) {
    if (in_.discard)
        return FillStage(budget, drained);
    const size_t remaining = in_.payload_length - in_.payload_received;
    bool revoked = false;
    const ssize_t got = ReceivePayloadDirect(&revoked);
    if (revoked) {
        OnPayloadRevoked();
        return false;
    }
    if (!ConsumeReadResult(got))
        return false;
    const auto total = static_cast<size_t>(got);
    const size_t to_payload = std::min(total, remaining);
    in_.payload_received += to_payload;
    stage_begin_ = 0;
    stage_end_ = total - to_payload;
    *budget -= std::min(*budget, total);
    *drained = total < remaining + wire::kHeaderSize;
    if (in_.payload_received == in_.payload_length) {
        in_.phase = Inbound::Phase::kHeader;
        OnPayloadComplete();
    }
    return true;
}

void Connection::BeginPayload(size_t length) {
    if (in_.Destination().empty() && length > in_.small.size() && !in_.discard)
        return ProtocolError("payload without a destination");
    in_.payload_length = length;
    in_.payload_received = 0;
    if (length == 0) {
        in_.phase = Inbound::Phase::kHeader;
        OnPayloadComplete();
    } else {
        in_.phase = Inbound::Phase::kPayload;
    }
}

void Connection::OnHeader() {
    const wire::Header &header = in_.header;
    in_.destination.clear();
    in_.into_receive = false;
    switch (header.opcode) {
        case wire::Opcode::kConnectRequest:
            if (active_ || state_ != State::kAwaitingRequest)
                return ProtocolError("unexpected CONNECT_REQUEST");
            return BeginPayload(header.length);
        case wire::Opcode::kAccept:
            if (!active_ || state_ != State::kAwaitingReply)
                return ProtocolError("unexpected ACCEPT");
            return BeginPayload(header.length);
        case wire::Opcode::kReject:
            if (!active_ || state_ != State::kAwaitingReply)
                return ProtocolError("unexpected REJECT");
            RPMA_LOG_NOTICE("%s rejected the connection request", peer_.c_str());
            Emit(CmEventType::kRejected);
            return CloseNow();
        case wire::Opcode::kReadyToUse:
            if (active_ || state_ != State::kAwaitingRtu)
                return ProtocolError("unexpected READY_TO_USE");
            state_ = State::kEstablished;
            DisarmTimer(TimerPurpose::kHandshake);
            return Emit(CmEventType::kEstablished);
        case wire::Opcode::kDisconnect:
            return OnDisconnectMessage();
        case wire::Opcode::kAck:
            return OnAck(header.sequence);
        case wire::Opcode::kNak:
            return OnNak(header);
        case wire::Opcode::kReadResponse:
            return OnReadResponseHeader(header);
        case wire::Opcode::kAckRequest:
            if (!IsLive())
                return ProtocolError("unexpected ACK_REQUEST");
            // Everything before it was applied; answered even when nothing
            // is new, as the peer may be asking whether we live.
            ack_requested_ = true;
            ack_forced_ = true;
            return;
        default:
            if (header.flags & wire::kCarriesAck) {
                OnAck(header.remote_addr);
                if (!IsLive())
                    return;
            }
            return OnRequestHeader();
    }
}

void Connection::OnRequestHeader() {
    const wire::Header &header = in_.header;
    if (!IsLive() || received_disconnect_)
        return ProtocolError("request outside an established connection");
    if (header.sequence != expected_sequence_)
        return ProtocolError("request out of sequence");
    MemorySegment segment;
    RemoteCheck check = RemoteCheck::kOk;
    switch (header.opcode) {
        case wire::Opcode::kWrite:
        case wire::Opcode::kWriteWithImm:
            check = deps_.memory->ResolveRemote(header.rkey, header.remote_addr, header.length,
                                                qp_.pd_id, IBV_ACCESS_REMOTE_WRITE, &segment,
                                                &remote_regions_);
            if (check != RemoteCheck::kOk)
                return RejectRequest(IBV_WC_REM_ACCESS_ERR, RemoteCheckString(check));
            if (header.opcode == wire::Opcode::kWriteWithImm && !AcquireReceive())
                return;
            if (segment.length > 0)
                in_.destination.push_back(std::move(segment));
            return BeginPayload(header.length);
        case wire::Opcode::kReadRequest: {
            check = deps_.memory->ResolveRemote(header.rkey, header.remote_addr, header.length,
                                                qp_.pd_id, IBV_ACCESS_REMOTE_READ, &segment,
                                                &remote_regions_);
            if (check != RemoteCheck::kOk)
                return RejectRequest(IBV_WC_REM_ACCESS_ERR, RemoteCheckString(check));
            // An honest peer cannot have more READs outstanding than its send
            // queue holds; more would let it grow our queue without bound.
            if (out_.PendingResponses() >= peer_send_queue_depth_)
                return ProtocolError("more outstanding READs than the peer's send queue depth");
            OutboundMessage response;
            response.header.opcode = wire::Opcode::kReadResponse;
            response.header.length = header.length;
            response.header.sequence = header.sequence;
            if (segment.length > 0) {
                segment.Own();  // read when the queue gets to it
                response.segments.push_back(std::move(segment));
            }
            out_.Push(std::move(response));
            return CompleteRequest();
        }
        case wire::Opcode::kAtomicWrite:
            check = deps_.memory->ResolveRemote(header.rkey, header.remote_addr, header.length,
                                                qp_.pd_id, IBV_ACCESS_REMOTE_WRITE, &segment,
                                                &remote_regions_);
            if (check != RemoteCheck::kOk)
                return RejectRequest(IBV_WC_REM_ACCESS_ERR, RemoteCheckString(check));
            if (header.remote_addr % wire::kAtomicWriteSize != 0)
                return RejectRequest(IBV_WC_REM_INV_REQ_ERR,
                                     "atomic write to an address not aligned to 8 bytes");
            in_.atomic_target = std::move(segment);
            return BeginPayload(header.length);
        case wire::Opcode::kFlush: {
            check = deps_.memory->ResolveRemote(header.rkey, header.remote_addr, header.length,
                                                qp_.pd_id, IBV_ACCESS_REMOTE_READ, &segment,
                                                &remote_regions_);
            if (check != RemoteCheck::kOk)
                return RejectRequest(IBV_WC_REM_ACCESS_ERR, RemoteCheckString(check));
            if ((header.flags & ~wire::kAckRequested) == wire::kFlushPersistent)
                return PersistForFlush(std::move(segment));
            return CompleteRequest();
        }
        case wire::Opcode::kSend:
        case wire::Opcode::kSendWithImm:
            if (!AcquireReceive())
                return;
            if (!in_.receive.buffers_valid) {
                CompleteReceive(IBV_WC_LOC_PROT_ERR, IBV_WC_RECV, 0, false);
                return RejectRequest(IBV_WC_REM_OP_ERR, "the receive buffer is not registered");
            }
            if (header.length > in_.receive.capacity) {
                RPMA_LOG_ERROR("a %u-byte message does not fit the %llu-byte receive buffer",
                               header.length,
                               static_cast<unsigned long long>(in_.receive.capacity));
                CompleteReceive(IBV_WC_LOC_LEN_ERR, IBV_WC_RECV, 0, false);
                return RejectRequest(IBV_WC_REM_INV_REQ_ERR,
                                     "message larger than the posted receive");
            }
            in_.into_receive = true;
            return BeginPayload(header.length);
        default:
            return ProtocolError("unexpected opcode");
    }
}

void Connection::PersistForFlush(MemorySegment &&segment) {
    const bool large = segment.length > PersistWorkers::kInlineBytes &&
                       segment.region->persist_plan().MsyncBytes(segment.addr, segment.length) >
                           PersistWorkers::kInlineBytes;
    if (!large || deps_.persist_workers == nullptr) {
        if (const int err = Persist(segment); err != 0)
            return OnPersistFailed(err);
        return CompleteRequest();
    }
    // Stop reading until the range is durable (the requests behind the
    // FLUSH stay in order); meanwhile the looks at the peer tell it that we
    // live. The worker owns a reference to the region; deregistration waits
    // for its persist (Region::PersistUnlocked).
    in_.phase = Inbound::Phase::kPersisting;
    WatchPeer();
    segment.Own();
    deps_.persist_workers->Submit([weak = weak_from_this(), segment = std::move(segment)] {
        const int err = segment.region->PersistUnlocked(segment.addr, segment.length);
        if (const std::shared_ptr<Connection> connection = weak.lock())
            connection->OnPersisted(err);
    });
}

void Connection::OnPersisted(int error) {
    std::lock_guard lock(mu_);
    if (in_.phase != Inbound::Phase::kPersisting || !socket_.Valid())
        return;  // the connection broke meanwhile
    in_.phase = Inbound::Phase::kHeader;
    if (error != 0)
        OnPersistFailed(error);
    else
        CompleteRequest();
    if (ReadingEnabled())
        ReadInbound();
    AfterProgress();
}

void Connection::OnPersistFailed(int error) {
    if (error == EFAULT)
        return RejectRequest(IBV_WC_REM_ACCESS_ERR, "the memory region was deregistered");
    RPMA_LOG_ERROR("persistent flush of %#llx+%u failed: persist: %s",
                   static_cast<unsigned long long>(in_.header.remote_addr), in_.header.length,
                   strerror(error));
    RejectRequest(IBV_WC_REM_OP_ERR, "persist failed");
}

bool Connection::AcquireReceive() {
    if (in_.has_receive)
        return true;
    if (rq_ == nullptr) {
        RejectRequest(IBV_WC_REM_OP_ERR, "the queue pair is gone");
        return false;
    }
    if (rq_->PopOrWait(&in_.receive, *this)) {
        in_.has_receive = true;
        DisarmTimer(TimerPurpose::kReceiverNotReady);
        return true;
    }
    // Receiver not ready: leave the message in the socket (the peer's sends
    // back up behind it) until a receive is posted or the RNR bound expires.
    // Meanwhile the looks at the peer tell it that we live.
    in_.phase = Inbound::Phase::kWaitingForReceive;
    WatchPeer();
    if (timer_purpose_ != TimerPurpose::kReceiverNotReady)
        ArmTimer(TimerPurpose::kReceiverNotReady, deps_.rnr_timeout_ms->load());
    return false;
}

void Connection::ResumeReceiving() {
    std::lock_guard lock(mu_);
    if (in_.phase != Inbound::Phase::kWaitingForReceive || !socket_.Valid())
        return;
    in_.phase = Inbound::Phase::kHeader;
    OnRequestHeader();
    if (ReadingEnabled())
        ReadInbound();
    AfterProgress();
}

void Connection::OnPayloadComplete() {
    const wire::Header &header = in_.header;
    switch (header.opcode) {
        case wire::Opcode::kConnectRequest:
            return OnConnectRequest();
        case wire::Opcode::kAccept:
            return OnAccept();
        case wire::Opcode::kWrite:
            return CompleteRequest();
        case wire::Opcode::kWriteWithImm:
            CompleteReceive(IBV_WC_SUCCESS, IBV_WC_RECV_RDMA_WITH_IMM, header.length, true);
            return CompleteRequest();
        case wire::Opcode::kSend:
            CompleteReceive(IBV_WC_SUCCESS, IBV_WC_RECV, header.length, false);
            return CompleteRequest();
        case wire::Opcode::kSendWithImm:
            CompleteReceive(IBV_WC_SUCCESS, IBV_WC_RECV, header.length, true);
            return CompleteRequest();
        case wire::Opcode::kAtomicWrite: {
            uint64_t value;
            memcpy(&value, in_.small.data(), sizeof(value));
            if (in_.atomic_target.region->Revoked())
                return RejectRequest(IBV_WC_REM_ACCESS_ERR, "the memory region was deregistered");
            std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t *>(in_.atomic_target.addr))
                .store(value);
            in_.atomic_target = {};
            return CompleteRequest();
        }
        case wire::Opcode::kReadResponse:
            in_.destination.clear();
            if (std::exchange(in_.discard, false))
                return;
            sq_.CompleteFront(IBV_WC_SUCCESS);
            return FailOnFrontLocalError();
        default:
            return ProtocolError("unexpected payload");
    }
}

void Connection::CompleteRequest() {
    applied_sequence_ = in_.header.sequence;
    if (in_.header.flags & wire::kAckRequested)
        ack_requested_ = true;
    ++expected_sequence_;
    in_.destination.clear();
}

void Connection::CompleteReceive(ibv_wc_status status, ibv_wc_opcode opcode, uint32_t byte_len,
                                 bool with_imm) {
    if (!in_.has_receive)
        return;
    ibv_wc wc{};
    wc.wr_id = in_.receive.wr_id;
    wc.status = status;
    wc.opcode = opcode;
    wc.byte_len = byte_len;
    if (with_imm) {
        wc.imm_data = in_.header.imm;
        wc.wc_flags = IBV_WC_WITH_IMM;
    }
    const bool delivered = SendQueue::Complete(qp_.recv_cq, qp_.qp_num, wc);
    in_.has_receive = false;
    ReleaseReceive();
    // An error completion is lost on a connection that breaks anyway.
    if (!delivered && status == IBV_WC_SUCCESS) [[unlikely]]
        OnCompletionLost();
}

void Connection::ReleaseReceive() {
    if (in_.into_receive && in_.phase == Inbound::Phase::kPayload) {
        // Its payload is still arriving (flushed early, or the QP went):
        // the rest goes where it was going.
        in_.destination = std::move(in_.receive.segments);
    }
    in_.into_receive = false;
    in_.receive.segments.clear();
}

void Connection::OnAck(uint64_t sequence) {
    if (!IsLive())
        return ProtocolError("unexpected ACK");
    if (!sq_.Acknowledge(sequence))
        return ProtocolError("ACK for a request that was never sent or not yet answered");
    FailOnFrontLocalError();
}

void Connection::OnNak(const wire::Header &header) {
    if (!IsLive())
        return ProtocolError("unexpected NAK");
    if (!sq_.CompleteBefore(header.sequence))
        return ProtocolError("NAK for a request that is not outstanding");
    const ibv_wc_status status =
        IsNakStatus(header.rkey) ? static_cast<ibv_wc_status>(header.rkey) : IBV_WC_REM_OP_ERR;
    RPMA_LOG_ERROR("%s refused request %llu: %s; the connection is broken", peer_.c_str(),
                   static_cast<unsigned long long>(header.sequence), ibv_wc_status_str(status));
    Fail(status, /*send_nothing=*/true);
}

void Connection::OnReadResponseHeader(const wire::Header &header) {
    if (!IsLive())
        return ProtocolError("unexpected READ_RESPONSE");
    if (!has_qp_) {
        // The application destroyed the QP while its READs were in flight.
        in_.discard = true;
        return BeginPayload(header.length);
    }
    if (!sq_.CompleteBefore(header.sequence))
        return ProtocolError("READ_RESPONSE for a request that is not outstanding");
    PendingWr *read = sq_.Front();
    if (!read->is_read || read->byte_len != header.length)
        return ProtocolError("READ_RESPONSE does not match the READ");
    in_.destination = read->read_destination;
    BeginPayload(header.length);
}

void Connection::OnDisconnectMessage() {
    if (!IsLive() || received_disconnect_)
        return ProtocolError("unexpected DISCONNECT");
    received_disconnect_ = true;
    PushPendingAck();
    if (!sent_disconnect_) {
        OutboundMessage goodbye;
        goodbye.header.opcode = wire::Opcode::kDisconnect;
        out_.Push(std::move(goodbye));
        sent_disconnect_ = true;
        state_ = State::kDisconnecting;
        ArmTimer(TimerPurpose::kLinger, kDisconnectTimeoutMs);
    }
}

// ---------------------------------------------------------------------------
// Posting.

int Connection::CheckCanPost() const {
    if (!has_qp_) {
        RPMA_LOG_ERROR("the queue pair was destroyed");
        return EINVAL;
    }
    switch (state_) {
        case State::kEstablished:
        case State::kDisconnecting:
        case State::kClosing:
        case State::kClosed:
            return 0;  // PostRequest flushes what can no longer be sent
        default:
            RPMA_LOG_ERROR("cannot post: the connection is %s, not yet established",
                           StateName(state_));
            return ENOTCONN;
    }
}

int Connection::PostSend(const ibv_send_wr &wr) {
    std::lock_guard lock(mu_);
    if (const int err = CheckCanPost(); err != 0)
        return err;
    PendingWr pending;
    OutboundMessage message;
    switch (wr.opcode) {
        case IBV_WR_RDMA_WRITE:
            message.header.opcode = wire::Opcode::kWrite;
            pending.opcode = IBV_WC_RDMA_WRITE;
            break;
        case IBV_WR_RDMA_WRITE_WITH_IMM:
            message.header.opcode = wire::Opcode::kWriteWithImm;
            pending.opcode = IBV_WC_RDMA_WRITE;
            break;
        case IBV_WR_RDMA_READ:
            message.header.opcode = wire::Opcode::kReadRequest;
            pending.opcode = IBV_WC_RDMA_READ;
            pending.is_read = true;
            break;
        case IBV_WR_SEND:
            message.header.opcode = wire::Opcode::kSend;
            pending.opcode = IBV_WC_SEND;
            break;
        case IBV_WR_SEND_WITH_IMM:
            message.header.opcode = wire::Opcode::kSendWithImm;
            pending.opcode = IBV_WC_SEND;
            break;
        default:
            RPMA_LOG_ERROR("the tcp provider does not support work request opcode %d", wr.opcode);
            return EINVAL;
    }
    if (wr.num_sge < 0 || wr.num_sge > kMaxSge || (wr.num_sge > 0 && wr.sg_list == nullptr)) {
        RPMA_LOG_ERROR("cannot post a work request with %d gather entries (at most %d)", wr.num_sge,
                       kMaxSge);
        return EINVAL;
    }
    uint64_t total = 0;
    for (int i = 0; i < wr.num_sge; ++i)
        total += wr.sg_list[i].length;
    if (total > wire::kMaxMessageLength) {
        RPMA_LOG_ERROR("cannot post a %llu-byte work request (at most %llu bytes)",
                       static_cast<unsigned long long>(total),
                       static_cast<unsigned long long>(wire::kMaxMessageLength));
        return EINVAL;
    }
    const bool inline_data = (wr.send_flags & IBV_SEND_INLINE) && !pending.is_read;
    if (inline_data && total > kMaxInlineData) {
        RPMA_LOG_ERROR("cannot post %llu bytes inline (at most %u)",
                       static_cast<unsigned long long>(total), kMaxInlineData);
        return EINVAL;
    }
    if (sq_.Full()) {
        RPMA_LOG_ERROR("cannot post: all %u send queue slots are in use (wait for completions)",
                       qp_.sq_size);
        return ENOMEM;
    }

    pending.wr_id = wr.wr_id;
    pending.signaled = (wr.send_flags & IBV_SEND_SIGNALED) != 0;
    pending.byte_len = static_cast<uint32_t>(total);
    for (int i = 0; i < wr.num_sge; ++i) {
        const ibv_sge &sge = wr.sg_list[i];
        if (sge.length == 0)
            continue;
        if (inline_data) {
            // Inline data is copied now, as verbs does; its lkey is ignored.
            memcpy(message.inline_payload.data() + message.inline_length,
                   reinterpret_cast<const void *>(static_cast<uintptr_t>(sge.addr)), sge.length);
            message.inline_length += sge.length;
            continue;
        }
        MemorySegment segment;
        const int access = pending.is_read ? IBV_ACCESS_LOCAL_WRITE : 0;
        if (!deps_.memory->ResolveLocal(sge, qp_.pd_id, access, &segment, &local_regions_)) {
            RPMA_LOG_ERROR(
                "local buffer %#llx+%u is not inside a memory region with lkey %#x%s; "
                "the work request completes with IBV_WC_LOC_PROT_ERR",
                static_cast<unsigned long long>(sge.addr), sge.length, sge.lkey,
                pending.is_read ? " and local write access" : "");
            pending.local_error = IBV_WC_LOC_PROT_ERR;
            break;
        }
        if (pending.is_read)
            segment.Own();  // written when the response comes
        (pending.is_read ? pending.read_destination : message.segments)
            .push_back(std::move(segment));
    }
    message.header.length = static_cast<uint32_t>(total);
    if (wr.opcode != IBV_WR_SEND && wr.opcode != IBV_WR_SEND_WITH_IMM) {
        message.header.remote_addr = wr.wr.rdma.remote_addr;
        message.header.rkey = wr.wr.rdma.rkey;
    }
    if (wr.opcode == IBV_WR_RDMA_WRITE_WITH_IMM || wr.opcode == IBV_WR_SEND_WITH_IMM)
        message.header.imm = wr.imm_data;
    return PostRequest(std::move(pending), std::move(message));
}

int Connection::PostFlush(uint64_t remote_addr, uint32_t rkey, size_t length, FlushType type,
                          bool signaled, uint64_t wr_id) {
    std::lock_guard lock(mu_);
    if (const int err = CheckCanPost(); err != 0)
        return err;
    if (length > wire::kMaxMessageLength) {
        RPMA_LOG_ERROR("cannot flush %zu bytes at once (at most %llu)", length,
                       static_cast<unsigned long long>(wire::kMaxMessageLength));
        return EINVAL;
    }
    if (sq_.Full()) {
        RPMA_LOG_ERROR("cannot post a flush: all %u send queue slots are in use", qp_.sq_size);
        return ENOMEM;
    }
    PendingWr pending;
    pending.wr_id = wr_id;
    pending.opcode = IBV_WC_RDMA_READ;  // as librpma's APM flush reports it
    pending.signaled = signaled;
    OutboundMessage message;
    message.header.opcode = wire::Opcode::kFlush;
    message.header.flags =
        type == FlushType::kPersistent ? wire::kFlushPersistent : wire::kFlushVisibility;
    message.header.length = static_cast<uint32_t>(length);
    message.header.remote_addr = remote_addr;
    message.header.rkey = rkey;
    return PostRequest(std::move(pending), std::move(message));
}

int Connection::PostAtomicWrite(uint64_t remote_addr, uint32_t rkey, const char value[8],
                                bool signaled, uint64_t wr_id) {
    std::lock_guard lock(mu_);
    if (const int err = CheckCanPost(); err != 0)
        return err;
    if (value == nullptr) {
        RPMA_LOG_ERROR("cannot post an atomic write without a value");
        return EINVAL;
    }
    if (sq_.Full()) {
        RPMA_LOG_ERROR("cannot post an atomic write: all %u send queue slots are in use",
                       qp_.sq_size);
        return ENOMEM;
    }
    PendingWr pending;
    pending.wr_id = wr_id;
    pending.opcode = IBV_WC_RDMA_WRITE;
    pending.signaled = signaled;
    pending.byte_len = wire::kAtomicWriteSize;
    OutboundMessage message;
    message.header.opcode = wire::Opcode::kAtomicWrite;
    message.header.length = wire::kAtomicWriteSize;
    message.header.remote_addr = remote_addr;
    message.header.rkey = rkey;
    memcpy(message.inline_payload.data(), value, wire::kAtomicWriteSize);
    message.inline_length = wire::kAtomicWriteSize;
    return PostRequest(std::move(pending), std::move(message));
}

int Connection::PostRequest(PendingWr &&wr, OutboundMessage &&message) {
    if (state_ != State::kEstablished) {
        // As a QP in the error state: a work request posted after the
        // connection broke or began to disconnect is accepted and completes
        // with IBV_WC_WR_FLUSH_ERR (signaled or not), after everything
        // posted before it.
        wr.signaled = true;
        if (state_ == State::kDisconnecting) {
            // Never sent, so never acknowledged: FinishDisconnect flushes it
            // behind the earlier ones.
            sq_.Push(std::move(wr));
        } else {
            ibv_wc wc{};
            wc.wr_id = wr.wr_id;
            wc.status = IBV_WC_WR_FLUSH_ERR;
            wc.opcode = wr.opcode;
            SendQueue::Complete(qp_.send_cq, qp_.qp_num, wc);
        }
        return 0;
    }
    // Ask for an immediate acknowledgement when the application will see a
    // completion, or when half the send queue would otherwise wait for one;
    // a READ's response answers for everything before it.
    const bool request_ack =
        wr.signaled || ++unrequested_acks_ >= std::max<uint32_t>(1, qp_.sq_size / 2);
    if (request_ack || wr.is_read)
        unrequested_acks_ = 0;
    if (request_ack && !wr.is_read)
        message.header.flags |= wire::kAckRequested;
    WatchPeer();
    const bool may_wait_for_doorbell =
        !request_ack && !wr.is_read && wr.local_error == IBV_WC_SUCCESS;
    const bool nothing_in_flight = sq_.Empty();
    const bool first_unsent = wr.local_error != IBV_WC_SUCCESS && !sq_.ErrorPending();
    const uint64_t sequence = sq_.Push(std::move(wr));
    if (sequence != 0) {
        message.header.sequence = sequence;
        // Only the answer to this very request can be awaited: it is a
        // round trip away. (With earlier requests in flight, their answers
        // may be in already: a pipelining poller keeps reading.)
        posted_since_read_ = posted_since_read_ || nothing_in_flight;
        // A SEND goes at once: it is what a peer answers, and what follows
        // it is usually a wait for that answer, not another request to batch.
        if ((!may_wait_for_doorbell || wire::IsSend(message.header.opcode)) &&
            SendAtOnce(message)) {
            LetPollSkip();
            return 0;
        }
        Enqueue(std::move(message));
    } else if (first_unsent && !nothing_in_flight) {
        // This request fails once it is at the front, behind requests sent
        // without asking for an ACK: ask for it now (a NIC would fail it
        // when it gets to it, whatever the acknowledgements).
        OutboundMessage ask;
        ask.header.opcode = wire::Opcode::kAckRequest;
        out_.Push(std::move(ask));
    }
    FailOnFrontLocalError();
    if (may_wait_for_doorbell && sequence != 0 && WaitForDoorbell()) {
        if (qp_.send_cq != nullptr)
            qp_.send_cq->CancelSkip();  // the next poll rings it
        return 0;
    }
    AfterProgress();
    LetPollSkip();
    return 0;
}

void Connection::LetPollSkip() {
    // Everything is sent and only the answer to what was just posted can
    // be awaited: a poll has nothing to do here, and the CQ can tell it so
    // without it taking this lock.
    if (posted_since_read_ && out_.Empty() && qp_.send_cq != nullptr &&
        qp_.send_cq->SkipNextDrive())
        posted_since_read_ = false;
}

void Connection::Enqueue(OutboundMessage &&message) {
    for (MemorySegment &segment : message.segments)
        segment.Own();  // sent later, whatever the cache holds then
    out_.Push(std::move(message));
}

bool Connection::SendAckAtOnce() {
    if (applied_sequence_ <= acknowledged_sequence_ && !ack_forced_) {
        ack_requested_ = false;
        return true;  // nothing to acknowledge
    }
    const wire::EncodedHeader encoded = wire::EncodeHeader(wire::AckHeader(applied_sequence_));
    const ssize_t sent =
        SocketSend(socket_.Get(), encoded.data(), encoded.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (sent <= 0)
        return false;  // queued instead; the queue's flush reports a failure
    ack_requested_ = false;
    ack_forced_ = false;
    acknowledged_sequence_ = applied_sequence_;
    if (static_cast<size_t>(sent) < encoded.size()) {
        out_.PushAck(applied_sequence_);
        out_.MarkSent(static_cast<size_t>(sent));
    }
    return true;
}

bool Connection::SendAtOnce(OutboundMessage &message) {
    if (!out_.Empty() || !socket_.Valid() || write_shut_down_ || doorbell_pending_)
        return false;
    size_t payload = message.inline_length;
    for (const MemorySegment &segment : message.segments) {
        if (segment.region->Revoked())
            return false;  // the queue's flush reports it
        payload += segment.length;
    }
    // The pending ACK rides along: in a SEND's own header, or in front.
    const bool ack = applied_sequence_ > acknowledged_sequence_;
    const bool ack_in_header = ack && wire::IsSend(message.header.opcode);
    if (ack_in_header) {
        message.header.flags |= wire::kCarriesAck;
        message.header.remote_addr = applied_sequence_;
    }
    wire::EncodedHeader ack_header;
    if (ack && !ack_in_header)
        ack_header = wire::EncodeHeader(wire::AckHeader(applied_sequence_));
    const size_t ack_bytes = ack && !ack_in_header ? ack_header.size() : 0;
    const wire::EncodedHeader header = wire::EncodeHeader(message.header);
    const size_t length = ack_bytes + header.size() + payload;
    ssize_t sent;
    if (length <= OutboundQueue::kSmallSendBytes) {
        // One buffer: a plain send costs the kernel less than an iovec array.
        uint8_t bytes[OutboundQueue::kSmallSendBytes];
        size_t at = 0;
        const auto append = [&](const void *data, size_t size) {
            memcpy(bytes + at, data, size);
            at += size;
        };
        append(ack_header.data(), ack_bytes);
        append(header.data(), header.size());
        append(message.inline_payload.data(), message.inline_length);
        for (const MemorySegment &segment : message.segments)
            append(segment.addr, segment.length);
        sent = SocketSend(socket_.Get(), bytes, at, MSG_NOSIGNAL | MSG_DONTWAIT);
    } else {
        // Zero copy: the payload goes from registered memory.
        iovec iov[kMaxSge + 3];
        int count = 0;
        const auto add = [&](const void *data, size_t size) {
            if (size != 0)
                iov[count++] = iovec{const_cast<void *>(data), size};
        };
        add(ack_header.data(), ack_bytes);
        add(header.data(), header.size());
        add(message.inline_payload.data(), message.inline_length);
        for (const MemorySegment &segment : message.segments)
            add(segment.addr, segment.length);
        msghdr msg{};
        msg.msg_iov = iov;
        msg.msg_iovlen = static_cast<size_t>(count);
        sent = SocketSendMsg(socket_.Get(), &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    }
    if (ack) {
        acknowledged_sequence_ = applied_sequence_;
        ack_requested_ = false;
        ack_forced_ = false;
    }
    if (sent == static_cast<ssize_t>(length))
        return true;
    // The socket took part or nothing (or failed: the queue's flush, which
    // AfterProgress runs, reports it): the rest goes through the queue.
    if (ack_bytes != 0)
        out_.PushAck(applied_sequence_);
    Enqueue(std::move(message));
    out_.MarkSent(sent > 0 ? static_cast<size_t>(sent) : 0);
    AfterProgress();
    return true;
}

bool Connection::WaitForDoorbell() {
    // Only in the linger after an inline wait: the application drives this
    // connection itself and its next post, wait or poll sends this along
    // (one sendmsg, e.g. a WRITE with the FLUSH after it). The engine's
    // deadline bounds the delay if it does not come back.
    if (!Lingering() || !IsLive())
        return false;
    if (!doorbell_pending_ && out_.Size() > 1)
        return false;  // the socket did not take the queue; EPOLLOUT is on it
    if (out_.QueuedBytes() > kDoorbellBatchBytes)
        return false;
    if (!doorbell_pending_) {
        // The lease's deadline (at most a linger away) rings it at the latest.
        doorbell_pending_ = true;
        doorbell_by_ = lease_until_;
    }
    return true;
}

void Connection::FailOnFrontLocalError() {
    const ibv_wc_status status = sq_.FrontLocalError();
    if (status == IBV_WC_SUCCESS)
        return;
    if (sq_.CompletionLost())
        return OnCompletionLost();
    Fail(status, /*send_nothing=*/true);
}

void Connection::OnCompletionLost() {
    RPMA_LOG_ERROR(
        "a completion of the connection to %s did not fit its completion queue; the "
        "queue pair enters the error state and the connection breaks",
        peer_.c_str());
    Fail(IBV_WC_WR_FLUSH_ERR, /*send_nothing=*/true);
}

int Connection::PostRecv(const ibv_recv_wr &wr) {
    std::lock_guard lock(mu_);
    if (!has_qp_) {
        RPMA_LOG_ERROR("the queue pair was destroyed");
        return EINVAL;
    }
    if (qp_.srq != nullptr) {
        RPMA_LOG_ERROR(
            "this queue pair takes its receives from a shared receive queue; post "
            "them there");
        return EINVAL;
    }
    if (state_ == State::kClosing || state_ == State::kClosed) {
        // A QP in the error state flushes new receives right away.
        ibv_wc wc{};
        wc.wr_id = wr.wr_id;
        wc.status = IBV_WC_WR_FLUSH_ERR;
        wc.opcode = IBV_WC_RECV;
        SendQueue::Complete(qp_.recv_cq, qp_.qp_num, wc);
        return 0;
    }
    return rq_->Post(wr, &local_regions_);  // a private receive queue
}

// ---------------------------------------------------------------------------
// Ending.

bool Connection::IsLive() const {
    return state_ == State::kEstablished || state_ == State::kDisconnecting;
}

void Connection::RejectRequest(ibv_wc_status status, const char *why) {
    if (state_ == State::kClosing || state_ == State::kClosed)
        return;
    RPMA_LOG_ERROR_RATELIMITED(
        "refusing %s request %llu from %s (rkey %#x, address %#llx, length %u): %s; "
        "breaking the connection",
        wire::OpcodeName(in_.header.opcode), static_cast<unsigned long long>(in_.header.sequence),
        peer_.c_str(), in_.header.rkey, static_cast<unsigned long long>(in_.header.remote_addr),
        in_.header.length, why);
    PushPendingAck();
    OutboundMessage nak;
    nak.header.opcode = wire::Opcode::kNak;
    nak.header.sequence = in_.header.sequence;
    nak.header.rkey = status;
    out_.Push(std::move(nak));
    Fail(IBV_WC_WR_FLUSH_ERR, /*send_nothing=*/false);
}

void Connection::Fail(ibv_wc_status first_status, bool send_nothing) {
    switch (state_) {
        case State::kClosing:
        case State::kClosed:
            return;
        case State::kAwaitingRequest:
            CloseNow();
            return;
        case State::kRequestQueued:
            request_failed_ = true;
            CloseNow();
            return;
        default:
            break;
    }
    sq_.FlushAll(first_status);
    FlushReceives();
    Emit(CmEventType::kConnectError);
    if (send_nothing) {
        CloseNow();
    } else {
        BeginClosing();
    }
}

void Connection::ProtocolError(const char *why) {
    if (state_ == State::kAwaitingRequest || state_ == State::kAwaitingReply)
        return NotAnRpmaPeer(why);
    RPMA_LOG_ERROR_RATELIMITED(
        "protocol violation by %s (%s, last header %s, connection %s); breaking the "
        "connection",
        peer_.c_str(), why, wire::OpcodeName(in_.header.opcode), StateName(state_));
    Fail(IBV_WC_RETRY_EXC_ERR, /*send_nothing=*/true);
}

void Connection::NotAnRpmaPeer(const char *why) {
    if (active_) {
        RPMA_LOG_ERROR(
            "%s is not an rpma server (%s); the connection is rejected (check the "
            "address and port)",
            peer_.c_str(), why);
        Emit(CmEventType::kRejected);
    } else {
        // A stranger knocking (a scanner, a misdirected client): one quiet
        // line, nothing allocated for it survives.
        RPMA_LOG_INFO_RATELIMITED("%s is not an rpma client (%s); closing its connection",
                                  peer_.c_str(), why);
    }
    CloseNow();
}

bool Connection::PlausibleHandshake() const {
    if (state_ == State::kAwaitingRequest)
        return wire::CouldStartHandshake(in_.header_bytes, in_.header_received,
                                         wire::Opcode::kConnectRequest,
                                         wire::Opcode::kConnectRequest);
    if (state_ == State::kAwaitingReply)
        return wire::CouldStartHandshake(in_.header_bytes, in_.header_received,
                                         wire::Opcode::kAccept, wire::Opcode::kReject);
    return true;
}

void Connection::OnPeerGone(int error) {
    const char *reason = error != 0 ? strerror(error) : "end of stream";
    switch (state_) {
        case State::kDisconnecting:
            FinishDisconnect();
            return;
        case State::kClosing:
            CloseNow();
            return;
        case State::kIdle:
        case State::kClosed:
            return;
        case State::kAwaitingRequest:
            RPMA_LOG_INFO_RATELIMITED("%s closed the connection before sending a request (%s)",
                                      peer_.c_str(), reason);
            CloseNow();
            return;
        case State::kRequestQueued:
            RPMA_LOG_NOTICE_RATELIMITED("%s withdrew its connection request (%s)", peer_.c_str(),
                                        reason);
            request_failed_ = true;
            CloseNow();
            return;
        case State::kAwaitingReply:
            // Whatever accepted the TCP connection closed it instead of
            // answering: as good as a refusal.
            return NotAnRpmaPeer(reason);
        case State::kConnecting:
        case State::kAwaitingRtu:
            RPMA_LOG_ERROR_RATELIMITED("connection to %s failed during the handshake (%s)",
                                       peer_.c_str(), reason);
            break;
        case State::kEstablished:
            RPMA_LOG_ERROR_RATELIMITED("connection to %s lost: %s without a disconnect",
                                       peer_.c_str(), reason);
            break;
    }
    Fail(IBV_WC_RETRY_EXC_ERR, /*send_nothing=*/true);
}

void Connection::FinishDisconnect() {
    sq_.FlushAll(IBV_WC_WR_FLUSH_ERR);
    FlushReceives();
    Emit(CmEventType::kDisconnected);
    CloseNow();
}

void Connection::FlushReceives() {
    CompleteReceive(IBV_WC_WR_FLUSH_ERR, IBV_WC_RECV, 0, false);
    if (private_rq_ == nullptr)
        return;
    for (const PostedReceive &receive : private_rq_->TakeAll()) {
        ibv_wc wc{};
        wc.wr_id = receive.wr_id;
        wc.status = IBV_WC_WR_FLUSH_ERR;
        wc.opcode = IBV_WC_RECV;
        SendQueue::Complete(qp_.recv_cq, qp_.qp_num, wc);
    }
}

void Connection::BeginClosing() {
    state_ = State::kClosing;
    stage_begin_ = stage_end_ = 0;
    in_.phase = Inbound::Phase::kHeader;
    in_.destination.clear();
    in_.atomic_target = {};
    ArmTimer(TimerPurpose::kLinger, kClosingLingerMs);
}

void Connection::CloseNow() {
    DetachSocket();
    if (timer_.Valid()) {
        deps_.engine->Remove(timer_token_, timer_.Get());
        timer_.Reset();
    }
    timer_purpose_ = TimerPurpose::kNone;
    watching_peer_ = false;
    stage_begin_ = stage_end_ = 0;
    in_.destination.clear();
    in_.atomic_target = {};
    state_ = State::kClosed;
}

void Connection::Emit(CmEventType type, std::vector<uint8_t> private_data) {
    if (type == CmEventType::kDisconnected) {
        if (disconnected_event_sent_)
            return;
        disconnected_event_sent_ = true;
        final_event_sent_ = true;
    } else if (type != CmEventType::kEstablished) {
        if (final_event_sent_)
            return;
        final_event_sent_ = true;
    }
    CmEvent event;
    event.type = type;
    event.private_data = std::move(private_data);
    events_.Push(std::move(event));
}

}  // namespace rpma::provider::tcp
