// Liveness: what stands in for an RC queue pair's retry timer, so that a
// peer that stopped answering breaks the connection instead of leaving work
// requests waiting forever.
//
// The bound (RequestTimeoutMs; RPMA_TCP_TIMEOUT_MS, default
// kDefaultRequestTimeout, 0 turns it off). A connection that waits for its
// peer (requests not yet answered, or bytes of ours the socket did not take)
// and sees no progress from it for that long breaks as an RC QP whose
// retries ran out: the oldest request completes with IBV_WC_RETRY_EXC_ERR,
// the others with IBV_WC_WR_FLUSH_ERR, and the connection reports
// RPMA_CONN_LOST. The peer may be a process stopped (SIGSTOP, a debugger)
// whose kernel still acknowledges every TCP segment, or a host that vanished.
//
// Progress, not duration: the bound measures silence, never how long one
// request takes. Progress is bytes arriving from the peer, or, while bytes of
// ours wait for the peer to take them, its kernel acknowledging more of them
// (both from TCP_INFO, read once per check). A 256 MiB READ streams in and a
// 256 MiB WRITE drains out however long they take. A peer that is alive but
// has nothing to send yet proves it on request: after a quarter of the bound
// in silence the connection sends it an ACK_REQUEST, which a live target
// answers at once (a repeated ACK when nothing is new); a target holding a
// message for want of a posted receive sends such an ACK every quarter bound
// on its own, as an RNR NAK tells a verbs requester that its responder lives.
//
// Why not rpma_conn_cfg_set_timeout: librpma passes it to rdma_resolve_addr
// and rdma_resolve_route, bounding only how long establishing a connection
// may take (here it bounds Connect, as before). An established RC QP's
// retry timeout comes from rdma_cm (the ACK timeout from the path's packet
// lifetime, with librpma's retry_count of 7: a few seconds on RoCE) and no
// librpma call changes it; the tcp provider's equivalent is this bound, set
// for the process by the environment, a few seconds by default.
//
// Idle connections: RC notices nothing while nothing is outstanding, and
// rdma_cm reports nothing for a peer that vanished meanwhile. Here the
// sockets also carry TCP keepalive (first probe after the bound, then every
// quarter of it) and TCP_USER_TIMEOUT of the bound, so an idle connection
// to a host that vanished reports RPMA_CONN_LOST within about one and a half
// bounds, and a host that vanishes with bytes unacknowledged is noticed by
// the kernel within the bound as well. An application written for verbs
// sees the LOST its next post would have caused; a server (rpmad) does not
// hold the connections of vanished clients forever. A stopped process's
// kernel answers keepalives: an idle connection to it lives on, as on verbs.
//
// Known limit: a target runs a persistent flush's msync on its progress
// thread and answers nothing meanwhile, so a flush whose msync takes longer
// than the bound fails the initiator's flush with IBV_WC_RETRY_EXC_ERR.
// Persistence moved off the progress thread removes it: the target then
// answers probes while the flush runs.
//
// Both ends should use the same bound: a target sends its heartbeats at a
// quarter of its own.
#ifndef RPMA_CORE_SRC_PROVIDER_TCP_TCP_LIVENESS_H
#define RPMA_CORE_SRC_PROVIDER_TCP_TCP_LIVENESS_H

#include <atomic>
#include <chrono>
#include <cstdint>

#include "rpma_core/src/provider/tcp/tcp_progress_engine.h"

namespace rpma::provider::tcp {

// About what RC with librpma's retry_count of 7 takes on RoCE with rdma_cm's
// default ACK timeout (8 tries of about half a second).
inline constexpr std::chrono::milliseconds kDefaultRequestTimeout{4000};
inline constexpr std::chrono::milliseconds kMinRequestTimeout{10};
inline constexpr std::chrono::milliseconds kMaxRequestTimeout{3600000};
inline constexpr const char *kRequestTimeoutVariable = "RPMA_TCP_TIMEOUT_MS";

// A value of RPMA_TCP_TIMEOUT_MS: "0" (off) or kMinRequestTimeout to
// kMaxRequestTimeout milliseconds, in decimal. False for anything else.
bool ParseRequestTimeout(const char *text, std::chrono::milliseconds *timeout);
// RPMA_TCP_TIMEOUT_MS as set now: the default when unset; when invalid, a
// warning that names the variable and what it accepts, and the default.
std::chrono::milliseconds RequestTimeoutFromEnvironment();
// The process's bound in milliseconds (0: off), from the environment when
// first used; connections read it when established.
std::atomic<int> &RequestTimeoutMs();

// SO_KEEPALIVE, TCP_KEEPIDLE (the bound, rounded up to seconds),
// TCP_KEEPINTVL (a quarter of that, at least 1 s) and TCP_USER_TIMEOUT (the
// bound) on `fd`; nothing when `timeout` is 0. 0 or the errno of the
// setsockopt that failed.
int SetSocketLiveness(int fd, std::chrono::milliseconds timeout);

// Watches one connection's peer for progress while the connection waits
// for it. Cheap to keep: it only samples the socket when asked to Check.
class PeerWatch {
  public:
    using Clock = std::chrono::steady_clock;

