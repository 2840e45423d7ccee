// A child process for integration tests: spawned with argv and extra environment, its stdout
// read line by line with a timeout, its stdout and stderr kept for failure messages (stderr
// in a memory file, so that a child's log never fills a pipe that nobody reads), waited
// for with a timeout, killed with SIGKILL. Nothing here sleeps: every wait is a poll on the
// child's pipes and its pidfd, bounded by the caller's timeout.
#ifndef TESTS_INTEGRATION_PROCESS_H
#define TESTS_INTEGRATION_PROCESS_H

#include <netinet/in.h>
#include <sys/types.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tests/support/free_port.h"

namespace rpma::testing {

// How a process ended.
struct ExitStatus {
    bool exited = false;  // by exit(); otherwise killed by `signal`
    int code = 0;
    int signal = 0;

    bool Success() const { return exited && code == 0; }
    std::string ToString() const;
};

class Process {
  public:
    // Starts argv[0] (a path) with the test's environment plus `extra_env` ("NAME=value").
    // Returns nullptr and sets *error when it cannot be started.
    static std::unique_ptr<Process> Start(const std::vector<std::string> &argv,
                                          const std::vector<std::string> &extra_env,
                                          std::string *error);

    Process(const Process &) = delete;
    Process &operator=(const Process &) = delete;
    // Kills the process if it still runs, and reaps it.
    ~Process();

    pid_t pid() const { return pid_; }

    // The next complete line of stdout (without '\n'); false on timeout or end of output.
    bool ReadLine(std::string *line, std::chrono::milliseconds timeout);
    // Reads stdout lines until one equals `line`; false on timeout or end of output.
    bool WaitForLine(const std::string &line, std::chrono::milliseconds timeout);

    // Waits for the process to end; nullopt on timeout (it keeps running).
    std::optional<ExitStatus> Wait(std::chrono::milliseconds timeout);
    // SIGKILL, then reaps it.
    ExitStatus Kill();

    // Everything the process wrote so far (after Wait: everything), for assertions and
    // failure messages.
    const std::string &Stdout() const { return stdout_; }
    const std::string &Stderr() const;
    // argv, exit status and both outputs, for failure messages.
    std::string Describe() const;

  private:
    Process(pid_t pid, int pidfd, int out_fd, int err_fd, std::string command);
    // Polls the pipes and, if `watch_exit`, the pidfd until something happens or the deadline
    // passes. Returns false at the deadline.
    bool Pump(std::chrono::steady_clock::time_point deadline, bool watch_exit);
    void Reap();

    pid_t pid_;
    int pidfd_;
    int out_fd_;
    int err_fd_;  // the memory file of the child's stderr
    std::string command_;
    std::string stdout_;
    mutable std::string stderr_;  // what Stderr() read of err_fd_ so far
    size_t line_start_ = 0;       // stdout before this offset has been returned by ReadLine
    std::optional<ExitStatus> status_;
};

// FreePort() (tests/support/free_port.h) comes with this header.

// 127.0.0.1:port.
sockaddr_in LoopbackAddress(int port);
// A listening TCP socket on 127.0.0.1 at a port the kernel picks (in
// *port); -1 when it cannot be made.
int ListenOnLoopback(int *port);

// The path of a runfile given relative to the workspace root, e.g. "examples/x/server".
std::string Runfile(const std::string &path);

// A fresh path inside the test's temporary directory.
std::string TempPath(const std::string &name);

}  // namespace rpma::testing

#endif  // TESTS_INTEGRATION_PROCESS_H
