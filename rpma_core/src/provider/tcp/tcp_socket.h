// Address resolution and socket set-up shared by the active and passive sides.
#ifndef RPMA_CORE_SRC_PROVIDER_TCP_TCP_SOCKET_H
#define RPMA_CORE_SRC_PROVIDER_TCP_TCP_SOCKET_H

#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <string>
#include <vector>

#include "rpma_core/src/provider/tcp/tcp_asan.h"
#include "rpma_core/src/provider/tcp/tcp_unique_fd.h"

namespace rpma::provider::tcp {

struct SocketAddress {
    sockaddr_storage storage{};
    socklen_t length = 0;

    const sockaddr *Get() const { return reinterpret_cast<const sockaddr *>(&storage); }
    int Family() const { return storage.ss_family; }
    // "address:port" (IPv6 in brackets), for log messages.
    std::string ToString() const;
};

// getaddrinfo for TCP (IPv4 and IPv6). `passive` resolves for bind(). Returns
// 0, EINVAL (malformed address or port), or EHOSTUNREACH (no such host).
int ResolveAddresses(const char *addr, const char *port, bool passive,
                     std::vector<SocketAddress> *addresses);

// A non-blocking, close-on-exec TCP socket with TCP_NODELAY set (every
// message is a complete request or answer; batching them hurts latency).
int OpenStreamSocket(int family, UniqueFd *socket);
int SetNoDelay(int fd);

uint16_t LocalPort(int fd);

// A connection's socket I/O as plain system calls. libc's wrappers are
// cancellation points, which in a multi-threaded process (every process
// with a progress thread) costs two atomic operations per call; and a thread
// cancelled inside WaitDirect's recv would leave the socket claimed. None of
// these waits longer than the direct read's timeout.
inline ssize_t SocketRecv(int fd, void *buffer, size_t length, int flags) {
    return syscall(SYS_recvfrom, fd, buffer, length, flags, nullptr, nullptr);
}
inline ssize_t SocketRecvMsg(int fd, msghdr *message, int flags) {
    return syscall(SYS_recvmsg, fd, message, flags);
}
inline ssize_t SocketSend(int fd, const void *buffer, size_t length, int flags) {
    AsanCheckRead(buffer, length);
    return syscall(SYS_sendto, fd, buffer, length, flags, nullptr, 0);
}
inline ssize_t SocketSendMsg(int fd, const msghdr *message, int flags) {
    AsanCheckRead(message);
    return syscall(SYS_sendmsg, fd, message, flags);
}

}  // namespace rpma::provider::tcp

#endif  // RPMA_CORE_SRC_PROVIDER_TCP_TCP_SOCKET_H
