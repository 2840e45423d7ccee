#include "rpma_core/src/provider/tcp/tcp_listener.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

#include "rpma_core/src/log.h"
#include "rpma_core/src/provider/tcp/tcp_incoming_sockets.h"
#include "rpma_core/src/provider/tcp/tcp_request_queue.h"
#include "rpma_core/src/provider/tcp/tcp_socket.h"

namespace rpma::provider::tcp {
namespace {

using Clock = ProgressEngine::Clock;
using std::chrono::milliseconds;

// Bounded so a connection storm cannot monopolize the progress thread.
constexpr int kMaxAcceptsPerWakeup = 64;
// While accept fails for want of resources: the first pause, doubled on
// each failure up to the last.
constexpr milliseconds kFirstAcceptPause{10};
constexpr milliseconds kLongestAcceptPause{500};
// Besides its socket, a connection opens a timer and an event fd
// (tcp_connection.cc). The listener keeps that many in reserve, so that a
// request it accepted can become a connection when fds run short.
constexpr size_t kFdsPerConnection = 2;
// A request handed to a connection counts against max_pending until it
// reaches the queue, or for this long at most (a peer that resets its
// connection right after the request never gets there).
constexpr milliseconds kHandOverWindow{1000};

bool OutOfResources(int err) {
    return err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM;
}

// Errors of the connection being accepted, not of the listener: the next
// accept may succeed (accept(2), "Error handling").
bool ConnectionError(int err) {
    switch (err) {
        case EINTR:
        case ECONNABORTED:
        case EPROTO:
        case EPERM:
        case ENETDOWN:
        case ENOPROTOOPT:
        case EHOSTDOWN:
        case ENONET:
        case EHOSTUNREACH:
        case EOPNOTSUPP:
        case ENETUNREACH:
            return true;
        default:
            return false;
    }
}

// Why the oldest connection without a request was closed.
constexpr const char *kOutOfFds = "the process ran out of file descriptors";

long long Milliseconds(Clock::duration duration) {
    return std::chrono::duration_cast<milliseconds>(duration).count();
}

}  // namespace

// The listener's work on the progress thread: accepting, holding sockets
// until their requests arrive, handing them to connections, and queueing
// the requests for the application. Kept alive by the progress engine
// while registered.
class Acceptor final : public EventHandler,
                       public DeadlineHandler,
                       public std::enable_shared_from_this<Acceptor> {
  public:
    Acceptor(const ConnectionDeps &deps, const ListenerLimits &limits, UniqueFd socket)
        : deps_(deps),
          limits_(limits),
          port_(LocalPort(socket.Get())),
          socket_(std::move(socket)),
          incoming_(deps.engine),
          arrivals_(std::make_shared<RequestQueue>()) {}

    int Start() {
        std::lock_guard lock(mu_);
        if (!arrivals_->Valid() || !backlog_.Valid()) {
            // eventfd's errno may have been overwritten since.
            const int err = errno != 0 ? errno : EMFILE;
            RPMA_LOG_ERROR("cannot create the listener's event fds: %s", strerror(err));
            return err;
        }
        FillReserve();
        if (const int err =
                deps_.engine->Add(arrivals_->Fd(), EPOLLIN, shared_from_this(), &arrivals_token_);
            err != 0)
            return err;
        return deps_.engine->Add(socket_.Get(), EPOLLIN, shared_from_this(), &socket_token_);
    }

    // Stops accepting; returns the requests nobody will take, to be rejected.
    std::vector<std::shared_ptr<Connection>> Stop() {
        std::lock_guard lock(mu_);
        if (stopped_)
            return {};
        stopped_ = true;
        deps_.engine->Remove(socket_token_, socket_.Get());
        socket_.Reset();
        deps_.engine->Remove(arrivals_token_, arrivals_->Fd());
        for (IncomingSockets::Held &held : incoming_.TakeAll())
            RefuseConnection(std::move(held.socket));
        reserve_.clear();
        std::vector<std::shared_ptr<Connection>> unanswered;
        for (auto *queue : {arrivals_.get(), &backlog_}) {
            for (std::shared_ptr<Connection> &request : queue->Close())
                unanswered.push_back(std::move(request));
        }
        pending_.store(0);
        return unanswered;
    }

    uint16_t Port() const { return port_; }
    int RequestFd() const { return backlog_.Fd(); }

    int TakeRequest(std::shared_ptr<Connection> *request) {
        const int err = backlog_.Take(request);
        if (err == 0)
            pending_.fetch_sub(1);
        return err;
    }

    void OnEvents(int fd, uint32_t events) override {
        std::vector<std::shared_ptr<Connection>> refused;
        {
            std::lock_guard lock(mu_);
            if (stopped_)
                return;
            if (fd == socket_.Get())
                AcceptSome();
            else if (fd == arrivals_->Fd())
                QueueArrivals(&refused);
            else if (incoming_.Holds(fd))
                OnIncoming(fd, events);
            ScheduleDeadline();
        }
        // Outside the lock: nothing needs a connection's lock and ours at once.
        for (const std::shared_ptr<Connection> &request : refused)
            request->Reject();
    }

    void OnDeadline() override {
        std::lock_guard lock(mu_);
        if (stopped_)
            return;
        const Clock::time_point now = Clock::now();
        deadline_.Passed(now);
        if (paused_ && resume_at_ <= now &&
            deps_.engine->Modify(socket_token_, socket_.Get(), 0, EPOLLIN) == 0) {
            // Level-triggered: connections waiting show at once.
            paused_ = false;
        }
        for (IncomingSockets::Held &held : incoming_.TakeExpired(now)) {
            RPMA_LOG_INFO_RATELIMITED(
                "%s opened a connection but sent no connection request within %lld ms; "
                "closing it",
                held.peer.ToString().c_str(), Milliseconds(IncomingSockets::kHandshakeTimeout));
            RefuseConnection(std::move(held.socket));
        }
        ScheduleDeadline();
    }

  private:
    void AcceptSome() {
        for (int i = 0; i < kMaxAcceptsPerWakeup; ++i) {
            IncomingSockets::Held held;
            held.peer.length = sizeof(held.peer.storage);
            held.socket.Reset(accept4(socket_.Get(),
                                      reinterpret_cast<sockaddr *>(&held.peer.storage),
                                      &held.peer.length, SOCK_NONBLOCK | SOCK_CLOEXEC));
            if (!held.socket.Valid()) {
                const int err = errno;
                if (ConnectionError(err))
                    continue;
                if (err == EAGAIN || err == EWOULDBLOCK) {
                    pause_ = milliseconds(0);  // an episode of failures, if any, is over
                    return;
                }
                if (OutOfResources(err) && Reclaim(kOutOfFds))
                    continue;
                return PauseAccepting(err);
            }
            pause_ = milliseconds(0);
            held.accepted = Clock::now();
            if (SetNoDelay(held.socket.Get()) != 0)
                RPMA_LOG_WARNING_RATELIMITED("cannot set TCP_NODELAY on the connection from %s: %s",
                                             held.peer.ToString().c_str(), strerror(errno));
            // A client usually sends its request before we get to accept.
            const Arrival arrival = PeekArrival(held.socket.Get());
            OnArrival(arrival, std::move(held));
        }
    }

    void OnIncoming(int fd, uint32_t events) {
        Arrival arrival = PeekArrival(fd);
        if (arrival == Arrival::kNothingYet && (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)))
            arrival = Arrival::kGone;  // what it sent will never be a request
        if (arrival != Arrival::kNothingYet)
            OnArrival(arrival, incoming_.Take(fd));
    }

