// A TCP proxy on 127.0.0.1 to 127.0.0.1:target for tests that cut a
// network: every connection made to port() is forwarded both ways. Cut():
// what the open connections carry is dropped from then on and their sockets
// held open, unread, as a network that stopped delivering looks to both ends
// (no FIN, no RST). Heal(): the cut connections end (both sides see it) and
// new ones are forwarded again. Hold(): what the connections carry waits in
// the proxy, nothing lost, until Release() (a network that stalls).
// RefuseNext(n): the next n connections are closed as soon as they are
// accepted (a connection attempt that fails).
// Bounded: every thread ends when the proxy is destroyed.
#ifndef RPMA_TESTS_INTEGRATION_CUT_PROXY_H
#define RPMA_TESTS_INTEGRATION_CUT_PROXY_H

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <list>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/process.h"

namespace rpma::testing {

class CutProxy {
  public:
    explicit CutProxy(int target) : target_(target) {
        listen_fd_ = ListenOnLoopback(&port_);
        // Under the lock: the accepting thread adds its forwarders to
        // threads_ as soon as it runs.
        std::lock_guard lock(mu_);
        if (listen_fd_ >= 0)
            threads_.emplace_back([this] { Accept(); });
    }
    ~CutProxy() {
        {
            std::lock_guard lock(mu_);
            stopping_ = true;
            // Wakes the threads blocked in accept, read or write.
            shutdown(listen_fd_, SHUT_RDWR);
            for (int fd : fds_)
                shutdown(fd, SHUT_RDWR);
        }
        cv_.notify_all();
        // No thread is added once stopping_ is set.
        for (auto &t : threads_)
            t.join();
        close(listen_fd_);
        for (int fd : fds_)
            close(fd);
    }
    CutProxy(const CutProxy &) = delete;
    CutProxy &operator=(const CutProxy &) = delete;

    // 0 when the proxy could not listen.
    int port() const { return port_; }
    std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
    // Bytes forwarded so far, both ways.
    uint64_t forwarded() const { return forwarded_; }
    // Connections accepted so far, refused ones included.
    int accepted() const { return accepted_; }

    void RefuseNext(int n) {
        std::lock_guard lock(mu_);
        refuse_ = n;
    }

    void Cut() {
        std::lock_guard lock(mu_);
        cut_ = true;
        cut_fds_ = fds_;
    }
    void Hold() {
        std::lock_guard lock(mu_);
        held_ = true;
    }
    void Release() {
        {
            std::lock_guard lock(mu_);
            held_ = false;
        }
        cv_.notify_all();
    }
    void Heal() {
        std::lock_guard lock(mu_);
        for (int fd : cut_fds_)
            shutdown(fd, SHUT_RDWR);
        cut_fds_.clear();
        cut_ = false;
        ++epoch_;
        cv_.notify_all();
    }

  private:
    void Accept() {
        for (;;) {
            const int client = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
            if (client < 0)
                return;  // shut down
            ++accepted_;
            {
                std::lock_guard lock(mu_);
                if (refuse_ > 0) {
                    --refuse_;
                    close(client);
                    continue;
                }
            }
            const int server = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
            const sockaddr_in target = LoopbackAddress(target_);
            std::lock_guard lock(mu_);
            fds_.push_back(client);
            fds_.push_back(server);
            if (stopping_ ||
                connect(server, reinterpret_cast<const sockaddr *>(&target), sizeof(target)) != 0) {
                shutdown(client, SHUT_RDWR);
                continue;
            }
            const uint64_t epoch = epoch_;
            threads_.emplace_back(
                [this, client, server, epoch] { Forward(client, server, epoch); });
            threads_.emplace_back(
                [this, client, server, epoch] { Forward(server, client, epoch); });
        }
    }

    bool CutFor(uint64_t epoch) {
        std::lock_guard lock(mu_);
        return cut_ || epoch != epoch_;
    }

    void Forward(int from, int to, uint64_t epoch) {
        char buffer[64 * 1024];
        for (;;) {
            const ssize_t n = read(from, buffer, sizeof(buffer));
            if (n <= 0 || CutFor(epoch))
                break;  // ended, or dropped
            {
                std::unique_lock lock(mu_);
                cv_.wait(lock, [&] { return !held_ || stopping_; });
            }
            for (ssize_t done = 0; done < n;) {
                const ssize_t w =
                    send(to, buffer + done, static_cast<size_t>(n - done), MSG_NOSIGNAL);
                if (w <= 0)
                    return;
                done += w;
            }
            forwarded_ += static_cast<uint64_t>(n);
        }
        if (!CutFor(epoch)) {
            shutdown(to, SHUT_WR);  // pass an orderly end on
            return;
        }
        // Cut: hold on, unread, until healed (which shuts the sockets) or
        // the proxy goes.
        std::unique_lock lock(mu_);
        cv_.wait(lock, [&] { return stopping_ || epoch != epoch_; });
    }

    const int target_;
    int listen_fd_ = -1;
    int port_ = 0;
    std::atomic<uint64_t> forwarded_{0};
    std::atomic<int> accepted_{0};
    std::mutex mu_;
    std::condition_variable cv_;
    bool stopping_ = false;
    bool cut_ = false;
    bool held_ = false;
    int refuse_ = 0;
    uint64_t epoch_ = 0;
    std::vector<int> fds_;
    std::vector<int> cut_fds_;
    std::list<std::thread> threads_;
};

}  // namespace rpma::testing

#endif  // RPMA_TESTS_INTEGRATION_CUT_PROXY_H
