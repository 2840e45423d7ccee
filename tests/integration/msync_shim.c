/*
 * A disk that stalls or fails on cue, for rpmad under test: preloaded
 * (LD_PRELOAD) into rpmad, it takes over every msync of at least
 * RPMA_TEST_MSYNC_MIN_BYTES bytes (smaller ones go to the kernel as usual).
 *
 *   RPMA_TEST_MSYNC_STARTED  a FIFO: one byte is written to it when a taken
 *                            msync starts (nothing when no reader has it open)
 *   RPMA_TEST_MSYNC_RELEASE  a FIFO: a taken msync then waits until a byte
 *                            comes (or 30 s pass) before it goes on
 *   RPMA_TEST_MSYNC_FAIL     "1": a taken msync fails with EIO instead of
 *                            reaching the kernel
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

enum { kHoldLimitMs = 30000 };

static void SignalStarted(void) {
    const char *path = getenv("RPMA_TEST_MSYNC_STARTED");
    if (path == NULL)
        return;
    int fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return;
    (void)!write(fd, "s", 1);
    close(fd);
}

/* Opened before the start is signalled, so that a release written at once
 * finds its reader; -1 when there is no release FIFO. */
static int OpenRelease(void) {
    const char *path = getenv("RPMA_TEST_MSYNC_RELEASE");
    /* Non-blocking open: a FIFO reader does not wait for a writer. */
    return path == NULL ? -1 : open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
}

static void WaitForRelease(int fd) {
    if (fd < 0)
        return;
    struct pollfd p = {fd, POLLIN, 0};
    (void)poll(&p, 1, kHoldLimitMs);
    close(fd);
}

int msync(void *addr, size_t length, int flags) {
    const char *min = getenv("RPMA_TEST_MSYNC_MIN_BYTES");
    if (min != NULL && length >= strtoull(min, NULL, 10)) {
        const int saved = errno;
        const int release = OpenRelease();
        SignalStarted();
        WaitForRelease(release);
        const char *fail = getenv("RPMA_TEST_MSYNC_FAIL");
        if (fail != NULL && fail[0] == '1') {
            errno = EIO;
            return -1;
        }
        errno = saved;
    }
    return (int)syscall(SYS_msync, addr, length, flags);
}
