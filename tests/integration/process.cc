#include "tests/integration/process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>

extern char **environ;

namespace rpma::testing {

namespace {

using Clock = std::chrono::steady_clock;

std::string ErrnoText(const char *what) {
    return std::string(what) + ": " + strerror(errno);
}

int MillisecondsUntil(Clock::time_point deadline) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    return left.count() > 0 ? static_cast<int>(left.count()) : 0;
}

// Appends what is available on fd to *out; closes fd and sets it to -1 at end of file.
void Drain(int *fd, std::string *out) {
    char buf[4096];
    for (;;) {
        ssize_t n = read(*fd, buf, sizeof(buf));
        if (n > 0) {
            out->append(buf, static_cast<size_t>(n));
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
            close(*fd);
            *fd = -1;
        }
        return;
    }
}

}  // namespace

std::string ExitStatus::ToString() const {
    if (exited)
        return "exit code " + std::to_string(code);
    return std::string("killed by signal ") + strsignal(signal);
}

std::unique_ptr<Process> Process::Start(const std::vector<std::string> &argv,
                                        const std::vector<std::string> &extra_env,
                                        std::string *error) {
    int out[2];
    if (pipe2(out, O_CLOEXEC) != 0) {
        *error = ErrnoText("pipe2");
        return nullptr;
    }
    // stderr goes to a memory file, not a pipe: a pipe holds 64 KiB, and a
    // daemon's log reaches that while the test is busy elsewhere and reads
    // nothing; the daemon then blocks in write(2) and stops answering (what
    // stalled cluster_bench after about 130 opens). A file never blocks its
    // writer; Stderr() reads it.
    const int err = memfd_create("stderr", MFD_CLOEXEC);
    if (err < 0) {
        *error = ErrnoText("memfd_create");
        close(out[0]);
        close(out[1]);
        return nullptr;
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&actions, err, STDERR_FILENO);

    std::vector<char *> args;
    std::string command;
    for (const std::string &arg : argv) {
        args.push_back(const_cast<char *>(arg.c_str()));
        command += (command.empty() ? "" : " ") + arg;
    }
    args.push_back(nullptr);
    // A library preloaded into a sanitizer-built child (a fault-injecting
    // shim) comes before the sanitizer's runtime, which the runtime refuses
    // unless told that the order does not matter to it.
    const bool preloads = std::any_of(extra_env.begin(), extra_env.end(), [](const std::string &v) {
        return v.rfind("LD_PRELOAD=", 0) == 0;
    });
    const char *asan_options = getenv("ASAN_OPTIONS");
    const std::string asan_env =
        "ASAN_OPTIONS=" + (asan_options != nullptr ? std::string(asan_options) + ":" : "") +
        "verify_asan_link_order=0";
    std::vector<char *> env;
    for (char **var = environ; *var != nullptr; var++) {
        if (!(preloads && strncmp(*var, "ASAN_OPTIONS=", 13) == 0))
            env.push_back(*var);
    }
    if (preloads)
        env.push_back(const_cast<char *>(asan_env.c_str()));
    for (const std::string &var : extra_env)
        env.push_back(const_cast<char *>(var.c_str()));
    env.push_back(nullptr);

    pid_t pid;
    int spawn_err = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), env.data());
    posix_spawn_file_actions_destroy(&actions);
    close(out[1]);
    if (spawn_err != 0) {
        *error = "posix_spawn " + command + ": " + strerror(spawn_err);
        close(out[0]);
        close(err);
        return nullptr;
    }
    // glibc 2.36's <sys/pidfd.h> lacks C++ linkage declarations; call the kernel directly.
    int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
    if (pidfd < 0) {
        *error = ErrnoText("pidfd_open");
        kill(pid, SIGKILL);
        waitpid(pid, nullptr, 0);
        close(out[0]);
        close(err);
        return nullptr;
    }
    fcntl(out[0], F_SETFL, O_NONBLOCK);
    return std::unique_ptr<Process>(new Process(pid, pidfd, out[0], err, command));
}

Process::Process(pid_t pid, int pidfd, int out_fd, int err_fd, std::string command)
    : pid_(pid), pidfd_(pidfd), out_fd_(out_fd), err_fd_(err_fd), command_(std::move(command)) {}

Process::~Process() {
    if (!status_.has_value()) {
        kill(pid_, SIGKILL);
        Reap();
    }
    close(pidfd_);
    if (out_fd_ >= 0)
        close(out_fd_);
    close(err_fd_);
}

