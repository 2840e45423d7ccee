#include "rpma_core/src/provider/tcp/tcp_progress_engine.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>

#include <cerrno>
#include <cstring>

#include "rpma_core/src/log.h"

namespace rpma::provider::tcp {
namespace {

constexpr uint64_t kWakeToken = 0;
constexpr int kMaxEventsPerWait = 64;

}  // namespace

ProgressEngine::ProgressEngine()
    : epoll_(epoll_create1(EPOLL_CLOEXEC)), wake_(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
    if (!epoll_.Valid() || !wake_.Valid()) {
        RPMA_LOG_ERROR("tcp provider: cannot create the progress engine's epoll/eventfd: %s",
                       strerror(errno));
        return;
    }
    epoll_event event{};
    event.events = EPOLLIN;
    event.data.u64 = kWakeToken;
    if (epoll_ctl(epoll_.Get(), EPOLL_CTL_ADD, wake_.Get(), &event) != 0) {
        RPMA_LOG_ERROR("tcp provider: cannot watch the progress engine's eventfd: %s",
                       strerror(errno));
        epoll_.Reset();
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
    if (epoll_ctl(epoll_.Get(), EPOLL_CTL_ADD, fd, &event) != 0) {
        const int err = errno;
        RPMA_LOG_ERROR("tcp provider: cannot watch fd %d: %s", fd, strerror(err));
        return err;
    }
    registrations_.emplace(new_token, Registration{fd, std::move(handler)});
    StartLocked();
    *token = new_token;
    return 0;
}

int ProgressEngine::Modify(uint64_t token, int fd, uint32_t events) {
    epoll_event event{};
    event.events = events;
    event.data.u64 = token;
    if (epoll_ctl(epoll_.Get(), EPOLL_CTL_MOD, fd, &event) != 0) {
        const int err = errno;
        RPMA_LOG_ERROR("tcp provider: cannot change the events watched on fd %d: %s", fd,
                       strerror(err));
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
                RPMA_LOG_ERROR("tcp provider: epoll_wait failed: %s", strerror(errno));
            continue;
        }
        for (int i = 0; i < n; ++i) {
            const uint64_t token = events[i].data.u64;
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
