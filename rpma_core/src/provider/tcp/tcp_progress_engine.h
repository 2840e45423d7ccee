// The provider's single progress thread: one epoll set over every socket,
// timer and wake-up fd of the process. It is what makes remote operations
// one-sided: the target application never calls into the provider for a
// WRITE, READ, ATOMIC_WRITE or FLUSH to be applied.
//
// Handlers run on the progress thread and must never block. A registered
// handler is kept alive by the engine until it is removed, so a connection
// abandoned by the application can finish sending its last message.
//
// Application threads drive connections themselves while they wait for
// completions (inline progress, see tcp_completion_channel.h); a connection
// then mutes its socket's EPOLLIN here and uses ScheduleDeadline to hand the
// socket back when nobody comes back to it.
#ifndef RPMA_CORE_SRC_PROVIDER_TCP_TCP_PROGRESS_ENGINE_H
#define RPMA_CORE_SRC_PROVIDER_TCP_TCP_PROGRESS_ENGINE_H

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "rpma_core/src/provider/tcp/tcp_unique_fd.h"

namespace rpma::provider::tcp {

class EventHandler {
  public:
    virtual ~EventHandler() = default;
    // `fd` is the registered fd the epoll events are for.
    virtual void OnEvents(int fd, uint32_t events) = 0;
};

class DeadlineHandler {
  public:
    virtual ~DeadlineHandler() = default;
    // Runs on the progress thread once a deadline the handler scheduled
    // has passed.
    virtual void OnDeadline() = 0;
};

// The earliest deadline a handler asked of the engine and has not yet seen
// pass. The engine keeps every deadline until it passes, so a handler that
// asked at every turn would pile them up: it asks again only for an earlier
// one. Kept under the handler's lock.
class PendingDeadline {
  public:
    using Clock = std::chrono::steady_clock;

    // True, and `at` recorded, when `at` is to be asked of the engine:
    // nothing pending runs by then (that one asks for what is left).
    bool Ask(Clock::time_point at) {
        if (pending_ && at_ <= at)
            return false;
        pending_ = true;
        at_ = at;
        return true;
    }
    // OnDeadline runs at `now`: the pending deadline passed if it was due.
    void Passed(Clock::time_point now) {
        if (pending_ && at_ <= now)
            pending_ = false;
    }
    bool Pending() const { return pending_; }

  private:
    bool pending_ = false;
    Clock::time_point at_;
};

class ProgressEngine {
  public:
    using Clock = std::chrono::steady_clock;

    ProgressEngine();
    ~ProgressEngine();
    ProgressEngine(const ProgressEngine &) = delete;
    ProgressEngine &operator=(const ProgressEngine &) = delete;

    // Watches `fd` for `events` (level-triggered). The token names the
    // registration; tokens are never reused, so a late event for a removed
    // fd cannot reach the handler of a new fd with the same number.
    // No events (0) leaves the fd out of the epoll set until a Modify asks
    // for some: a socket left in it costs a callback per packet.
    int Add(int fd, uint32_t events, std::shared_ptr<EventHandler> handler, uint64_t *token);
    // From the events watched now to `to`.
    int Modify(uint64_t token, int fd, uint32_t from, uint32_t to);
    // After Remove returns, no new event for `token` is dispatched; a
    // dispatch already running keeps its own reference to the handler.
    void Remove(uint64_t token, int fd);
    // Runs `task` on the progress thread.
    void Post(std::function<void()> task);
    // Calls handler->OnDeadline() on the progress thread at `deadline` (or
    // just after) unless the handler is gone by then. Cheap when an earlier
    // deadline is already pending: the engine's one timer is re-armed only
    // for an earlier deadline.
    void ScheduleDeadline(Clock::time_point deadline, std::weak_ptr<DeadlineHandler> handler);

  private:
    struct Registration {
        int fd = -1;
        std::shared_ptr<EventHandler> handler;
    };

    struct Deadline {
        Clock::time_point at;
        std::weak_ptr<DeadlineHandler> handler;
    };

    void StartLocked();
    void Wake();
    void Run();
    void RunTasks();
    void ArmTimerLocked(Clock::time_point at);
    void RunDeadlines();

    UniqueFd epoll_;
    UniqueFd wake_;
    UniqueFd timer_;
    std::vector<Deadline> deadlines_;
    bool timer_armed_ = false;
    Clock::time_point timer_at_;
    std::mutex mu_;
    std::unordered_map<uint64_t, Registration> registrations_;
    std::vector<std::function<void()>> tasks_;
    uint64_t next_token_ = 1;
    bool stopping_ = false;
    std::thread thread_;
};

}  // namespace rpma::provider::tcp

#endif  // RPMA_CORE_SRC_PROVIDER_TCP_TCP_PROGRESS_ENGINE_H
