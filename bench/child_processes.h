// The servers client_bench and rpmad_bench fork (rpma_bench's servers in a
// child process, rpmad from its binary): started before the benchmark has
// any thread, dying with it (PR_SET_PDEATHSIG), killed and reaped at its
// end together with the run's temporary directory.
#ifndef RPMA_BENCH_CHILD_PROCESSES_H
#define RPMA_BENCH_CHILD_PROCESSES_H

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "bench/bench_stats.h"

namespace rpma_bench {

[[noreturn]] inline void Die(const char *program, const std::string &message) {
    fprintf(stderr, "%s: %s\n", program, message.c_str());
    exit(1);
}

class ChildProcesses {
  public:
    // `program` prefixes error messages. Creates the run's temporary
    // directory in `dir` and cleans everything up at exit or on a fatal
    // signal. One per process.
    ChildProcesses(const char *program, const std::string &dir) {
        self_ = this;
        program_ = program;
        std::string pattern = dir + "/" + program + ".XXXXXX";
        if (mkdtemp(pattern.data()) == nullptr)
            Die(program_, "cannot create a directory in " + dir + ": " + strerror(errno));
        temp_dir_ = pattern;
        atexit([] {
            if (self_ != nullptr)  // exit() before the end of main
                self_->CleanUp();
        });
        for (int sig : {SIGINT, SIGTERM, SIGHUP})
            signal(sig, [](int s) {
                if (self_ != nullptr)
                    self_->KillAll();  // async-signal-safe; the directory stays
                ::signal(s, SIG_DFL);
                raise(s);
            });
    }
    ~ChildProcesses() {
        CleanUp();
        self_ = nullptr;
    }
    ChildProcesses(const ChildProcesses &) = delete;
    ChildProcesses &operator=(const ChildProcesses &) = delete;

    const std::string &temp_dir() const { return temp_dir_; }

    // Runs `serve(ready_fd)` in a child and waits for its "ready" line.
    pid_t StartServer(const std::function<void(int)> &serve, const std::string &what) {
        int fds[2];
        if (pipe2(fds, O_CLOEXEC) != 0)
            Die(program_, std::string("pipe: ") + strerror(errno));
        const pid_t pid = Fork(-1);
        if (pid == 0) {
            close(fds[0]);
            serve(fds[1]);
            _exit(1);
        }
        close(fds[1]);
        if (!AwaitLine(fds[0], "ready", 20000))
            Die(program_, what + " did not start (its errors are above)");
        close(fds[0]);
        return pid;
    }

    // Runs `argv`, its stderr into `log_path`, and waits for a stdout line
    // starting with `ready`. The stdout pipe stays open until the end.
    pid_t StartProgram(const std::vector<std::string> &args, const std::string &log_path,
                       const std::string &ready) {
        const int log_fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        int out[2];
        if (log_fd < 0 || pipe2(out, O_CLOEXEC) != 0)
            Die(program_, "cannot create " + log_path + " or a pipe: " + strerror(errno));
        std::vector<std::string> copy = args;
        std::vector<char *> argv;
        for (std::string &arg : copy)
            argv.push_back(arg.data());
        argv.push_back(nullptr);
        const pid_t pid = Fork(out[0]);
        if (pid == 0) {
            dup2(out[1], STDOUT_FILENO);
            dup2(log_fd, STDERR_FILENO);
            unsetenv("NOTIFY_SOCKET");  // not systemd's child
            unsetenv("JOURNAL_STREAM");
            execv(argv[0], argv.data());
            dprintf(log_fd, "cannot run %s: %s\n", argv[0], strerror(errno));
            _exit(127);
        }
        close(out[1]);
        close(log_fd);
        if (!AwaitLine(out[0], ready, 20000)) {
            std::ifstream log(log_path);
            std::string text((std::istreambuf_iterator<char>(log)),
                             std::istreambuf_iterator<char>());
            Die(program_, args[0] + " did not report ready; its log:\n" + text);
        }
        return pid;
    }

    // Stops a child as systemd would (SIGTERM), leaving it to CleanUp's
    // SIGKILL if it lingers past 5 s, and closes its stdout pipe.
    void Stop(pid_t pid) {
        kill(pid, SIGTERM);
        bool exited = false;
        for (int waited_ms = 0; waited_ms < 5000; waited_ms += 10) {
            if (waitpid(pid, nullptr, WNOHANG) == pid) {
                exited = true;
                break;
            }
            usleep(10000);
        }
        for (Child &child : children_)
            if (child.pid == pid && child.stdout_fd >= 0) {
                close(child.stdout_fd);
                child.stdout_fd = -1;
            }
        if (exited)  // reaped: nothing left to kill
            std::erase_if(children_, [pid](const Child &child) { return child.pid == pid; });
    }

    void CleanUp() {
        KillAll();
        for (const Child &child : children_) {
            waitpid(child.pid, nullptr, 0);
            if (child.stdout_fd >= 0)
                close(child.stdout_fd);
        }
        children_.clear();
        if (!temp_dir_.empty()) {
            std::error_code ignored;
            std::filesystem::remove_all(temp_dir_, ignored);
            temp_dir_.clear();
        }
    }

  private:
    struct Child {
        pid_t pid;
        int stdout_fd;  // -1: none kept; else open until the child ends
    };