    // `held` is not in incoming_.
    void OnArrival(Arrival arrival, IncomingSockets::Held held) {
        switch (arrival) {
            case Arrival::kNothingYet: {
                if (incoming_.Size() >= limits_.max_handshaking)
                    Reclaim("RPMA_TCP_MAX_HANDSHAKING reached");
                const std::string peer = held.peer.ToString();
                if (const int err = incoming_.Add(std::move(held), shared_from_this()); err != 0)
                    RPMA_LOG_ERROR_RATELIMITED("cannot watch the connection from %s: %s",
                                               peer.c_str(), strerror(err));
                return;
            }
            case Arrival::kGone:
                RPMA_LOG_INFO_RATELIMITED("%s closed the connection before sending a request",
                                          held.peer.ToString().c_str());
                return;
            case Arrival::kRequest: {
                const Clock::time_point now = Clock::now();
                if (const size_t committed = Committed(now); committed >= limits_.max_pending) {
                    RPMA_LOG_NOTICE_RATELIMITED(
                        "refusing the connection request from %s: %zu requests wait for the "
                        "application already (RPMA_TCP_MAX_PENDING=%zu)",
                        held.peer.ToString().c_str(), committed, limits_.max_pending);
                    RefuseConnection(std::move(held.socket));
                    return;
                }
                in_transit_.push_back(now);
                return HandOver(std::move(held));
            }
            case Arrival::kOther:
                return HandOver(std::move(held));
        }
    }

