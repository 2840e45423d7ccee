// A service manager's notification socket for rpmad under test: rpmad's
// sd_notify datagrams (READY=1, WATCHDOG=1, STOPPING=1) arrive here.
#ifndef TESTS_INTEGRATION_NOTIFY_SOCKET_H
#define TESTS_INTEGRATION_NOTIFY_SOCKET_H

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace rpma::testing {

class NotifySocket {
  public:
    // An abstract socket: the test's temporary path is longer than
    // sun_path. Random too: sandboxes have pid namespaces of their own but
    // share the abstract socket namespace, so two runs may have one pid.
    NotifySocket()
        : name_("rpmad-test-notify-" + std::to_string(getpid()) + "-" +
                std::to_string(std::random_device()())),
          fd_(socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)) {
        sockaddr_un address{};
        address.sun_family = AF_UNIX;
        std::memcpy(address.sun_path + 1, name_.data(), name_.size());
        const auto length =
            static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name_.size());
        bound_ = fd_ >= 0 && bind(fd_, reinterpret_cast<sockaddr *>(&address), length) == 0;
    }
    ~NotifySocket() {
        if (fd_ >= 0)
            close(fd_);
    }
    NotifySocket(const NotifySocket &) = delete;
    NotifySocket &operator=(const NotifySocket &) = delete;

    bool ok() const { return bound_; }
    // rpmad's environment: notify here, with a watchdog of `watchdog_usec`.
    std::vector<std::string> Env(int watchdog_usec) const {
        return {"NOTIFY_SOCKET=@" + name_, "WATCHDOG_USEC=" + std::to_string(watchdog_usec)};
    }
    // Reads datagrams until one contains `what`, for at most `timeout`.
    bool Await(const std::string &what,
               std::chrono::milliseconds timeout = std::chrono::seconds(5)) const {
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        for (auto now = std::chrono::steady_clock::now(); now < deadline;
             now = std::chrono::steady_clock::now()) {
            pollfd p{fd_, POLLIN, 0};
            const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - now);
            if (poll(&p, 1, static_cast<int>(left.count())) != 1)
                continue;
            char message[512];
            const ssize_t n = recv(fd_, message, sizeof(message) - 1, 0);
            if (n > 0 &&
                std::string(message, static_cast<size_t>(n)).find(what) != std::string::npos)
                return true;
        }
        return false;
    }
    // Drops the datagrams received so far.
    void Drain() const {
        char message[512];
        while (recv(fd_, message, sizeof(message), MSG_DONTWAIT) > 0) {
        }
    }

  private:
    std::string name_;
    int fd_ = -1;
    bool bound_ = false;
};

}  // namespace rpma::testing

#endif  // TESTS_INTEGRATION_NOTIFY_SOCKET_H