    enum class Verdict {
        kAlive,  // progress since the last check, or not quiet for long yet
        kProbe,  // quiet for a quarter of the bound: ask the peer to answer
        kDead,   // quiet for the whole bound
    };

    // Progress is measured from `now`. `fd` is the connection's socket.
    void Start(int fd, Clock::time_point now);
    // `backlog`: bytes of ours wait in the connection's queue for the
    // socket to take them. Probes once per quiet stretch.
    Verdict Check(int fd, bool backlog, Clock::time_point now, std::chrono::milliseconds timeout);
    // How long the peer has been quiet as of the last Start or Check.
    Clock::duration Quiet(Clock::time_point now) const { return now - quiet_since_; }

  private:
    struct Sample {
        uint64_t received = 0;  // bytes the peer sent us
        uint64_t acked = 0;     // bytes of ours the peer's kernel acknowledged
        // Bytes of ours were waiting (queued, unsent or unacknowledged): only
        // then does the peer acknowledging more of them show it is reading.
        bool backlog = false;
    };
    static Sample Take(int fd, bool backlog);

    Sample last_;
    Clock::time_point quiet_since_;
    bool probed_ = false;
};

// One connection's looks at its peer while it waits for it: when they run,
// the deadline the engine holds for them, and what each look concludes and
// asks for. The connection calls it under its lock and acts on the Look
// (asks for an ACK, sends a heartbeat, or breaks). Test:
// tcp_peer_liveness_test.
class PeerLiveness {
  public:
    using Clock = std::chrono::steady_clock;

    // Looks run (Start was called and no look stopped them).
    bool Watching() const { return watching_; }
    // The bound the looks began with, in milliseconds.
    int TimeoutMs() const { return timeout_ms_; }
    // Begins the looks with the bound `timeout_ms` (> 0), from `now`.
    void Start(int fd, int timeout_ms, Clock::time_point now);
    void Stop() { watching_ = false; }

    // The deadline to ask the engine for, into *at, unless one no earlier
    // is pending already: the engine keeps each deadline until it passes,
    // so asking again at every turn would pile them up.
    bool NeedsDeadline(Clock::time_point *at);
    // A deadline passed: the one pending for the looks, if it was due.
    void DeadlinePassed(Clock::time_point now) { look_deadline_.Passed(now); }
    // A look is due.
    bool Due(Clock::time_point now) const { return watching_ && look_at_ <= now; }

    // What the connection waits for, and what waits for it, at a look.
    struct Waits {
        bool live = false;     // established, with its socket: else the looks stop
        bool answers = false;  // our requests wait for the peer's answers
        bool backlog = false;  // bytes of ours wait for the peer to read them
        // The peer waits for us: a message held for want of a receive, or a
        // persist running.
        bool holding_message = false;
    };
    // What a look found, for the connection to do.
    struct Look {
        enum class Kind : uint8_t {
            kStopped,  // nothing waits on either side: the looks stop
            kAlive,    // the peer made progress, or has not been quiet for long
            kDead,     // quiet for the whole bound: break the connection
        };
        Kind kind = Kind::kAlive;
        // kAlive: quiet for a quarter of the bound while our requests wait:
        // ask for an answer (ACK_REQUEST; an unsignaled request is
        // acknowledged lazily, and an answer to anything shows life).
        bool ask_for_ack = false;
        // kAlive: the peer waits for us: a repeated ACK tells it that we
        // live, as an RNR NAK does.
        bool heartbeat = false;
    };
    // One look. Holding a message restarts the watch: the peer waits for
    // us, not we for it.
    Look Check(int fd, const Waits &waits, Clock::time_point now);

  private:
    bool watching_ = false;
    int timeout_ms_ = 0;
    Clock::time_point look_at_;
    // The look deadline the engine holds, if any.
    PendingDeadline look_deadline_;
    PeerWatch watch_;
};

}  // namespace rpma::provider::tcp

#endif  // RPMA_CORE_SRC_PROVIDER_TCP_TCP_LIVENESS_H
