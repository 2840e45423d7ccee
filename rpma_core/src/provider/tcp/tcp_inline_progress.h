// A connection's inline progress (CONNECTION.md): application threads that
// wait for its completions and read its socket themselves. It owns who
// waits (each waiter's mute of the socket in the progress engine, counted
// in the lease, with the linger after the last and the doorbell) and the
// direct wait: one blocking recv on the socket, without the connection's
// lock, by a thread waiting on this connection alone; meanwhile nobody else
// reads the socket, and a close of it is left to that reader (its number
// must not be reused under the recv).
//
// It does the syscalls of the direct read and nothing of the connection's:
// a call says what changed and the connection acts (its epoll interest, a
// deadline, the inbound processing). Used under the connection's lock.
// Tests: tcp_inline_progress_test, tcp_inline_lease_test.
#ifndef RPMA_CORE_SRC_PROVIDER_TCP_TCP_INLINE_PROGRESS_H
#define RPMA_CORE_SRC_PROVIDER_TCP_TCP_INLINE_PROGRESS_H

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>

#include "rpma_core/src/provider/tcp/tcp_inline_lease.h"
#include "rpma_core/src/provider/tcp/tcp_lock.h"
#include "rpma_core/src/provider/tcp/tcp_progress_engine.h"
#include "rpma_core/src/provider/tcp/tcp_unique_fd.h"

namespace rpma::provider::tcp {

class InlineProgress {
  public:
    // How long a direct recv waits before the waiter falls back to epoll
    // (the kernel rounds it up to a timer tick). Completions another thread
    // makes for a channel whose waiter is in that recv are seen when it
    // returns, so this also bounds their delay.
    static constexpr int kDirectReadTimeoutUs = 1000;

    InlineLease &lease() { return lease_; }
    const InlineLease &lease() const { return lease_; }

    // --- waiters ---

    // A waiter (*muted: its own state) mutes the socket while it can be
    // read (`readable`) and lifts its mute otherwise. True when the lease
    // changed: the connection's epoll interest follows.
    bool Follow(bool *muted, bool readable) {
        if (readable == *muted)
            return false;
        if (readable)
            lease_.Join();
        else
            lease_.Leave();
        *muted = readable;
        return true;
    }
    // The wait ends: lifts this waiter's mute, if any. The last waiter
    // leaves the mute for the linger (`linger_us`, when `can_mute`); the
    // connection then asks the engine for a deadline at lease().Until()
    // (*deadline), unless the lease's pending one extends it. True when the
    // lease changed.
    bool End(bool *muted, int linger_us, bool can_mute, bool *deadline) {
        *deadline = false;
        if (!*muted)
            return false;
        *muted = false;
        *deadline = lease_.Leave() &&
                    lease_.StartLinger(linger_us, can_mute, deadline_.Pending()) &&
                    deadline_.Ask(lease_.Until());
        return true;
    }
    // The lease's deadlines (the doorbell, the linger's end) share one
    // OnDeadline of the engine: true when `at` is to be asked of it.
    bool AskDeadline(PendingDeadline::Clock::time_point at) { return deadline_.Ask(at); }
    void DeadlinePassed(PendingDeadline::Clock::time_point now) { deadline_.Passed(now); }
    // The only waiter: it may read the socket directly.
    bool Alone() const { return lease_.Waiters() == 1; }

    // --- the direct read ---

    // A thread is in recv on the socket, without the lock: nobody else
    // reads it.
    bool ReaderBusy() const { return reader_busy_; }
    enum class Recv {
        kReceived,     // *got (and errno when negative): the reader takes it
        kTimedOut,     // nothing arrived within kDirectReadTimeoutUs
        kClosed,       // the socket was closed meanwhile: what was read goes
        kUnavailable,  // the socket cannot be made blocking (logged)
    };
    // One blocking recv of up to `length` bytes from `fd` into `buffer`,
    // with `lock` (the connection's, held) released across it. The socket is
    // made blocking, with kDirectReadTimeoutUs as SO_RCVTIMEO, once per
    // socket; every other call on it says MSG_DONTWAIT. `peer` names it in
    // the log.
    Recv DirectRecv(std::unique_lock<Lock> &lock, int fd, uint8_t *buffer, size_t length,
                    const std::string &peer, ssize_t *got);

    // --- the socket ---

    // A new socket was attached (non-blocking, as created).
    void Attached() { socket_blocking_ = false; }
    // The connection lets go of *socket: closed now, or, under a direct
    // recv, shut down (the reader wakes to end of stream) and left to the
    // reader to close.
    void Release(UniqueFd *socket);

  private:
    bool MakeBlocking(int fd, const std::string &peer);

    InlineLease lease_;
    PendingDeadline deadline_;
    bool reader_busy_ = false;
    // The socket released under the direct recv: its reader closes it.
    UniqueFd deferred_close_;
    bool socket_blocking_ = false;
};

}  // namespace rpma::provider::tcp

#endif  // RPMA_CORE_SRC_PROVIDER_TCP_TCP_INLINE_PROGRESS_H
