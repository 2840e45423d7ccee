#include "rpma_core/src/provider/tcp/tcp_completion_channel.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/epoll.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "rpma_core/src/log.h"
#include "rpma_core/src/provider/tcp/tcp_completion_channel_handle.h"
#include "rpma_core/src/provider/tcp/tcp_completion_queue.h"
#include "rpma_core/src/provider/tcp/tcp_connection.h"
#include "rpma_core/src/provider/tcp/tcp_unique_fd.h"

namespace rpma::provider::tcp {
namespace {

// Set while a thread drives progress inline for a channel: the first CQ of
// that channel firing in this thread is handed to it directly instead of
// going through the eventfd.
struct Catcher {
    const CompletionChannel *channel = nullptr;
    CompletionQueue *caught = nullptr;
};
thread_local Catcher *tls_catcher = nullptr;

bool IsNonBlocking(int fd) {
    const int flags = fcntl(fd, F_GETFL);
    return flags >= 0 && (flags & O_NONBLOCK) != 0;
}

struct InlineWait {
    std::shared_ptr<Connection> connection;
    bool muted = false;
    int fd = -1;  // the socket to watch this round, or -1
    uint64_t token = 0;
    int slot = -1;  // index in the pollfd array (poll fallback), or -1
};

// A waiting thread's epoll set: the eventfd of the channel it waits on
// (data 0) and the sockets of the connections it drives (data: the socket's
// token, unique for the process's life). Registrations outlive a wait, so a
// wait normally makes no epoll_ctl at all. Sockets are added only under their
// connection's lock (the fd is open then) and never removed by fd number
// (which may belong to another file by then): when a socket leaves the set,
// or an event names a socket nobody waits on, the set is rebuilt. The set is
// also rebuilt when the thread waits on another channel.
class InlinePoller final : public InlineWatcher {
  public:
    // False when no epoll set can be had (then poll() serves).
    bool Use(const CompletionChannel *channel, uint64_t channel_id, int channel_fd) {
        if (channel == channel_ && channel_id == channel_id_ && epoll_.Valid() && !stale_)
            return true;
        channel_ = nullptr;
        stale_ = false;
        watched_.clear();
        epoll_.Reset(epoll_create1(EPOLL_CLOEXEC));
        if (!epoll_.Valid())
            return false;
        epoll_event event{};
        event.events = EPOLLIN;
        event.data.u64 = 0;
        if (epoll_ctl(epoll_.Get(), EPOLL_CTL_ADD, channel_fd, &event) != 0) {
            epoll_.Reset();
            return false;
        }
        channel_ = channel;
        channel_id_ = channel_id;
        return true;
    }

    bool Watching(uint64_t token) const override {
        return std::find(watched_.begin(), watched_.end(), token) != watched_.end();
    }
    void Watch(int fd, uint64_t token) override {
        epoll_event event{};
        event.events = EPOLLIN;
        event.data.u64 = token;
        if (epoll_ctl(epoll_.Get(), EPOLL_CTL_ADD, fd, &event) != 0 && errno == EEXIST)
            epoll_ctl(epoll_.Get(), EPOLL_CTL_MOD, fd, &event);
        watched_.push_back(token);
    }

    // True when the set watches a socket no current wait drives: it must be
    // rebuilt (Use) and the current sockets handed to it again.
    bool HasStrays(const std::vector<InlineWait> &waits) const {
        return std::any_of(watched_.begin(), watched_.end(), [&](uint64_t token) {
            return std::none_of(waits.begin(), waits.end(),
                                [&](const InlineWait &w) { return w.fd >= 0 && w.token == token; });
        });
    }
    void MarkStale() { stale_ = true; }
    // Drops the set's sockets (the next Use rebuilds it): a socket left in
    // an epoll set costs a callback on every packet it receives.
    void ForgetSockets() {
        if (!watched_.empty()) {
            epoll_.Reset();
            watched_.clear();
        }
    }

    int Wait(epoll_event *events, int max, int timeout_ms) {
        return epoll_wait(epoll_.Get(), events, max, timeout_ms);
    }

