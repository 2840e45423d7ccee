#include "bench/delay_proxy.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <utility>
#include <vector>

#include "bench/loopback.h"

namespace rpma_bench {
namespace {

[[noreturn]] void Fail(const char *what) {
    perror(what);
    exit(1);
}

uint64_t MonotonicNs() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

void Configure(int fd) {
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

struct Chunk {
    uint64_t due_ns;
    std::vector<char> bytes;
    size_t sent = 0;
};

// One direction of one connection.
struct Direction {
    int from;
    int to;
    std::deque<Chunk> queue;
    bool from_closed = false;
};

// Both directions of one proxied connection.
struct Link {
    Direction up, down;
    bool dead = false;    // a socket failed: close both
    bool closed = false;  // both sockets closed
};

// Reads what `d.from` has, stamped due one way's delay from now.
// Reads into one buffer and copies out what came: a 256 KiB vector per
// read would be mmapped, zeroed page by page and unmapped each time, which
// made the proxies take most of a pinned CPU at a few thousand messages a
// second, and the proxied rows measure them instead of the delay.
void Receive(Direction &d, uint64_t one_way_ns, Link &link) {
    static std::vector<char> buffer(256 << 10);
    const ssize_t n = recv(d.from, buffer.data(), buffer.size(), 0);
    if (n > 0) {
        d.queue.push_back(
            {MonotonicNs() + one_way_ns, std::vector<char>(buffer.begin(), buffer.begin() + n)});
    } else if (n == 0) {
        d.from_closed = true;
    } else if (errno != EAGAIN && errno != EINTR) {
        link.dead = true;
    }
}

// Forwards every due chunk `d.to` takes now.
void Forward(Direction &d, Link &link) {
    const uint64_t now = MonotonicNs();
    while (!d.queue.empty() && d.queue.front().due_ns <= now) {
        Chunk &c = d.queue.front();
        const ssize_t n =
            send(d.to, c.bytes.data() + c.sent, c.bytes.size() - c.sent, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno != EAGAIN && errno != EINTR)
                link.dead = true;
            return;
        }
        c.sent += static_cast<size_t>(n);
        if (c.sent < c.bytes.size())
            return;
        d.queue.pop_front();
    }
    if (d.from_closed && d.queue.empty())
        shutdown(d.to, SHUT_WR);
}

}  // namespace

void RunDelayProxy(uint16_t listen_port, uint16_t upstream_port, int round_trip_us, int ready_fd) {
    // The default timer slack (50 us) would add to every wake-up.
    prctl(PR_SET_TIMERSLACK, 1UL);
    const uint64_t one_way_ns = static_cast<uint64_t>(round_trip_us) * 1000 / 2;
    const int listener = ListenOnLoopback(listen_port, 16);
    if (listener < 0)
        Fail("delay proxy: listen");
    dprintf(ready_fd, "ready\n");

    std::deque<Link> links;  // a deque: pointers into it stay valid
    for (;;) {
        std::vector<pollfd> fds{{listener, POLLIN, 0}};
        std::vector<std::pair<Link *, Direction *>> owners{{nullptr, nullptr}};
        uint64_t next_due = UINT64_MAX;
        for (Link &link : links) {
            if (link.closed)
                continue;
            for (Direction *d : {&link.up, &link.down}) {
                short events = d->from_closed ? 0 : POLLIN;
                if (!d->queue.empty()) {
                    next_due = std::min(next_due, d->queue.front().due_ns);
                    if (d->queue.front().sent > 0)
                        events |= POLLOUT;  // the peer's buffer was full
                }
                fds.push_back({d->from, events, 0});
                owners.push_back({&link, d});
                if (events & POLLOUT) {
                    fds.push_back({d->to, POLLOUT, 0});
                    owners.push_back({&link, d});
                }
            }
        }
        timespec timeout{}, *wait = nullptr;
        if (next_due != UINT64_MAX) {
            const uint64_t now = MonotonicNs();
            const uint64_t left = next_due > now ? next_due - now : 0;
            timeout = {static_cast<time_t>(left / 1000000000u),
                       static_cast<long>(left % 1000000000u)};
            wait = &timeout;
        }
        if (ppoll(fds.data(), fds.size(), wait, nullptr) < 0 && errno != EINTR)
            Fail("delay proxy: ppoll");
        if (fds[0].revents & POLLIN) {
            const int client = accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
            const int upstream = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
            sockaddr_in up = Loopback(upstream_port);
            if (client < 0 || upstream < 0 ||
                connect(upstream, reinterpret_cast<sockaddr *>(&up), sizeof(up)) != 0)
                Fail("delay proxy: accept or connect upstream");
            Configure(client);
            Configure(upstream);
            links.push_back({{client, upstream, {}}, {upstream, client, {}}});
        }
        for (size_t i = 1; i < fds.size(); ++i) {
            auto [link, d] = owners[i];
            if (d->from == fds[i].fd && !d->from_closed &&
                (fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
                Receive(*d, one_way_ns, *link);
        }
        for (Link &link : links) {
            if (link.closed)
                continue;
            Forward(link.up, link);
            Forward(link.down, link);
            if (link.dead || (link.up.from_closed && link.down.from_closed &&
                              link.up.queue.empty() && link.down.queue.empty())) {
                close(link.up.from);
                close(link.down.from);
                link.closed = true;
            }
        }
    }
}

}  // namespace rpma_bench
