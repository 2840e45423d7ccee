// What another thread of this process is doing, for tests that act only
// once a thread has blocked (in a wait, a read) rather than sleeping.
#ifndef TESTS_SUPPORT_THREAD_STATE_H
#define TESTS_SUPPORT_THREAD_STATE_H

#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include <fstream>
#include <string>

namespace rpma::testing {

// The calling thread's id, as BlockedIn takes it.
inline pid_t ThreadId() {
    return static_cast<pid_t>(syscall(SYS_gettid));
}

// The system call thread `tid` of this process is blocked in, or -1 while
// it runs (/proc/self/task/<tid>/syscall).
inline long BlockedIn(pid_t tid) {
    std::ifstream in("/proc/self/task/" + std::to_string(tid) + "/syscall");
    std::string first;
    if (!(in >> first) || first == "running")
        return -1;
    return std::stol(first);
}

}  // namespace rpma::testing

#endif  // TESTS_SUPPORT_THREAD_STATE_H