    void KillAll() {
        for (const Child &child : children_)
            kill(child.pid, SIGKILL);
    }

    // fork() for a child that dies with this process; the parent records
    // it (with `stdout_fd`, the read end of its stdout or -1) to kill and
    // reap at the end.
    pid_t Fork(int stdout_fd) {
        const pid_t parent = getpid();
        const pid_t pid = fork();
        if (pid < 0)
            Die(program_, std::string("fork: ") + strerror(errno));
        if (pid == 0) {
            DieWithParent(parent);
            return 0;
        }
        children_.push_back(Child{pid, stdout_fd});
        return pid;
    }

    // In a child just forked: die with the parent, even if it already died.
    static void DieWithParent(pid_t parent) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(1);
    }

    // Reads from fd until a line starting with `prefix` arrives; false at
    // EOF or after timeout_ms.
    static bool AwaitLine(int fd, const std::string &prefix, int timeout_ms) {
        std::string seen;
        const uint64_t deadline = NowNs() + uint64_t(timeout_ms) * 1000000;
        for (;;) {
            size_t line_start = 0;
            for (size_t nl; (nl = seen.find('\n', line_start)) != std::string::npos;
                 line_start = nl + 1)
                if (seen.compare(line_start, prefix.size(), prefix) == 0)
                    return true;
            const uint64_t now = NowNs();
            pollfd p{fd, POLLIN, 0};
            if (now >= deadline ||
                poll(&p, 1, static_cast<int>((deadline - now) / 1000000) + 1) <= 0)
                return false;
            char buf[512];
            const ssize_t n = read(fd, buf, sizeof(buf));
            if (n <= 0)
                return false;
            seen.append(buf, static_cast<size_t>(n));
        }
    }

    static inline ChildProcesses *self_ = nullptr;
    const char *program_ = "";
    std::string temp_dir_;
    std::vector<Child> children_;
};

// rpmad in the runfiles of `argv0` (bazel run, bazel test, or beside it).
inline std::string RunfilesRpmad(const char *program, const char *argv0) {
    std::vector<std::string> candidates;
    for (const char *var : {"RUNFILES_DIR", "TEST_SRCDIR"})
        if (const char *dir = getenv(var))
            candidates.push_back(std::string(dir) + "/rpma/daemon/rpmad");
    candidates.push_back(std::string(argv0) + ".runfiles/rpma/daemon/rpmad");
    candidates.push_back("daemon/rpmad");  // bazel run's working directory
    for (const std::string &path : candidates)
        if (access(path.c_str(), X_OK) == 0)
            return path;
    Die(program,
        "cannot find rpmad in the runfiles: pass --rpmad PATH (bazel build //daemon:rpmad)");
}

// The command line of the benchmarks that start rpmad (rpmad_bench,
// client_bench). `rpmad_role` says in the usage text what --rpmad is for.
struct DaemonBenchOptions {
    bool quick = false;
    int pin_cpu = -1;
    std::string csv_path;
    std::string rpmad_path;  // empty: from the runfiles
    std::string dir;         // where the run's temporary directory goes
};

inline DaemonBenchOptions ParseDaemonBenchOptions(int argc, char **argv, const char *rpmad_role) {
    DaemonBenchOptions opt;
    for (int i = 1; i < argc; ++i) {
        const bool has_value = i + 1 < argc;
        if (strcmp(argv[i], "--quick") == 0) {
            opt.quick = true;
        } else if (strcmp(argv[i], "--pin") == 0 && has_value) {
            opt.pin_cpu = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--csv") == 0 && has_value) {
            opt.csv_path = argv[++i];
        } else if (strcmp(argv[i], "--rpmad") == 0 && has_value) {
            opt.rpmad_path = argv[++i];
        } else if (strcmp(argv[i], "--dir") == 0 && has_value) {
            opt.dir = argv[++i];
        } else {
            fprintf(stderr,
                    "usage: %s [--quick] [--pin CPU] [--csv FILE] [--rpmad PATH] [--dir DIR]\n"
                    "  --pin CPU    run every process (rpmad too) on this CPU\n"
                    "  --rpmad PATH %s (default: from the runfiles)\n"
                    "  --dir DIR    where the pools and the bare server's region live\n"
                    "               (a fresh directory inside DIR, removed at the end;\n"
                    "               default $TEST_TMPDIR, $TMPDIR or /tmp)\n",
                    argv[0], rpmad_role);
            exit(2);
        }
    }
    if (opt.dir.empty())
        for (const char *var : {"TEST_TMPDIR", "TMPDIR"})
            if (const char *dir = getenv(var); dir != nullptr && opt.dir.empty())
                opt.dir = dir;
    if (opt.dir.empty())
        opt.dir = "/tmp";
    return opt;
}

// Puts this process on `cpu` (nothing when negative). Call it before any
// child or thread exists: all inherit it.
inline void PinTo(int cpu) {
    if (cpu < 0)
        return;
    cpu_set_t cpus;
    CPU_ZERO(&cpus);
    CPU_SET(cpu, &cpus);
    if (sched_setaffinity(0, sizeof(cpus), &cpus) != 0) {
        perror("sched_setaffinity");
        exit(1);
    }
}

}  // namespace rpma_bench

#endif  // RPMA_BENCH_CHILD_PROCESSES_H
