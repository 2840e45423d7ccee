// An LD_PRELOAD shim that plays a failing disk for rpmad's catalog: fsync()
// of the directory named by RPMA_TEST_FAIL_FSYNC_DIR fails with EIO while
// the file named by RPMA_TEST_FAIL_FSYNC_TRIGGER exists, so that a test
// turns the fault on and off around one call while rpmad runs. Every other
// fsync() is the real one.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static int (*real_fsync)(int fd);

// Resolved before any thread of the process runs.
__attribute__((constructor)) static void FindRealFsync(void) {
    real_fsync = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
}

static int IsFailingDirectory(int fd) {
    const char *dir = getenv("RPMA_TEST_FAIL_FSYNC_DIR");
    const char *trigger = getenv("RPMA_TEST_FAIL_FSYNC_TRIGGER");
    struct stat target;
    struct stat synced;
    if (dir == NULL || trigger == NULL || access(trigger, F_OK) != 0) {
        return 0;
    }
    if (stat(dir, &target) != 0 || fstat(fd, &synced) != 0) {
        return 0;
    }
    return synced.st_dev == target.st_dev && synced.st_ino == target.st_ino;
}

int fsync(int fd) {
    if (IsFailingDirectory(fd)) {
        errno = EIO;
        return -1;
    }
    return real_fsync(fd);
}