    void HandOver(IncomingSockets::Held held) {
        const std::string peer = held.peer.ToString();
        if (!FillReserve()) {
            RPMA_LOG_ERROR_RATELIMITED(
                "cannot take the connection from %s: out of file descriptors (raise the "
                "open files limit)",
                peer.c_str());
            return RefuseConnection(std::move(held.socket));
        }
        reserve_.clear();  // their fds are the connection's now
        if (const int err = Connection::StartPassive(deps_, std::move(held.socket), arrivals_);
            err != 0)
            RPMA_LOG_ERROR_RATELIMITED("cannot take the connection from %s: %s", peer.c_str(),
                                       strerror(err));
        FillReserve();
    }

    // Closes the oldest connection that sent no request; false when none.
    bool Reclaim(const char *why) {
        if (incoming_.Empty())
            return false;
        IncomingSockets::Held oldest = incoming_.TakeOldest();
        RPMA_LOG_NOTICE_RATELIMITED(
            "closing the connection from %s, which sent no request in %lld ms, to make room (%s)",
            oldest.peer.ToString().c_str(), Milliseconds(Clock::now() - oldest.accepted), why);
        RefuseConnection(std::move(oldest.socket));
        return true;
    }

    // True when the reserve is full, closing the oldest connections that
    // sent no request if that is what it takes.
    bool FillReserve() {
        while (reserve_.size() < kFdsPerConnection) {
            UniqueFd fd(eventfd(0, EFD_CLOEXEC));
            if (fd.Valid()) {
                reserve_.push_back(std::move(fd));
            } else if (!OutOfResources(errno) || !Reclaim(kOutOfFds)) {
                return false;
            }
        }
        return true;
    }

    void PauseAccepting(int err) {
        const bool new_episode = pause_.count() == 0;
        pause_ = new_episode ? kFirstAcceptPause : std::min(pause_ * 2, kLongestAcceptPause);
        if (new_episode) {
            RPMA_LOG_WARNING_RATELIMITED(
                "cannot accept connections on port %u: %s; pausing accepts (%lld ms, then up to "
                "%lld ms) while that lasts%s",
                port_, strerror(err), static_cast<long long>(pause_.count()),
                static_cast<long long>(kLongestAcceptPause.count()),
                err == EMFILE || err == ENFILE
                    ? " (raise the open files limit, e.g. systemd's LimitNOFILE=, or lower "
                      "RPMA_TCP_MAX_PENDING and RPMA_TCP_MAX_HANDSHAKING)"
                    : "");
        }
        if (!paused_ && deps_.engine->Modify(socket_token_, socket_.Get(), EPOLLIN, 0) == 0)
            paused_ = true;
        resume_at_ = Clock::now() + pause_;
    }

    void QueueArrivals(std::vector<std::shared_ptr<Connection>> *refused) {
        std::shared_ptr<Connection> request;
        while (arrivals_->Take(&request) == 0) {
            if (!in_transit_.empty())
                in_transit_.pop_front();
            const size_t pending = pending_.load();
            if (pending >= limits_.max_pending) {
                RPMA_LOG_NOTICE_RATELIMITED(
                    "refusing a connection request: %zu requests wait for the application "
                    "already (RPMA_TCP_MAX_PENDING=%zu)",
                    pending, limits_.max_pending);
                refused->push_back(std::move(request));
                continue;
            }
            pending_.fetch_add(1);
            if (!backlog_.Offer(request)) {
                pending_.fetch_sub(1);
                refused->push_back(std::move(request));
            }
        }
    }

