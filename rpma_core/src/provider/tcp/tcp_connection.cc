// Connection (tcp_connection.h): its lifetime and plumbing — creation, the
// socket, the progress engine's events, what follows any
// progress (the pending ACK, sending, the epoll interest), binding a queue
// pair, and the ending (a failure, the peer gone, closing).
//
// The other parts, one idea each:
//   tcp_connection_handshake.cc  connect, accept, reject, disconnect, the
//                                handshake's messages, timeouts
//   tcp_connection_inbound.cc    dispatching what InboundReader framed
//   tcp_connection_target.cc     doing what the Target says of the peer's requests
//   tcp_connection_initiator.cc  posting work requests; doing what the
//                                Initiator says of the peer's answers
//   tcp_connection_inline.cc     inline progress in application threads
//   tcp_connection_deadlines.cc  the doorbell, the linger, liveness
//
// How a connection works (both directions, inline progress, ACKs,
// liveness, locking, its role objects): CONNECTION.md.
#include "rpma_core/src/provider/tcp/tcp_connection.h"

#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cassert>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <mutex>

#include "rpma_core/src/log.h"
#include "rpma_core/src/provider/tcp/tcp_completion_queue.h"
#include "rpma_core/src/provider/tcp/tcp_request_queue.h"

namespace rpma::provider::tcp {
namespace {

// How long a dead connection keeps trying to deliver its last NAK or REJECT.
constexpr int kClosingLingerMs = 1000;

}  // namespace

std::shared_ptr<Connection> Connection::CreateActive(const ConnectionDeps &deps,
                                                     std::vector<SocketAddress> addresses) {
    auto connection = std::make_shared<Connection>(deps, /*active=*/true);
    if (!connection->events_.Valid())
        return nullptr;
    deps.memory->AddUser(connection);
    connection->peer_ = addresses.empty() ? "" : addresses.front().ToString();
    connection->handshake_.SetAddresses(std::move(addresses));
    return connection;
}

int Connection::StartPassive(const ConnectionDeps &deps, UniqueFd socket,
                             std::weak_ptr<RequestQueue> requests) {
    auto connection = std::make_shared<Connection>(deps, /*active=*/false);
    if (!connection->events_.Valid())
        return EMFILE;  // its event fd: the process is out of file descriptors
    deps.memory->AddUser(connection);
    std::lock_guard lock(connection->mu_);
    SocketAddress peer;
    peer.length = sizeof(peer.storage);
    if (getpeername(socket.Get(), reinterpret_cast<sockaddr *>(&peer.storage), &peer.length) == 0)
        connection->peer_ = peer.ToString();
    connection->handshake_.SetRequests(std::move(requests));
    if (const int err = connection->timer_.Ensure(*deps.engine, connection); err != 0)
        return err;
    if (const int err = connection->AttachSocket(std::move(socket)); err != 0) {
        connection->CloseNow();
        return err;
    }
    connection->timer_.Arm(TimerPurpose::kHandshake, Handshake::kPassiveTimeoutMs);
    return 0;
}

Connection::Connection(const ConnectionDeps &deps, bool active)
    : deps_(deps),
      active_(active),
      state_(active ? State::kIdle : State::kAwaitingRequest),
      target_(deps.memory, this, &reader_.message(), &out_, &acks_, &handshake_,
              deps.persist_workers != nullptr) {}

int Connection::PeerAddress(sockaddr_storage *address) const {
    if (peer_address_.ss_family == AF_UNSPEC)
        return ENOTCONN;
    *address = peer_address_;
    return 0;
}

void Connection::MoveTo(State next) {
    assert(IsConnectionMove(state_, next) && "a move tcp_connection_state.h does not allow");
    state_ = next;
}

void Connection::Quiesce() {
    // Region memory is touched only under the lock (MemoryTable).
    std::lock_guard lock(mu_);
}

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
    inline_.Attached();
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
    inline_.Release(&socket_);
    interest_ = 0;
}

bool Connection::ReadingEnabled() const {
    if (!socket_.Valid() || target_.Holding())
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
    } else if (!inline_.lease().Muted()) {
        events |= EPOLLIN | EPOLLRDHUP;
    }
    // Otherwise a thread reading inline has the socket (or the linger after
    // it runs): the progress thread does not watch it at all, as a socket in
    // an epoll set costs a callback per packet even for events nobody asked
    // for. The reader sees a vanished peer itself; past the linger the
    // progress thread watches again and finds what happened meanwhile.
    // Messages waiting for their doorbell are not the progress thread's to
    // send (yet); EPOLLOUT is for a queue the socket did not take.
    if (state_ == State::kConnecting || (!out_.Empty() && !inline_.lease().DoorbellPending()))
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