  private:
    UniqueFd epoll_;
    const CompletionChannel *channel_ = nullptr;
    uint64_t channel_id_ = 0;
    bool stale_ = false;
    std::vector<uint64_t> watched_;
};

}  // namespace

int CompletionChannel::Create(std::unique_ptr<provider::CompletionChannel> *channel) {
    auto created = std::make_shared<CompletionChannel>();
    if (!created->fired_.Valid()) {
        const int err = errno;
        RPMA_LOG_ERROR("cannot create a completion channel: eventfd failed: %s", strerror(err));
        return err;
    }
    *channel = std::make_unique<CompletionChannelHandle>(std::move(created));
    return 0;
}

int CompletionChannel::GetEvent(provider::CompletionQueue **cq) {
    CompletionQueue *fired = nullptr;
    if (const int err = TakeEvent(&fired); err != 0)
        return err;
    fired->NoteEventDelivered();
    *cq = fired;
    return 0;
}

int CompletionChannel::GetAckedEvent(provider::CompletionQueue **cq) {
    // Delivered and acknowledged at once: the CQ's event counts stay even.
    CompletionQueue *fired = nullptr;
    if (const int err = TakeEvent(&fired); err != 0)
        return err;
    *cq = fired;
    return 0;
}

int CompletionChannel::GetAckedEventWithin(provider::CompletionQueue **cq, int timeout_ms) {
    CompletionQueue *fired = nullptr;
    if (fired_.Pop(&fired) != 0) {
        if (timeout_ms == 0)
            return ETIMEDOUT;
        // Bounded, so O_NONBLOCK does not matter: nothing to check.
        if (const int err = WaitInline(&fired, /*checked=*/true, timeout_ms); err != 0)
            return err;
    }
    *cq = fired;
    return 0;
}

int CompletionChannel::TakeEvent(CompletionQueue **fired) {
    if (fired_.Pop(fired) == 0)
        return 0;
    // Last seen blocking: the wait starts without asking (WaitInline asks
    // before anything that could block for longer than a direct read).
    const bool seen_blocking = seen_blocking_.load(std::memory_order_relaxed);
    if (!seen_blocking && !StillBlocking())
        return EAGAIN;
    return WaitInline(fired, /*checked=*/!seen_blocking, /*timeout_ms=*/-1);
}

bool CompletionChannel::StillBlocking() {
    const bool blocking = !IsNonBlocking(Fd());
    seen_blocking_.store(blocking, std::memory_order_relaxed);
    return blocking;
}

int CompletionChannel::WaitInline(CompletionQueue **fired, bool checked, int timeout_ms) {
    // The deadline is taken when first needed, after a direct read that did
    // not bring the event: the wait that ends with its first read (the
    // common one) reads no clock (a clock read costs ~100 ns in some VMs).
    // The price is that the timeout counts from there, up to one direct
    // read late.
    Clock::time_point deadline;
    bool deadline_set = false;
    auto remaining = [&]() -> Clock::duration {
        const Clock::time_point now = Clock::now();
        if (!deadline_set) {
            deadline = now + std::chrono::milliseconds(timeout_ms);
            deadline_set = true;
        }
        return deadline - now;
    };
    // Reused per thread so a wait allocates nothing once warm. GetEvent is
    // never re-entered by the thread that runs it.
    thread_local std::vector<InlineWait> waits;
    thread_local std::vector<pollfd> fds;
    thread_local FeedersCache cache;
    const FeedersCache::Feeders &feeders = cache.Get(this, [this](FeedersCache::Feeders *out) {
        std::lock_guard lock(queues_mu_);
        for (CompletionQueue *cq : queues_)
            cq->CollectFeeders(out);
    });
    waits.clear();
    for (const auto &feeder : feeders) {
        if (std::shared_ptr<Connection> connection = feeder.lock())
            waits.push_back(InlineWait{std::move(connection)});
    }

    thread_local InlinePoller poller;
    bool use_epoll = poller.Use(this, id_, Fd());
    Catcher catcher{this, nullptr};
    int result = 0;
    // Waiting on one connection: a blocking recv on its socket is the wait
    // (until it times out once; then epoll serves the rest of this wait).
    bool direct = waits.size() == 1;
    for (;;) {
        if (direct) {
            tls_catcher = &catcher;
            const Connection::DirectRead read =
                waits[0].connection->WaitDirect(&waits[0].muted, &catcher.caught, fired_);
            tls_catcher = nullptr;
            if (catcher.caught != nullptr) {
                *fired = catcher.caught;
                break;
            }
            if (fired_.Pop(fired) == 0)
                break;
            if (timeout_ms >= 0 && remaining() <= Clock::duration::zero()) {
                result = ETIMEDOUT;
                break;
            }
            if (read == Connection::DirectRead::kRead) {
                poller.ForgetSockets();
                // Not the event yet: ask before the next direct read too.
                if (!checked) {
                    checked = true;
                    if (!StillBlocking()) {
                        result = EAGAIN;
                        break;
                    }
                }
                continue;
            }
            direct = false;
            use_epoll = poller.Use(this, id_, Fd());
        }
        if (!checked) {
            // About to block for as long as it takes: only if the
            // application still wants that.
            checked = true;
            if (!StillBlocking()) {
                result = EAGAIN;
                break;
            }
        }
        fds.clear();
        fds.push_back(pollfd{Fd(), POLLIN, 0});
        for (InlineWait &wait : waits) {
            const int fd = wait.connection->PrepareInlineWait(&wait.muted, &wait.token,
                                                              use_epoll ? &poller : nullptr);
            wait.fd = wait.muted ? fd : -1;
            wait.slot = -1;
            if (wait.fd >= 0) {
                wait.slot = static_cast<int>(fds.size());
                fds.push_back(pollfd{fd, POLLIN, 0});
            }
        }
        if (use_epoll && poller.HasStrays(waits)) {
            poller.MarkStale();
            use_epoll = poller.Use(this, id_, Fd());
            for (InlineWait &wait : waits) {
                if (use_epoll)
                    wait.connection->RewatchInline(wait.muted, &poller);
            }
        }
        int wait_ms = -1;
        if (timeout_ms >= 0) {
            const Clock::duration left = remaining();
            if (left <= Clock::duration::zero()) {
                result = ETIMEDOUT;
                break;
            }
            wait_ms = static_cast<int>(std::chrono::ceil<std::chrono::milliseconds>(left).count());
        }
        int ready;
        epoll_event events[8];
        if (use_epoll)
            ready = poller.Wait(events, 8, wait_ms);
        else
            ready = poll(fds.data(), fds.size(), wait_ms);
        if (ready < 0) {
            if (errno == EINTR)
                continue;
            result = errno;
            RPMA_LOG_ERROR("waiting for a completion event failed: %s: %s",
                           use_epoll ? "epoll_wait" : "poll", strerror(result));
            break;
        }
        if (use_epoll) {
            // An event for a socket nobody waits on (closed and replaced
            // meanwhile): rebuild the set before waiting again.
            for (int i = 0; i < ready; ++i) {
                const uint64_t token = events[i].data.u64;
                if (token != 0 &&
                    std::none_of(waits.begin(), waits.end(), [&](const InlineWait &w) {
                        return w.fd >= 0 && w.token == token;
                    }))
                    poller.MarkStale();
            }
        }
        tls_catcher = &catcher;
        for (InlineWait &wait : waits) {
            if (wait.fd < 0)
                continue;
            bool readable = false;
            if (use_epoll) {
                for (int i = 0; i < ready && !readable; ++i)
                    readable = events[i].data.u64 == wait.token;
            } else {
                readable = fds[wait.slot].revents != 0;
            }
            if (readable)
                wait.connection->DriveInbound(/*try_only=*/false);
        }
        tls_catcher = nullptr;
        if (catcher.caught != nullptr) {
            *fired = catcher.caught;
            break;
        }
        if (fired_.Pop(fired) == 0)
            break;
    }
    for (InlineWait &wait : waits)
        wait.connection->EndInlineWait(&wait.muted);
    // Drops the references here, not at the next wait.
    waits.clear();
    return result;
}

void CompletionChannel::AckEvents(provider::CompletionQueue *cq, unsigned int count) {
    // Only the tcp device makes CQs on a tcp channel (Device::CreateCq).
    if (cq != nullptr)
        static_cast<CompletionQueue *>(cq)->NoteEventsAcked(count);
}

void CompletionChannel::Fire(CompletionQueue *cq) {
    Catcher *catcher = tls_catcher;
    if (catcher != nullptr && catcher->channel == this && catcher->caught == nullptr) {
        // An event another thread queued since this wait began (the
        // progress thread completing a SEND from its ACK, say) fired first
        // and is handed over first; this one queues behind the rest. Events
        // of one connection are fired under its lock, which this thread
        // holds, so the queue shows all that fired before.
        CompletionQueue *earlier = nullptr;
        if (fired_.Pop(&earlier) == 0) {
            catcher->caught = earlier;
            fired_.Push(cq);
        } else {
            catcher->caught = cq;
        }
        return;
    }
    fired_.Push(cq);
}

void CompletionChannel::AddQueue(CompletionQueue *cq) {
    std::lock_guard lock(queues_mu_);
    queues_.push_back(cq);
    feeders_generation.fetch_add(1);
}

void CompletionChannel::RemoveQueue(CompletionQueue *cq) {
    std::lock_guard lock(queues_mu_);
    std::erase(queues_, cq);
    feeders_generation.fetch_add(1);
}

bool CompletionChannel::InUse() {
    std::lock_guard lock(queues_mu_);
    return !queues_.empty();
}

}  // namespace rpma::provider::tcp
