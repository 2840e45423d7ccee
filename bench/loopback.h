// TCP on 127.0.0.1, for the benchmarks' own servers and proxies.
#ifndef RPMA_BENCH_LOOPBACK_H
#define RPMA_BENCH_LOOPBACK_H

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>

namespace rpma_bench {

inline sockaddr_in Loopback(uint16_t port) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return addr;
}

// A listening socket on 127.0.0.1:`port` (SO_REUSEADDR), or -1.
inline int ListenOnLoopback(uint16_t port, int backlog) {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in addr = Loopback(port);
    if (fd < 0 || bind(fd, reinterpret_cast<sockaddr *>(&addr), sizeof(addr)) != 0 ||
        listen(fd, backlog) != 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

}  // namespace rpma_bench

#endif  // RPMA_BENCH_LOOPBACK_H