// Sends what the socket takes now; the rest goes out on EPOLLOUT.
void Connection::FlushOutbound() {
    inline_.lease().DoorbellRung();
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

void Connection::AfterProgress() {
    if (!socket_.Valid())
        return;
    // Staged bytes wait for reading to be enabled again (after a handshake
    // step); nothing else would bring them back.
    if (reader_.StagedBytes() > 0 && ReadingEnabled())
        ReadInbound();
    if (!socket_.Valid())
        return;
    // An acknowledgement goes out when the peer asked for one, or rides
    // along with whatever else is about to be sent (one sendmsg).
    if (IsLive(state_) && !write_shut_down_)
        acks_.BeforeFlush(socket_.Get(), out_);
    FlushOutbound();
    if (!socket_.Valid())
        return;
    if (state_ == State::kClosing && out_.Empty()) {
        CloseNow();
        return;
    }
    // Both goodbyes exchanged and everything sent: end our half of the
    // stream; the peer's end of stream then completes the disconnect.
    if (state_ == State::kDisconnecting && handshake_.sent_disconnect() &&
        handshake_.peer_disconnected() && out_.Empty() && !write_shut_down_) {
        shutdown(socket_.Get(), SHUT_WR);
        write_shut_down_ = true;
    }
    UpdateInterest();
}

void Connection::OnEvents(int fd, uint32_t events) {
    std::lock_guard lock(mu_);
    if (timer_.Owns(fd)) {
        OnTimer(timer_.Fire());
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

int Connection::BindQp(const QueuePairBinding &binding) {
    std::lock_guard lock(mu_);
    if (has_qp_) {
        RPMA_LOG_ERROR("this connection already has a queue pair");
        return EINVAL;
    }
    qp_ = binding;
    has_qp_ = true;
    initiator_.Attach(binding.sq_size, binding.qp_num, binding.send_cq);
    if (binding.send_cq != nullptr)
        binding.send_cq->AddFeeder(shared_from_this());
    if (binding.recv_cq != nullptr && binding.recv_cq != binding.send_cq)
        binding.recv_cq->AddFeeder(shared_from_this());
    target_.Attach(binding, *deps_.engine);
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
    // A destroyed QP reports nothing more, like a verbs QP, and applies no
    // request of the peer (those that follow are dropped).
    const Target::Verdict dropping = target_.Detach();
    initiator_.Detach();
    if (in().phase == InboundMessage::Phase::kPayload &&
        in().header.opcode == wire::Opcode::kReadResponse) {
        in().destination.clear();
        in().discard = true;
    }
    has_qp_ = false;
    if (qp_.send_cq != nullptr)
        qp_.send_cq->RemoveFeeder(this);
    if (qp_.recv_cq != nullptr && qp_.recv_cq != qp_.send_cq)
        qp_.recv_cq->RemoveFeeder(this);
    qp_.handle = nullptr;
    qp_.send_cq = nullptr;
    qp_.recv_cq = nullptr;
    qp_.srq = nullptr;
    Act(dropping);
    AfterProgress();
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
            handshake_.RequestFailed();
            CloseNow();
            return;
        default:
            break;
    }
    initiator_.queue().FlushAll(first_status);
    target_.FlushReceives();
    events_.Emit(CmEventType::kConnectError);
    if (send_nothing) {
        CloseNow();
    } else {
        BeginClosing();
    }
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
            handshake_.RequestFailed();
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
    initiator_.queue().FlushAll(IBV_WC_WR_FLUSH_ERR);
    target_.FlushReceives();
    events_.Emit(CmEventType::kDisconnected);
    CloseNow();
}

// Stop reading, send what is queued (bounded by a timer), then close.
void Connection::BeginClosing() {
    MoveTo(State::kClosing);
    reader_.Reset();
    timer_.Arm(TimerPurpose::kLinger, kClosingLingerMs);
}

void Connection::CloseNow() {
    DetachSocket();
    timer_.Close(*deps_.engine);
    liveness_.Stop();
    reader_.Reset();
    MoveTo(State::kClosed);
}

}  // namespace rpma::provider::tcp