    // The requests queued for the application, and those on their way.
    size_t Committed(Clock::time_point now) {
        while (!in_transit_.empty() && in_transit_.front() + kHandOverWindow <= now)
            in_transit_.pop_front();
        return pending_.load() + in_transit_.size();
    }

    // Asks the engine for OnDeadline at the next resume or expiry, unless
    // an earlier call is due by then.
    void ScheduleDeadline() {
        bool wanted = false;
        Clock::time_point at;
        if (paused_) {
            wanted = true;
            at = resume_at_;
        }
        if (!incoming_.Empty() && (!wanted || incoming_.NextExpiry() < at)) {
            wanted = true;
            at = incoming_.NextExpiry();
        }
        if (wanted && deadline_.Ask(at))
            deps_.engine->ScheduleDeadline(at, weak_from_this());
    }

    const ConnectionDeps deps_;
    const ListenerLimits limits_;
    const uint16_t port_;

    std::mutex mu_;
    bool stopped_ = false;
    UniqueFd socket_;
    uint64_t socket_token_ = 0;
    // Accepting pauses (the socket out of the epoll set) until resume_at_;
    // pause_ is the current episode's pause, 0 outside one.
    bool paused_ = false;
    milliseconds pause_{0};
    Clock::time_point resume_at_;
    PendingDeadline deadline_;
    IncomingSockets incoming_;
    std::vector<UniqueFd> reserve_;

    // Connections offer their requests to arrivals_ (on the progress
    // thread); from there they go to backlog_, which the application reads,
    // while it holds fewer than max_pending (pending_).
    const std::shared_ptr<RequestQueue> arrivals_;
    uint64_t arrivals_token_ = 0;
    std::deque<Clock::time_point> in_transit_;  // handed over, not yet arrived
    RequestQueue backlog_;
    std::atomic<size_t> pending_{0};
};

int Listener::Create(const ConnectionDeps &connection_deps, const CmIdDeps &cm_id_deps,
                     const ListenerLimits &limits, const char *addr, const char *port,
                     std::unique_ptr<provider::Listener> *listener) {
    if (listener == nullptr)
        return EINVAL;
    std::vector<SocketAddress> addresses;
    if (const int err = ResolveAddresses(addr, port, /*passive=*/true, &addresses); err != 0)
        return err;
    UniqueFd socket;
    int err = EADDRNOTAVAIL;
    for (const SocketAddress &address : addresses) {
        if ((err = OpenStreamSocket(address.Family(), &socket)) != 0)
            continue;
        const int one = 1;
        setsockopt(socket.Get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if (bind(socket.Get(), address.Get(), address.length) == 0 &&
            listen(socket.Get(), SOMAXCONN) == 0) {
            err = 0;
            break;
        }
        err = errno;
        RPMA_LOG_ERROR("cannot listen on %s: %s", address.ToString().c_str(), strerror(err));
        socket.Reset();
    }
    if (err != 0)
        return err;

    auto acceptor = std::make_shared<Acceptor>(connection_deps, limits, std::move(socket));
    if ((err = acceptor->Start()) != 0) {
        acceptor->Stop();
        return err;
    }
    const uint16_t bound_port = acceptor->Port();
    *listener = std::make_unique<Listener>(cm_id_deps, std::move(acceptor), bound_port);
    return 0;
}

Listener::Listener(const CmIdDeps &cm_id_deps, std::shared_ptr<Acceptor> acceptor, uint16_t port)
    : cm_id_deps_(cm_id_deps), acceptor_(std::move(acceptor)), port_(port) {}

Listener::~Listener() {
    for (const std::shared_ptr<Connection> &request : acceptor_->Stop())
        request->Reject();
}

int Listener::Fd() const {
    return acceptor_->RequestFd();
}

int Listener::NextRequest(std::unique_ptr<provider::CmId> *id) {
    if (id == nullptr)
        return EINVAL;
    std::shared_ptr<Connection> request;
    if (const int err = acceptor_->TakeRequest(&request); err != 0)
        return err;
    *id = std::make_unique<CmId>(cm_id_deps_, std::move(request));
    return 0;
}

}  // namespace rpma::provider::tcp
