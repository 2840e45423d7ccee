// One thread's epoll loop: file descriptors named by tags, and commands
// other threads hand to that thread (Post, Call) through an eventfd.
#ifndef DAEMON_EVENT_LOOP_H
#define DAEMON_EVENT_LOOP_H

#include <sys/epoll.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "daemon/status.h"

namespace rpmad {

// O_NONBLOCK on `fd`, which an event loop watches: its reads must not block.
Status SetNonBlocking(int fd);

class EventLoop {
  public:
    using Command = std::function<void()>;

    static StatusOr<std::unique_ptr<EventLoop>> New();
    ~EventLoop();
    EventLoop(const EventLoop &) = delete;
    EventLoop &operator=(const EventLoop &) = delete;

    // Dispatch hands `tag` on when `fd` is readable. Tags are the caller's;
    // ~0 is the loop's own.
    void Watch(int fd, uint64_t tag);
    void Unwatch(int fd);

    // Queues `command` for the loop's thread (it runs in Dispatch).
    void Post(Command command);
    // Post, then waits until the command ran. Not from the loop's thread.
    void Call(Command command);
    // Whether the loop's thread runs a command within `timeout`.
    bool Responsive(std::chrono::milliseconds timeout);

    // Loop thread: waits up to `timeout_ms` (-1: no limit) for readiness.
    // An error other than EINTR is returned: the loop cannot go on.
    Status Wait(int timeout_ms);
    // Loop thread: hands each tag Wait found ready to `on_ready`, in order,
    // and runs the queued commands where the wake-up is among them.
    void Dispatch(const std::function<void(uint64_t tag)> &on_ready);

  private:
    static constexpr uint64_t kWakeTag = ~uint64_t{0};
    static constexpr int kMaxEvents = 64;

    EventLoop() = default;
    void RunCommands();

    int epoll_fd_ = -1;
    int wake_fd_ = -1;
    epoll_event ready_[kMaxEvents] = {};
    int ready_count_ = 0;
    std::mutex commands_mu_;
    std::vector<Command> commands_;
};

}  // namespace rpmad

#endif  // DAEMON_EVENT_LOOP_H
