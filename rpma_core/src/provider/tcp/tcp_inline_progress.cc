// InlineProgress (tcp_inline_progress.h): the direct read's syscalls and
// the socket it may have to close.
#include "rpma_core/src/provider/tcp/tcp_inline_progress.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <cerrno>
#include <cstring>

#include "rpma_core/src/log.h"
#include "rpma_core/src/provider/tcp/tcp_socket.h"

namespace rpma::provider::tcp {

bool InlineProgress::MakeBlocking(int fd, const std::string &peer) {
    if (socket_blocking_)
        return true;
    const int flags = fcntl(fd, F_GETFL);
    timeval timeout{};
    timeout.tv_usec = kDirectReadTimeoutUs;
    if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0 ||
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout)) != 0) {
        RPMA_LOG_WARNING("cannot prepare the socket to %s for blocking reads: %s", peer.c_str(),
                         strerror(errno));
        return false;
    }
    socket_blocking_ = true;
    return true;
}

InlineProgress::Recv InlineProgress::DirectRecv(std::unique_lock<Lock> &lock, int fd,
                                                uint8_t *buffer, size_t length,
                                                const std::string &peer, ssize_t *got) {
    if (!MakeBlocking(fd, peer))
        return Recv::kUnavailable;
    reader_busy_ = true;
    lock.unlock();
    *got = SocketRecv(fd, buffer, length, 0);
    const int err = *got < 0 ? errno : 0;
    lock.lock();
    reader_busy_ = false;
    if (deferred_close_.Valid()) {
        deferred_close_.Reset();
        return Recv::kClosed;
    }
    if (*got < 0 && (err == EAGAIN || err == EWOULDBLOCK))
        return Recv::kTimedOut;
    if (*got < 0)
        errno = err;  // for the reader
    return Recv::kReceived;
}

void InlineProgress::Release(UniqueFd *socket) {
    if (reader_busy_) {
        shutdown(socket->Get(), SHUT_RDWR);
        deferred_close_ = std::move(*socket);
    } else {
        socket->Reset();
    }
}

}  // namespace rpma::provider::tcp
