// The baseline: the same workloads over plain TCP sockets (TCP_NODELAY, one
// connection, blocking calls), with no copies beyond what the kernel makes.
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <vector>

#include "bench/bench_stats.h"
#include "bench/depth.h"
#include "bench/loopback.h"
#include "bench/workload.h"

namespace rpma_bench {
namespace {

enum class Mode : uint32_t { kLatency = 1, kStream = 2, kPingPong = 3, kRead = 4 };

struct Request {
    Mode mode;
    uint32_t size;   // payload / chunk size
    uint64_t count;  // iterations, or total bytes for a stream
};

[[noreturn]] void Die(const char *what) {
    perror(what);
    exit(1);
}

void SendAll(int fd, const void *buf, size_t len) {
    const char *p = static_cast<const char *>(buf);
    while (len > 0) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
        if (n <= 0)
            Die("raw tcp: send");
        p += n;
        len -= static_cast<size_t>(n);
    }
}

bool RecvAll(int fd, void *buf, size_t len) {
    char *p = static_cast<char *>(buf);
    while (len > 0) {
        ssize_t n = recv(fd, p, len, 0);
        if (n <= 0)
            return false;
        p += n;
        len -= static_cast<size_t>(n);
    }
    return true;
}

void SetNoDelay(int fd) {
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

void Serve(int fd, std::vector<char> &buffer) {
    Request req;
    while (RecvAll(fd, &req, sizeof(req))) {
        uint64_t ack = 1;
        if (req.mode == Mode::kStream) {
            for (uint64_t left = req.count; left > 0;) {
                ssize_t n = recv(fd, buffer.data(), std::min<uint64_t>(left, buffer.size()), 0);
                if (n <= 0)
                    return;
                left -= static_cast<uint64_t>(n);
            }
            SendAll(fd, &ack, sizeof(ack));
            continue;
        }
        for (uint64_t i = 0; i < req.count; ++i) {
            if (req.mode == Mode::kRead) {
                if (!RecvAll(fd, &ack, sizeof(ack)))
                    return;
                SendAll(fd, buffer.data(), req.size);
                continue;
            }
            if (!RecvAll(fd, buffer.data(), req.size))
                return;
            if (req.mode == Mode::kLatency)
                SendAll(fd, &ack, sizeof(ack));
            else
                SendAll(fd, buffer.data(), req.size);
        }
    }
}

class RawTcpClient : public Client {
  public:
    explicit RawTcpClient(int fd) : fd_(fd), buffer_(kMaxPayload, 'b') {}
    ~RawTcpClient() override { close(fd_); }

    std::vector<uint64_t> DurableWriteLatency(size_t size, int iterations) override {
        return RoundTrips(Mode::kLatency, size, iterations, sizeof(uint64_t));
    }

    std::vector<uint64_t> PingPong(size_t size, int iterations) override {
        return RoundTrips(Mode::kPingPong, size, iterations, size);
    }

    std::vector<uint64_t> ReadLatency(size_t size, int iterations) override {
        return RoundTrips(Mode::kRead, size, iterations, size, sizeof(uint64_t));
    }

    // Pipelined request/response: `depth` payloads sent ahead of their
    // one-word replies; the server answers in order, so the oldest
    // outstanding request completes first.
    DepthResult DurableWriteAtDepth(size_t size, int depth, int operations) override {
        Request req{Mode::kLatency, static_cast<uint32_t>(size), static_cast<uint64_t>(operations)};
        SendAll(fd_, &req, sizeof(req));
        std::deque<int> outstanding;
        return RunAtDepth(
            depth, operations,
            [&](int slot) {
                SendAll(fd_, buffer_.data(), size);
                outstanding.push_back(slot);
            },
            [&] {
                uint64_t ack;
                if (!RecvAll(fd_, &ack, sizeof(ack)))
                    Die("raw tcp: reply");
                const int slot = outstanding.front();
                outstanding.pop_front();
                return slot;
            });
    }

    uint64_t Stream(size_t chunk, size_t total) override {
        Request req{Mode::kStream, static_cast<uint32_t>(chunk), total};
        SendAll(fd_, &req, sizeof(req));
        uint64_t start = NowNs();
        for (size_t sent = 0; sent < total; sent += chunk)
            SendAll(fd_, buffer_.data(), std::min(chunk, total - sent));
        uint64_t ack;
        if (!RecvAll(fd_, &ack, sizeof(ack)))
            Die("raw tcp: stream ack");
        return NowNs() - start;
    }

  private:
    // Each iteration sends `request` bytes (default: the payload) and waits
    // for `reply` bytes.
    std::vector<uint64_t> RoundTrips(Mode mode, size_t size, int iterations, size_t reply,
                                     size_t request = 0) {
        Request req{mode, static_cast<uint32_t>(size), static_cast<uint64_t>(iterations)};
        SendAll(fd_, &req, sizeof(req));
        std::vector<uint64_t> samples;
        samples.reserve(iterations);
        for (int i = 0; i < iterations; ++i) {
            uint64_t start = NowNs();
            SendAll(fd_, buffer_.data(), request != 0 ? request : size);
            if (!RecvAll(fd_, buffer_.data(), reply))
                Die("raw tcp: reply");
            samples.push_back(NowNs() - start);
        }
        return samples;
    }

    int fd_;
    std::vector<char> buffer_;
};

}  // namespace

void RunRawTcpServer(uint16_t port, int ready_fd) {
    const int listener = ListenOnLoopback(port, 4);
    if (listener < 0)
        Die("raw tcp: listen");
    dprintf(ready_fd, "ready\n");
    std::vector<char> buffer(kMaxPayload);
    for (;;) {
        int fd = accept(listener, nullptr, nullptr);
        if (fd < 0)
            Die("raw tcp: accept");
        SetNoDelay(fd);
        Serve(fd, buffer);
        close(fd);
    }
}

std::unique_ptr<Client> ConnectRawTcp(uint16_t port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr = Loopback(port);
    if (connect(fd, reinterpret_cast<sockaddr *>(&addr), sizeof(addr)) != 0)
        Die("raw tcp: connect");
    SetNoDelay(fd);
    return std::make_unique<RawTcpClient>(fd);
}

}  // namespace rpma_bench
