#include "daemon/event_loop.h"

#include <fcntl.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <future>
#include <string>

#include "daemon/log.h"

namespace rpmad {

Status SetNonBlocking(int fd) {
    const int flags = fcntl(fd, F_GETFL);
    if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0)
        return Status(StatusCode::kInternal,
                      std::string("making a descriptor non-blocking failed: ") + strerror(errno));
    return Status();
}

StatusOr<std::unique_ptr<EventLoop>> EventLoop::New() {
    std::unique_ptr<EventLoop> loop(new EventLoop());
    loop->epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
    loop->wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (loop->epoll_fd_ < 0 || loop->wake_fd_ < 0)
        return Status(StatusCode::kInternal,
                      std::string("setting up an event loop failed: ") + strerror(errno));
    loop->Watch(loop->wake_fd_, kWakeTag);
    return loop;
}

EventLoop::~EventLoop() {
    if (wake_fd_ >= 0)
        close(wake_fd_);
    if (epoll_fd_ >= 0)
        close(epoll_fd_);
}

void EventLoop::Watch(int fd, uint64_t tag) {
    epoll_event event{};
    event.events = EPOLLIN;
    event.data.u64 = tag;
    if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &event) != 0)
        Log().error("data plane: watching fd {} failed: {}", fd, strerror(errno));
}

void EventLoop::Unwatch(int fd) {
    epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
}

void EventLoop::Post(Command command) {
    {
        std::lock_guard lock(commands_mu_);
        commands_.push_back(std::move(command));
    }
    const uint64_t one = 1;
    if (write(wake_fd_, &one, sizeof(one)) != sizeof(one) && errno != EAGAIN)
        Log().error("data plane: waking the data-plane thread failed: {}", strerror(errno));
}

void EventLoop::Call(Command command) {
    std::promise<void> done;
    auto finished = done.get_future();
    Post([&command, &done] {
        command();
        done.set_value();
    });
    finished.wait();
}

bool EventLoop::Responsive(std::chrono::milliseconds timeout) {
    // Shared: a late answer must still find its promise.
    auto answered = std::make_shared<std::promise<void>>();
    auto future = answered->get_future();
    Post([answered] { answered->set_value(); });
    return future.wait_for(timeout) == std::future_status::ready;
}

Status EventLoop::Wait(int timeout_ms) {
    ready_count_ = epoll_wait(epoll_fd_, ready_, kMaxEvents, timeout_ms);
    if (ready_count_ >= 0)
        return Status();
    const int error = errno;
    ready_count_ = 0;
    if (error == EINTR)
        return Status();
    return Status(StatusCode::kInternal, std::string("epoll_wait failed: ") + strerror(error));
}

void EventLoop::Dispatch(const std::function<void(uint64_t tag)> &on_ready) {
    for (int i = 0; i < ready_count_; ++i) {
        const uint64_t tag = ready_[i].data.u64;
        if (tag == kWakeTag)
            RunCommands();
        else
            on_ready(tag);
    }
    ready_count_ = 0;
}

void EventLoop::RunCommands() {
    uint64_t count;
    while (read(wake_fd_, &count, sizeof(count)) == sizeof(count)) {
    }
    std::vector<Command> commands;
    {
        std::lock_guard lock(commands_mu_);
        commands.swap(commands_);
    }
    for (auto &command : commands)
        command();
}

}  // namespace rpmad
