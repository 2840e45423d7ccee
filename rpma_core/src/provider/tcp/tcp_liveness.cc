#include "rpma_core/src/provider/tcp/tcp_liveness.h"

// linux/tcp.h, not netinet/tcp.h: glibc's struct tcp_info lacks the byte
// counters (tcpi_bytes_received, tcpi_bytes_acked, tcpi_notsent_bytes).
#include <linux/tcp.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "rpma_core/src/log.h"

namespace rpma::provider::tcp {
namespace {

// How often a connection waiting for its peer looks at it: a quarter of the
// bound, so a silent peer is probed after a quarter and given up on within
// a quarter after the whole.
std::chrono::milliseconds PeerLookInterval(std::chrono::milliseconds timeout) {
    return std::max(std::chrono::milliseconds(1), timeout / 4);
}

}  // namespace

bool ParseRequestTimeout(const char *text, std::chrono::milliseconds *timeout) {
    if (text == nullptr || *text < '0' || *text > '9')
        return false;  // empty, signed or spaced
    char *end = nullptr;
    errno = 0;
    const unsigned long long ms = strtoull(text, &end, 10);
    if (errno != 0 || *end != '\0')
        return false;
    if (ms != 0 && (ms < static_cast<unsigned long long>(kMinRequestTimeout.count()) ||
                    ms > static_cast<unsigned long long>(kMaxRequestTimeout.count())))
        return false;
    *timeout = std::chrono::milliseconds(ms);
    return true;
}

std::chrono::milliseconds RequestTimeoutFromEnvironment() {
    const char *text = getenv(kRequestTimeoutVariable);
    std::chrono::milliseconds timeout = kDefaultRequestTimeout;
    if (text != nullptr && !ParseRequestTimeout(text, &timeout)) {
        RPMA_LOG_WARNING(
            "ignoring %s=%s: it takes milliseconds, 0 (no timeout) or %lld to %lld; using "
            "the default of %lld ms",
            kRequestTimeoutVariable, text, static_cast<long long>(kMinRequestTimeout.count()),
            static_cast<long long>(kMaxRequestTimeout.count()),
            static_cast<long long>(kDefaultRequestTimeout.count()));
        timeout = kDefaultRequestTimeout;
    }
    return timeout;
}

std::atomic<int> &RequestTimeoutMs() {
    static std::atomic<int> timeout_ms{static_cast<int>(RequestTimeoutFromEnvironment().count())};
    return timeout_ms;
}

int SetSocketLiveness(int fd, std::chrono::milliseconds timeout) {
    if (timeout.count() <= 0)
        return 0;
    const int idle_s = static_cast<int>((timeout.count() + 999) / 1000);
    const int interval_s = std::max(1, idle_s / 4);
    const int user_timeout_ms = static_cast<int>(timeout.count());
    const int one = 1;
    if (setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one)) != 0 ||
        setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle_s, sizeof(idle_s)) != 0 ||
        setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval_s, sizeof(interval_s)) != 0 ||
        setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout_ms, sizeof(user_timeout_ms)) !=
            0)
        return errno;
    return 0;
}

PeerWatch::Sample PeerWatch::Take(int fd, bool backlog) {
    Sample sample;
    tcp_info info{};
    socklen_t length = sizeof(info);
    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &length) == 0) {
        sample.received = info.tcpi_bytes_received;
        sample.acked = info.tcpi_bytes_acked;
        backlog = backlog || info.tcpi_notsent_bytes > 0 || info.tcpi_unacked > 0;
    }
    sample.backlog = backlog;
    return sample;
}

void PeerWatch::Start(int fd, Clock::time_point now) {
    last_ = Take(fd, /*backlog=*/false);
    // What was sent before the watch began earns no credit: the peer's
    // kernel acknowledges it whether or not the peer reads.
    last_.backlog = false;
    quiet_since_ = now;
    probed_ = false;
}

PeerWatch::Verdict PeerWatch::Check(int fd, bool backlog, Clock::time_point now,
                                    std::chrono::milliseconds timeout) {
    const Sample sample = Take(fd, backlog);
    // The peer's kernel acknowledges what it buffers, even for a stopped
    // process: only while bytes of ours were waiting (the window the peer
    // reads open) does that count, and a probe sent into an empty queue
    // right after a check never does.
    const bool progress =
        sample.received != last_.received || (last_.backlog && sample.acked != last_.acked);
    last_ = sample;
    if (progress) {
        quiet_since_ = now;
        probed_ = false;
        return Verdict::kAlive;
    }
    const Clock::duration quiet = now - quiet_since_;
    if (quiet >= timeout)
        return Verdict::kDead;
    if (!probed_ && quiet >= timeout / 4) {
        probed_ = true;
        return Verdict::kProbe;
    }
    return Verdict::kAlive;
}

void PeerLiveness::Start(int fd, int timeout_ms, Clock::time_point now) {
    watching_ = true;
    timeout_ms_ = timeout_ms;
    watch_.Start(fd, now);
    look_at_ = now + PeerLookInterval(std::chrono::milliseconds(timeout_ms));
}

bool PeerLiveness::NeedsDeadline(Clock::time_point *at) {
    *at = look_at_;
    return look_deadline_.Ask(look_at_);
}

PeerLiveness::Look PeerLiveness::Check(int fd, const Waits &waits, Clock::time_point now) {
    const bool waiting_for_peer = waits.answers || waits.backlog;
    if (!waits.live || (!waiting_for_peer && !waits.holding_message)) {
        watching_ = false;  // the next wait for the peer starts afresh
        return {Look::Kind::kStopped};
    }
    const std::chrono::milliseconds timeout(timeout_ms_);
    look_at_ = now + PeerLookInterval(timeout);
    Look look;
    look.heartbeat = waits.holding_message;
    if (!waiting_for_peer) {
        watch_.Start(fd, now);
        return look;
    }
    switch (watch_.Check(fd, waits.backlog, now, timeout)) {
        case PeerWatch::Verdict::kAlive:
            break;
        case PeerWatch::Verdict::kProbe:
            // Bytes of ours waiting alone need no question: the peer's
            // reading them is the answer.
            look.ask_for_ack = waits.answers;
            break;
        case PeerWatch::Verdict::kDead:
            watching_ = false;
            return {Look::Kind::kDead};
    }
    return look;
}

}  // namespace rpma::provider::tcp
