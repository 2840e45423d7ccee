#include "rpma_core/src/fd_wait.h"

#include <fcntl.h>
#include <poll.h>

#include <cerrno>

namespace rpma {

bool IsNonBlocking(int fd) {
    int flags = fcntl(fd, F_GETFL);
    return flags >= 0 && (flags & O_NONBLOCK) != 0;
}

int WaitReadable(int fd) {
    pollfd pfd{fd, POLLIN, 0};
    for (;;) {
        int ready = poll(&pfd, 1, -1);
        if (ready > 0)
            return 0;
        if (ready < 0 && errno != EINTR)
            return errno;
    }
}

}  // namespace rpma
