#include "rpma_core/src/provider/tcp/tcp_progress_engine.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "rpma_core/src/log.h"

namespace rpma::provider::tcp {
namespace {

constexpr uint64_t kWakeToken = 0;
constexpr uint64_t kTimerToken = ~uint64_t{0};  // registration tokens count up from 1
constexpr int kMaxEventsPerWait = 64;

}  // namespace

ProgressEngine::ProgressEngine()
    : epoll_(epoll_create1(EPOLL_CLOEXEC)),
      wake_(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)),
      timer_(timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC)) {
    if (!epoll_.Valid() || !wake_.Valid() || !timer_.Valid()) {
        RPMA_LOG_ERROR(
            "tcp provider: cannot create the progress engine's epoll/eventfd/timerfd: %s",
            strerror(errno));
        epoll_.Reset();
        return;
    }
    for (const auto &[fd, token] :
         {std::pair{wake_.Get(), kWakeToken}, {timer_.Get(), kTimerToken}}) {
        epoll_event event{};
        event.events = EPOLLIN;
        event.data.u64 = token;
        if (epoll_ctl(epoll_.Get(), EPOLL_CTL_ADD, fd, &event) != 0) {
            RPMA_LOG_ERROR("tcp provider: cannot watch the progress engine's own fds: %s",
                           strerror(errno));
            epoll_.Reset();
            return;
        }
    }
}

ProgressEngine::~ProgressEngine() {
    {
        std::lock_guard lock(mu_);
        stopping_ = true;
    }
    Wake();
    if (thread_.joinable())
        thread_.join();
}

void ProgressEngine::StartLocked() {
    if (!thread_.joinable())
        thread_ = std::thread([this] { Run(); });
}

int ProgressEngine::Add(int fd, uint32_t events, std::shared_ptr<EventHandler> handler,
                        uint64_t *token) {
    if (!epoll_.Valid())
        return ENOMEM;
    std::lock_guard lock(mu_);
    const uint64_t new_token = next_token_++;
    epoll_event event{};
    event.events = events;
    event.data.u64 = new_token;
    if (events != 0 && epoll_ctl(epoll_.Get(), EPOLL_CTL_ADD, fd, &event) != 0) {
        const int err = errno;
        // Per connection: a flood of them must not flood the log.
        RPMA_LOG_ERROR_RATELIMITED("tcp provider: cannot watch fd %d: %s", fd, strerror(err));
        return err;
    }
    registrations_.emplace(new_token, Registration{fd, std::move(handler)});
    StartLocked();
    *token = new_token;
    return 0;
}

int ProgressEngine::Modify(uint64_t token, int fd, uint32_t from, uint32_t to) {
    epoll_event event{};
    event.events = to;
    event.data.u64 = token;
    // No events: out of the epoll set altogether (even a registration for
    // nothing costs a callback per packet, and reports HUP and ERR).
    const int op = to == 0 ? EPOLL_CTL_DEL : from == 0 ? EPOLL_CTL_ADD : EPOLL_CTL_MOD;
    if (epoll_ctl(epoll_.Get(), op, fd, &event) != 0) {
        const int err = errno;
        RPMA_LOG_ERROR_RATELIMITED("tcp provider: cannot change the events watched on fd %d: %s",
                                   fd, strerror(err));
        return err;
    }
    return 0;
}

void ProgressEngine::Remove(uint64_t token, int fd) {
    std::shared_ptr<EventHandler> released;
    {
        std::lock_guard lock(mu_);
        auto it = registrations_.find(token);
        if (it == registrations_.end())
            return;
        epoll_ctl(epoll_.Get(), EPOLL_CTL_DEL, fd, nullptr);
        // The handler may be the caller itself; let it go outside the lock.
        released = std::move(it->second.handler);
        registrations_.erase(it);
    }
}

void ProgressEngine::Post(std::function<void()> task) {
    {
        std::lock_guard lock(mu_);
        tasks_.push_back(std::move(task));
        StartLocked();
    }
    Wake();
}

void ProgressEngine::ScheduleDeadline(Clock::time_point deadline,
                                      std::weak_ptr<DeadlineHandler> handler) {
    if (!epoll_.Valid())
        return;
    std::lock_guard lock(mu_);
    deadlines_.push_back(Deadline{deadline, std::move(handler)});
    if (!timer_armed_ || deadline < timer_at_)
        ArmTimerLocked(deadline);
    StartLocked();
}

void ProgressEngine::ArmTimerLocked(Clock::time_point at) {
    const auto ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(at.time_since_epoch()).count();
    itimerspec spec{};
    // steady_clock is CLOCK_MONOTONIC; 0 would disarm.
    spec.it_value.tv_sec = static_cast<time_t>(ns / 1000000000);
    spec.it_value.tv_nsec = std::max<long>(static_cast<long>(ns % 1000000000), 1);
    timerfd_settime(timer_.Get(), TFD_TIMER_ABSTIME, &spec, nullptr);
    timer_armed_ = true;
    timer_at_ = at;
}

void ProgressEngine::RunDeadlines() {
    uint64_t expirations;
    [[maybe_unused]] ssize_t got = read(timer_.Get(), &expirations, sizeof(expirations));
    std::vector<std::shared_ptr<DeadlineHandler>> due;
    {
        std::lock_guard lock(mu_);
        const Clock::time_point now = Clock::now();
        timer_armed_ = false;
        // Not a move-to-front compaction: a std::weak_ptr moved onto itself
        // comes out empty (libstdc++), which lost the deadlines of live
        // handlers.
        std::erase_if(deadlines_, [&](const Deadline &deadline) {
            if (deadline.at > now)
                return false;
            if (auto alive = deadline.handler.lock())
                due.push_back(std::move(alive));
            return true;
        });
        if (!deadlines_.empty()) {
            const auto earliest =
                std::min_element(deadlines_.begin(), deadlines_.end(),
                                 [](const Deadline &a, const Deadline &b) { return a.at < b.at; });
            ArmTimerLocked(earliest->at);
        }
    }
    for (auto &handler : due)
        handler->OnDeadline();
}

void ProgressEngine::Wake() {
    const uint64_t one = 1;
    [[maybe_unused]] ssize_t written = write(wake_.Get(), &one, sizeof(one));
}

void ProgressEngine::RunTasks() {
    uint64_t count;
    [[maybe_unused]] ssize_t got = read(wake_.Get(), &count, sizeof(count));
    std::vector<std::function<void()>> tasks;
    {
        std::lock_guard lock(mu_);
        tasks.swap(tasks_);
    }
    for (auto &task : tasks)
        task();
}

void ProgressEngine::Run() {
    epoll_event events[kMaxEventsPerWait];
    for (;;) {
        const int n = epoll_wait(epoll_.Get(), events, kMaxEventsPerWait, -1);
        if (n < 0) {
            if (errno != EINTR)
                RPMA_LOG_ERROR_RATELIMITED("tcp provider: epoll_wait failed: %s", strerror(errno));
            continue;
        }
        for (int i = 0; i < n; ++i) {
            const uint64_t token = events[i].data.u64;
            if (token == kTimerToken) {
                RunDeadlines();
                continue;
            }
            if (token == kWakeToken) {
                RunTasks();
                std::lock_guard lock(mu_);
                if (stopping_)
                    return;
                continue;
            }
            Registration registration;
            {
                std::lock_guard lock(mu_);
                auto it = registrations_.find(token);
                if (it == registrations_.end())
                    continue;  // removed after epoll_wait returned
                registration = it->second;
            }
            registration.handler->OnEvents(registration.fd, events[i].events);
        }
    }
}

}  // namespace rpma::provider::tcp
