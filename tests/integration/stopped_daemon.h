// Stopped: a daemon the test started, stopped with SIGSTOP for as long as
// the object lives (or until Resume), so that a failed assertion never
// leaves a stopped rpmad behind. It lags for real: its kernel still
// accepts bytes until the socket buffers fill, nothing is answered.
#ifndef TESTS_INTEGRATION_STOPPED_DAEMON_H
#define TESTS_INTEGRATION_STOPPED_DAEMON_H

#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>

namespace rpma::testing {

class Stopped {
  public:
    explicit Stopped(pid_t pid) : pid_(pid) {
        sent_ = kill(pid_, SIGSTOP) == 0;
        // The daemon is the test's child: wait until it has stopped (a
        // signal is delivered asynchronously), not a moment longer.
        siginfo_t info{};
        stopped_ = sent_ && waitid(P_PID, static_cast<id_t>(pid_), &info, WSTOPPED | WNOWAIT) == 0;
    }
    ~Stopped() { Resume(); }
    Stopped(const Stopped &) = delete;
    Stopped &operator=(const Stopped &) = delete;

    bool stopped() const { return stopped_; }
    void Resume() {
        if (sent_)
            kill(pid_, SIGCONT);
        sent_ = stopped_ = false;
    }

  private:
    pid_t pid_;
    bool sent_ = false;
    bool stopped_ = false;
};

}  // namespace rpma::testing

#endif  // TESTS_INTEGRATION_STOPPED_DAEMON_H
