// ibv_comp_channel over an eventfd: each time an armed CQ fires, one unit is
// added and the CQ is queued; GetEvent takes one of each. Because the fd is
// blocking unless the application sets O_NONBLOCK on it, GetEvent behaves
// like ibv_get_cq_event in both modes.
//
// Order. GetEvent hands out events in the order the CQs fired, whichever
// thread fired them (the progress thread, a waiter, a poller, a poster), and
// a connection fires its CQs in the order it makes its completions: a SEND
// answered by the peer (an ACK, or a reply carrying the ACK) completes
// before the reply's receive. So with a send CQ and a receive CQ on one
// channel (rpma_conn_wait), the send CQ's event comes first, as on verbs.
// Where a CQ does not fire (not armed, or its completion returned by the
// busy poll that made it) there is no event to order.
//
// Inline progress. A blocking GetEvent does not sleep until the progress
// thread hands it a completion: it drives the inbound side of the
// connections whose queue pairs feed this channel's CQs itself. Fed by one
// connection, it first sleeps in a recv on that connection's socket
// (Connection::WaitDirect, bounded by a timeout); otherwise, or after that
// timeout, it polls the channel's eventfd together with those sockets and,
// when a socket is readable, runs the same inbound processing the progress
// thread would run (under the connection's lock), so the completion is
// produced in the thread that waits for it: no thread hand-off, no eventfd
// round trip (a CQ firing in the waiting thread is handed over directly).
// While it waits on a connection, the connection's socket is muted (out of
// the progress engine's epoll set), so only one thread wakes up; mutes are
// counted per connection and
// lifted when the wait ends, and level-triggered epoll then picks up whatever
// is left. The waiting thread keeps an epoll set of its own over the
// channel's eventfd and those sockets, so a wait registers nothing anew.
// Everything else - EPOLLOUT, timers, connections nobody waits on,
// one-sided requests while the application is elsewhere - stays with the
// progress thread.
#ifndef RPMA_CORE_SRC_PROVIDER_TCP_TCP_COMPLETION_CHANNEL_H
#define RPMA_CORE_SRC_PROVIDER_TCP_TCP_COMPLETION_CHANNEL_H

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "rpma_core/src/provider/provider.h"
#include "rpma_core/src/provider/tcp/tcp_signaling_queue.h"

namespace rpma::provider::tcp {

class CompletionQueue;

// Shared by the application's handle (tcp_completion_channel_handle.h) and
// the CQs created on it, so it outlives whichever of them goes first.
class CompletionChannel final {
  public:
    // Hands out a CompletionChannelHandle.
    static int Create(std::unique_ptr<provider::CompletionChannel> *channel);

    int Fd() const { return fired_.Fd(); }
    int GetEvent(provider::CompletionQueue **cq);
    int GetAckedEvent(provider::CompletionQueue **cq);
    // The same inline wait, given up after timeout_ms (ETIMEDOUT). It may
    // overrun that by up to two direct reads' timeouts (a millisecond
    // each): the first, before which it reads no clock, and the last,
    // which it does not interrupt.
    int GetAckedEventWithin(provider::CompletionQueue **cq, int timeout_ms);
    void AckEvents(provider::CompletionQueue *cq, unsigned int count);

    // Queues cq's event, or hands it to a thread waiting inline on this
    // channel that made the completion itself (after any event queued
    // before it: the order is kept).
    void Fire(CompletionQueue *cq);

    // The CQs created on this channel (their constructor and destructor).
    void AddQueue(CompletionQueue *cq);
    void RemoveQueue(CompletionQueue *cq);
    // Whether a CQ created on this channel still exists.
    bool InUse();

  private:
    using Clock = std::chrono::steady_clock;

    // The next event: queued, or waited for unless the fd is non-blocking.
    int TakeEvent(CompletionQueue **fired);
    // Blocks until an event, driving the feeding connections meanwhile.
    // `checked`: the fd was just seen blocking; otherwise it is checked
    // before the first wait that is not a direct read (EAGAIN if it is
    // non-blocking by now). With `timeout_ms` >= 0, ETIMEDOUT once that
    // passed, counted from the first moment the wait needs a deadline.
    int WaitInline(CompletionQueue **fired, bool checked, int timeout_ms);
    // Whether the fd is (still) blocking, remembered for the next wait.
    bool StillBlocking();

    SignalingQueue<CompletionQueue *> fired_;
    // The fd was blocking when last asked (fcntl). A wait on one connection
    // begins with a direct read, bounded by its timeout, without asking
    // again: the fcntl is a syscall per wait, and an application that makes
    // the fd non-blocking after waiting on it blocking gets its EAGAIN at
    // most that timeout late.
    std::atomic<bool> seen_blocking_{false};
    // Tells this channel from one created later at the same address.
    const uint64_t id_ = next_id_.fetch_add(1);
    static inline std::atomic<uint64_t> next_id_{1};
    std::mutex queues_mu_;
    std::vector<CompletionQueue *> queues_;
};

}  // namespace rpma::provider::tcp

#endif  // RPMA_CORE_SRC_PROVIDER_TCP_TCP_COMPLETION_CHANNEL_H
