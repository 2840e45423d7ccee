// rpmad: config -> logging -> region store and data plane (Daemon) ->
// control plane -> metrics (when configured) -> ready; then it waits for signals: SIGTERM/SIGINT
// stop it gracefully, SIGHUP re-reads the configuration's log level and TLS material.
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <iostream>
#include <sstream>

#include "daemon/command_line.h"
#include "daemon/control_service.h"
#include "daemon/daemon.h"
#include "daemon/log.h"
#include "daemon/metrics.h"
#include "rpma_ext.h"

namespace rpmad {
namespace {

// A signalfd for the signals rpmad handles; they are blocked in every thread
// (threads started later inherit the mask), so only this fd sees them.
int BlockSignals() {
    sigset_t set;
    sigemptyset(&set);
    for (int signal : {SIGTERM, SIGINT, SIGHUP})
        sigaddset(&set, signal);
    if (pthread_sigmask(SIG_BLOCK, &set, nullptr) != 0)
        return -1;
    return signalfd(-1, &set, SFD_CLOEXEC);
}

// The first line of a ParseInvocation error, without its "rpmad: " prefix.
std::string FirstLine(const std::string &text) {
    std::string line = text.substr(0, text.find('\n'));
    constexpr std::string_view kPrefix = "rpmad: ";
    return line.starts_with(kPrefix) ? line.substr(kPrefix.size()) : line;
}

// SIGHUP: the command line and the configuration file again. Their log
// level, their admin token and client tokens (files read again: a revoked
// token admits no further call; sessions it opened stay until closed), and
// their TLS material served by a new control server that listens beside the
// running one before that one stops, so clients see no gap. All or nothing:
// a file that is not valid, or a server that does not start, changes
// nothing. Other settings take a restart.
void Reload(int argc, const char *const *argv, Daemon &daemon,
            std::unique_ptr<ControlServer> &control, Config &effective,
            const std::string &config_origin) {
    sd_notify(0, "RELOADING=1\nSTATUS=Reloading the configuration");
    auto failed = [](const std::string &why) {
        Log().error("reload: {}; nothing changed", why);
        // Scripts and tests wait for this line, as for the ready line.
        std::cout << "rpmad: reload failed: " << why << std::endl;
        sd_notify(0, "READY=1\nSTATUS=Serving (the last reload failed; see the log)");
    };
    std::ostringstream out, err;
    Invocation again = ParseInvocation(argc, argv, out, err);
    if (again.action != Action::kRun)
        return failed("the configuration is not valid: " + FirstLine(err.str()));
    Config next = effective;
    next.log_level = again.config.log_level;
    next.tls = again.config.tls;
    next.admin_token = again.config.admin_token;
    next.admin_token_file = again.config.admin_token_file;
    next.client_tokens_file = again.config.client_tokens_file;
    next.client_tokens = again.config.client_tokens;
    const bool new_server = next.tls.enabled() || effective.tls.enabled();
    if (new_server) {
        auto started = ControlServer::Start(daemon, next, config_origin, control->address());
        if (!started.ok())
            return failed(started.status().message());
        control->Shutdown();
        control = std::move(*started);
    }
    if (Status set = SetLogLevel(next.log_level); !set.ok())
        return failed(set.message());
    if (!new_server)
        control->Reconfigure(next);
    effective = std::move(next);
    std::string what = "log level " + effective.log_level;
    if (effective.tls.enabled())
        what += ", TLS from " + effective.tls.cert_file;
    if (!effective.client_tokens_file.empty())
        what += ", " + std::to_string(effective.client_tokens.size()) + " client tokens from " +
                effective.client_tokens_file;
    Log().info("reload: {}", what);
    std::cout << "rpmad: reloaded: " << what << std::endl;
    sd_notify(0, "READY=1\nSTATUS=Serving");
}

int Serve(int argc, const char *const *argv) {
    const int signal_fd = BlockSignals();
    if (signal_fd < 0) {
        std::cerr << "rpmad: cannot set up signal handling: " << strerror(errno) << "\n";
        return EXIT_FAILURE;
    }
    Invocation invocation = ParseInvocation(argc, argv, std::cout, std::cerr);
    if (invocation.action == Action::kExit)
        return invocation.exit_code;
    const Config &config = invocation.config;
    if (Status logging = SetUpLogging(config.log_target, config.log_level); !logging.ok()) {
        std::cerr << "rpmad: " << logging.message() << "\n";
        return EXIT_FAILURE;
    }
    // rpma_core reads the provider choice from the environment.
    setenv("RPMA_PROVIDER", config.provider.c_str(), 1);
    // The tcp provider's knobs from data.tcp.* (its RPMA_TCP_* variables
    // are for programs without a config file).
    rpma_ext_tcp_options tcp{};
    tcp.size = sizeof(tcp);
    tcp.timeout_ms = static_cast<int>(config.tcp.timeout_ms);
    tcp.max_handshaking = static_cast<int>(config.tcp.max_handshaking);
    tcp.max_pending = static_cast<int>(config.tcp.max_pending);
    tcp.persist_threads = static_cast<int>(config.tcp.persist_threads);
    tcp.inline_linger_us = static_cast<int>(config.tcp.inline_linger_us);
    if (int ret = rpma_ext_tcp_set_options(&tcp); ret != 0) {
        Log().critical("cannot start: setting data.tcp.* failed: {}", rpma_err_2str(ret));
        return EXIT_FAILURE;
    }
    Log().info("starting with the configuration from {}; pool directory {}",
               invocation.config_origin, config.pool_dir);
    // Before the pool is touched: a port in use is the commonest mistake.
    if (Status free = CheckNobodyListensOn(config.control_listen); !free.ok()) {
        Log().critical("cannot start: {}", free.message());
        return EXIT_FAILURE;
    }
    sd_notify(0, "STATUS=Opening the region store");

    auto daemon = Daemon::Start(config);
    if (!daemon.ok()) {
        Log().critical("cannot start: {}", daemon.status().message());
        return EXIT_FAILURE;
    }
    Config effective = config;
    auto started =
        ControlServer::Start(**daemon, effective, invocation.config_origin, config.control_listen);
    if (!started.ok()) {
        Log().critical("cannot start: {}", started.status().message());
        return EXIT_FAILURE;
    }
    std::unique_ptr<ControlServer> control = std::move(*started);
    std::unique_ptr<MetricsServer> metrics;
    if (!config.metrics_listen.empty()) {
        auto serving = MetricsServer::Start(**daemon, config.metrics_listen);
        if (!serving.ok()) {
            Log().critical("cannot start: {}", serving.status().message());
            return EXIT_FAILURE;
        }
        metrics = std::move(*serving);
    }
    if (config.cluster.enabled())
        if (Status joined = (*daemon)->JoinCluster(control->address()); !joined.ok()) {
            Log().critical("cannot start: {}", joined.message());
            return EXIT_FAILURE;
        }
    const DataPlane &plane = (*daemon)->data_plane();
    const size_t regions = (*daemon)->ListRegions().size();
    // The metrics' address as bound (port 0 picks one), for scripts and tests.
    const std::string metrics_at = metrics ? " metrics " + metrics->address() : "";
    Log().info("serving: control plane on {}, data plane on {}:{} ({} provider), {} region(s){}",
               control->address(), plane.address(), plane.port(), plane.provider(), regions,
               metrics ? "; metrics on " + metrics->address() : "");
    std::cout << "rpmad: ready: control " << control->address() << " data " << plane.address()
              << ":" << plane.port() << " provider " << plane.provider() << metrics_at << std::endl;
    sd_notifyf(0, "READY=1\nSTATUS=Serving %zu region(s): control %s, data %s:%s (%s)%s", regions,
               control->address().c_str(), plane.address().c_str(), plane.port().c_str(),
               plane.provider().c_str(), metrics_at.c_str());

    uint64_t watchdog_usec = 0;
    const bool watchdog = sd_watchdog_enabled(0, &watchdog_usec) > 0;
    // Pinging at half the interval, as sd_watchdog_enabled(3) advises.
    const int timeout_ms = watchdog ? static_cast<int>(watchdog_usec / 2000) : -1;
    for (;;) {
        pollfd fd{signal_fd, POLLIN, 0};
        const int ready = poll(&fd, 1, timeout_ms);
        if (ready < 0 && errno != EINTR) {
            Log().critical("waiting for signals failed: {}", strerror(errno));
            break;
        }
        // A ping vouches for the data plane too: a stuck data-plane thread
        // goes unanswered, and systemd restarts rpmad.
        if (watchdog) {
            if ((*daemon)->Responsive(std::chrono::milliseconds(timeout_ms / 2)))
                sd_notify(0, "WATCHDOG=1");
            else
                Log().error("the data-plane thread does not answer; not pinging the watchdog");
        }
        if (ready <= 0)
            continue;
        signalfd_siginfo info;
        if (read(signal_fd, &info, sizeof(info)) != sizeof(info))
            continue;
        if (info.ssi_signo == SIGHUP) {
            Reload(argc, argv, **daemon, control, effective, invocation.config_origin);
            continue;
        }
        Log().info("stopping on {}: no new sessions; disconnecting clients",
                   strsignal(static_cast<int>(info.ssi_signo)));
        break;
    }
    sd_notify(0, "STOPPING=1\nSTATUS=Stopping: disconnecting clients");
    // Health checkers learn it before the clients are cut off.
    control->StopServing();
    (*daemon)->Drain();
    Log().info("clients disconnected; stopping the control plane");
    control->Shutdown();
    metrics.reset();
    daemon->reset();
    Log().info("stopped");
    close(signal_fd);
    return EXIT_SUCCESS;
}

}  // namespace
}  // namespace rpmad

int main(int argc, char **argv) {
    return rpmad::Serve(argc, argv);
}
