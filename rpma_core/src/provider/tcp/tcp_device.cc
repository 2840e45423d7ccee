#include "rpma_core/src/provider/tcp/tcp_device.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

#include "rpma_core/src/log.h"
#include "rpma_core/src/provider/tcp/tcp_cm_id.h"
#include "rpma_core/src/provider/tcp/tcp_completion_channel_handle.h"
#include "rpma_core/src/provider/tcp/tcp_completion_queue.h"
#include "rpma_core/src/provider/tcp/tcp_connection.h"
#include "rpma_core/src/provider/tcp/tcp_listener.h"
#include "rpma_core/src/provider/tcp/tcp_options.h"
#include "rpma_core/src/provider/tcp/tcp_protection_domain.h"
#include "rpma_core/src/provider/tcp/tcp_socket.h"

namespace rpma::provider::tcp {

Device::Device() : inline_linger_us_(InlineLingerKnob().value) {
    // Like soft-iWARP (siw), the kernel's RDMA over TCP: an RNIC speaking an
    // iWARP-style transport. No kernel device backs it, hence no fds.
    device_.node_type = IBV_NODE_RNIC;
    device_.transport_type = IBV_TRANSPORT_IWARP;
    strncpy(device_.name, kName, sizeof(device_.name) - 1);
    strncpy(device_.dev_name, kName, sizeof(device_.dev_name) - 1);
    context_.device = &device_;
    context_.cmd_fd = -1;
    context_.async_fd = -1;
    context_.num_comp_vectors = 1;
    pthread_mutex_init(&context_.mutex, nullptr);
    persist_workers_ = std::make_unique<PersistWorkers>(PersistThreadsKnob().value);
}

int Device::AllocPd(std::unique_ptr<provider::ProtectionDomain> *pd) {
    if (pd == nullptr)
        return EINVAL;
    *pd = std::make_unique<ProtectionDomain>(next_pd_id_.fetch_add(1), memory_, engine_);
    return 0;
}

int Device::CreateCompletionChannel(std::unique_ptr<provider::CompletionChannel> *channel) {
    if (channel == nullptr)
        return EINVAL;
    return CompletionChannel::Create(channel);
}

int Device::CreateCq(int capacity, provider::CompletionChannel *channel,
                     std::unique_ptr<provider::CompletionQueue> *cq) {
    if (cq == nullptr)
        return EINVAL;
    if (capacity < 1 || capacity > CompletionQueue::kMaxCapacity) {
        RPMA_LOG_ERROR("cannot create a completion queue of %d entries (1 to %d)", capacity,
                       CompletionQueue::kMaxCapacity);
        return EINVAL;
    }
    auto *tcp_channel = dynamic_cast<CompletionChannelHandle *>(channel);
    if (channel != nullptr && tcp_channel == nullptr) {
        RPMA_LOG_ERROR("cannot create a completion queue: the channel is not the tcp provider's");
        return EINVAL;
    }
    *cq = std::make_unique<CompletionQueue>(
        capacity, tcp_channel != nullptr ? tcp_channel->Shared() : nullptr);
    return 0;
}

int Device::Listen(const char *addr, const char *port,
                   std::unique_ptr<provider::Listener> *listener) {
    ListenerLimits limits;
    limits.max_pending = static_cast<size_t>(MaxPendingKnob().value.load());
    limits.max_handshaking = static_cast<size_t>(MaxHandshakingKnob().value.load());
    return Listener::Create(Deps(), CmIdDeps{&context_, &qp_numbers_}, limits, addr, port,
                            listener);
}

int Device::Resolve(const char *addr, const char *port, int /*timeout_ms*/,
                    std::unique_ptr<provider::CmId> *id) {
    if (id == nullptr)
        return EINVAL;
    std::vector<SocketAddress> addresses;
    if (const int err = ResolveAddresses(addr, port, /*passive=*/false, &addresses); err != 0)
        return err;
    auto connection = Connection::CreateActive(Deps(), std::move(addresses));
    if (connection == nullptr)
        return EMFILE;
    *id = std::make_unique<CmId>(CmIdDeps{&context_, &qp_numbers_}, std::move(connection));
    return 0;
}

void Device::SetReceiverNotReadyTimeout(std::chrono::milliseconds timeout) {
    rnr_timeout_ms_.store(static_cast<int>(timeout.count()));
}

void Device::SetAwaitingReplyTimeout(std::chrono::milliseconds timeout) {
    reply_timeout_ms_.store(static_cast<int>(timeout.count()));
}

void Device::SetInlineLinger(std::chrono::microseconds linger) {
    inline_linger_us_.store(static_cast<int>(
        std::clamp<int64_t>(linger.count(), InlineLingerKnob().min, InlineLingerKnob().max)));
}

Device &GetDevice() {
    // Constructed in place and never destroyed (see the header).
    alignas(Device) static unsigned char storage[sizeof(Device)];
    static Device *const device = ::new (storage) Device();
    return *device;
}

bool OwnsContext(ibv_context *ctx) {
    return ctx != nullptr && ctx == GetDevice().Context();
}

}  // namespace rpma::provider::tcp