void Process::Reap() {
    int raw = 0;
    while (waitpid(pid_, &raw, 0) < 0 && errno == EINTR) {
    }
    ExitStatus status;
    status.exited = WIFEXITED(raw);
    status.code = status.exited ? WEXITSTATUS(raw) : 0;
    status.signal = WIFSIGNALED(raw) ? WTERMSIG(raw) : 0;
    status_ = status;
}

bool Process::Pump(Clock::time_point deadline, bool watch_exit) {
    pollfd fds[2];
    int n = 0;
    if (out_fd_ >= 0)
        fds[n++] = {out_fd_, POLLIN, 0};
    if (watch_exit && !status_.has_value())
        fds[n++] = {pidfd_, POLLIN, 0};
    if (n == 0)
        return false;
    int ready;
    do {
        ready = poll(fds, static_cast<nfds_t>(n), MillisecondsUntil(deadline));
    } while (ready < 0 && errno == EINTR);
    if (ready <= 0)
        return false;
    for (int i = 0; i < n; i++) {
        if (fds[i].revents == 0)
            continue;
        if (fds[i].fd == out_fd_)
            Drain(&out_fd_, &stdout_);
        else
            Reap();
    }
    return true;
}

bool Process::ReadLine(std::string *line, std::chrono::milliseconds timeout) {
    auto deadline = Clock::now() + timeout;
    for (;;) {
        size_t end = stdout_.find('\n', line_start_);
        if (end != std::string::npos) {
            *line = stdout_.substr(line_start_, end - line_start_);
            line_start_ = end + 1;
            return true;
        }
        if (out_fd_ < 0 || !Pump(deadline, false))
            return false;
    }
}

bool Process::WaitForLine(const std::string &wanted, std::chrono::milliseconds timeout) {
    auto deadline = Clock::now() + timeout;
    std::string line;
    while (ReadLine(
        &line, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()))) {
        if (line == wanted)
            return true;
    }
    return false;
}

std::optional<ExitStatus> Process::Wait(std::chrono::milliseconds timeout) {
    auto deadline = Clock::now() + timeout;
    while (!status_.has_value()) {
        if (!Pump(deadline, true) && !status_.has_value())
            return std::nullopt;
    }
    // Collect the rest of the output (bounded: a grandchild could hold the pipe open).
    while (out_fd_ >= 0 && Pump(deadline, false)) {
    }
    return status_;
}

ExitStatus Process::Kill() {
    if (!status_.has_value()) {
        kill(pid_, SIGKILL);
        Reap();
    }
    // What it wrote before dying, for failure messages.
    auto deadline = Clock::now() + std::chrono::seconds(1);
    while (out_fd_ >= 0 && Pump(deadline, false)) {
    }
    return *status_;
}

const std::string &Process::Stderr() const {
    // What was written since the last call (pread: the child's writes go on
    // at the file's offset, which this does not move).
    char buf[16384];
    for (;;) {
        const ssize_t n = pread(err_fd_, buf, sizeof(buf), static_cast<off_t>(stderr_.size()));
        if (n > 0)
            stderr_.append(buf, static_cast<size_t>(n));
        else if (!(n < 0 && errno == EINTR))
            break;
    }
    return stderr_;
}

std::string Process::Describe() const {
    Stderr();  // brings stderr_ up to date
    std::string text = "$ " + command_ + "\n";
    text += status_.has_value() ? "[" + status_->ToString() + "]\n" : "[still running]\n";
    text += "--- stdout ---\n" + stdout_ + "--- stderr ---\n" + stderr_ + "--------------\n";
    return text;
}

sockaddr_in LoopbackAddress(int port) {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return address;
}

int ListenOnLoopback(int *port) {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address = LoopbackAddress(0);
    socklen_t length = sizeof(address);
    if (fd < 0 || bind(fd, reinterpret_cast<sockaddr *>(&address), sizeof(address)) != 0 ||
        listen(fd, 16) != 0 ||
        getsockname(fd, reinterpret_cast<sockaddr *>(&address), &length) != 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    *port = ntohs(address.sin_port);
    return fd;
}

std::string Runfile(const std::string &path) {
    const char *srcdir = getenv("TEST_SRCDIR");
    const char *workspace = getenv("TEST_WORKSPACE");
    return std::string(srcdir ? srcdir : ".") + "/" + (workspace ? workspace : "rpma") + "/" + path;
}

std::string TempPath(const std::string &name) {
    static std::atomic<int> counter{0};
    const char *tmpdir = getenv("TEST_TMPDIR");
    return std::string(tmpdir ? tmpdir : "/tmp") + "/" + std::to_string(getpid()) + "-" +
           std::to_string(counter++) + "-" + name;
}

}  // namespace rpma::testing
