// The tcp provider's device: software RDMA over TCP with the contract of an
// RC queue pair, for hosts without an RNIC.
//
// One process-wide device owns a genuine ibv_context (device "tcp0"), the
// memory registration table and the progress thread. See tcp_connection.h
// for how a connection works and tcp_wire.h for what travels on the wire.
#ifndef RPMA_CORE_SRC_PROVIDER_TCP_TCP_DEVICE_H
#define RPMA_CORE_SRC_PROVIDER_TCP_TCP_DEVICE_H

#include <infiniband/verbs.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>

#include "rpma_core/src/provider/provider.h"
#include "rpma_core/src/provider/tcp/tcp_connection.h"
#include "rpma_core/src/provider/tcp/tcp_listener.h"
#include "rpma_core/src/provider/tcp/tcp_memory_table.h"
#include "rpma_core/src/provider/tcp/tcp_persist_workers.h"
#include "rpma_core/src/provider/tcp/tcp_progress_engine.h"
#include "rpma_core/src/provider/tcp/tcp_queue_pair.h"

namespace rpma::provider::tcp {

class Device final : public provider::Device {
  public:
    static constexpr const char *kName = "tcp0";
    // rnr_retry 7 means "retry forever" on InfiniBand; a software target
    // bounds it instead (7 retries x 1 s) so a peer that never posts a
    // receive cannot hold a sender forever.
    static constexpr std::chrono::milliseconds kDefaultReceiverNotReadyTimeout{7000};
    // The connect timeout only bounds reaching the peer (as rdma_cm's bounds
    // address and route resolution); an unanswered request then waits for
    // the server application about as long as rdma_cm's retries would.
    static constexpr std::chrono::milliseconds kDefaultAwaitingReplyTimeout{20000};
    // See SetInlineLinger. A millisecond covers the gap between an
    // application's completion and its next post and wait many times over;
    // the price: work the peer starts while the application is neither
    // waiting nor posting (one-sided requests, messages) is served up to that
    // late, and a lone unsignaled request posted in the linger waits up to
    // that long for its doorbell. RPMA_TCP_INLINE_LINGER_US=0 turns it off.
    static constexpr std::chrono::microseconds kDefaultInlineLinger{1000};

    Device();
    ~Device() override = default;
    Device(const Device &) = delete;
    Device &operator=(const Device &) = delete;

    ibv_context *Context() override { return &context_; }
    bool IsOdpCapable() const override { return false; }
    int AllocPd(std::unique_ptr<provider::ProtectionDomain> *pd) override;
    int CreateCompletionChannel(std::unique_ptr<provider::CompletionChannel> *channel) override;
    int CreateCq(int capacity, provider::CompletionChannel *channel,
                 std::unique_ptr<provider::CompletionQueue> *cq) override;
    // What each listener holds for peers not yet handed to the application
    // is bounded by ListenerLimits (tcp_listener.h), taken from the
    // process's knobs (tcp_options.h) when it is created.
    int Listen(const char *addr, const char *port,
               std::unique_ptr<provider::Listener> *listener) override;
    // Resolution is synchronous (getaddrinfo); `timeout_ms` bounds nothing
    // more. EINVAL for a malformed address/port, EHOSTUNREACH for no host.
    int Resolve(const char *addr, const char *port, int timeout_ms,
                std::unique_ptr<provider::CmId> *id) override;

    // How long a target holds a message that found no posted receive before
    // failing the sender with IBV_WC_RNR_RETRY_EXC_ERR. Applies to stalls
    // that begin after the call.
    void SetReceiverNotReadyTimeout(std::chrono::milliseconds timeout);
    // How long an outgoing request, once it reached the peer, waits for the
    // server to accept or reject it before kUnreachable. Applies to
    // connections that reach their peer after the call.
    void SetAwaitingReplyTimeout(std::chrono::milliseconds timeout);
    // Inline progress (tcp_completion_channel.h): how long after an
    // application thread's inline wait on a connection ends the provider
    // keeps expecting the next one; a wait that ends within it extends it
    // (checked when it expires, so it ends one to two lingers after the
    // last wait). Meanwhile the socket stays out of the progress engine's
    // epoll set (so a reply arriving between two waits does not wake the
    // progress thread) and small unsignaled writes wait for the next post
    // or wait to share its sendmsg. After it, the progress thread takes
    // over again. Zero: unmute as each wait returns and never defer a send.
    // While an application keeps waiting inline, the progress thread checks
    // the linger about once per linger period on a timer; timer interrupts
    // are not free (tens of microseconds in some VMs), hence milliseconds.
    // The linger also bounds how late a small unsignaled request posted
    // after an inline wait may go out if the application makes no further
    // call, and how late one-sided requests are served if the application
    // stops waiting inline.
    // The process's knob (tcp_options.h: RPMA_TCP_INLINE_LINGER_US or
    // rpma_ext_tcp_set_options, default kDefaultInlineLinger), shared by
    // every Device.
    void SetInlineLinger(std::chrono::microseconds linger);
    std::chrono::microseconds InlineLinger() const {
        return std::chrono::microseconds(inline_linger_us_.load());
    }

    // The progress thread's engine; tests stall it (Post a blocking task) to
    // show who makes progress.
    ProgressEngine &Engine() { return engine_; }

  private:
    ibv_device device_{};
    ibv_context context_{};
    MemoryTable memory_;
    QpNumberAllocator qp_numbers_;
    ConnectionDeps Deps() {
        return {&engine_,
                &memory_,
                &rnr_timeout_ms_,
                &reply_timeout_ms_,
                &inline_linger_us_,
                &RequestTimeoutMs(),
                persist_workers_.get()};
    }

    std::atomic<int> rnr_timeout_ms_{static_cast<int>(kDefaultReceiverNotReadyTimeout.count())};
    std::atomic<int> reply_timeout_ms_{static_cast<int>(kDefaultAwaitingReplyTimeout.count())};
    // The process's knob (tcp_options.h): one linger for every device.
    std::atomic<int> &inline_linger_us_;
    std::atomic<uint64_t> next_pd_id_{1};
    // Declared last: destroyed first, so the progress thread stops before
    // anything it uses goes away.
    ProgressEngine engine_;
    // Destroyed before the engine: a worker's last answer may still use it.
    // Sized by the process's knob (tcp_options.h) when it starts.
    std::unique_ptr<PersistWorkers> persist_workers_;
};

// The process-wide device. It is never destroyed: application objects with
// static storage duration may still use it during exit.
Device &GetDevice();
bool OwnsContext(ibv_context *ctx);

}  // namespace rpma::provider::tcp

#endif  // RPMA_CORE_SRC_PROVIDER_TCP_TCP_DEVICE_H
