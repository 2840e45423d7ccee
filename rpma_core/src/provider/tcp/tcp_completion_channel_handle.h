// What Device::CreateCompletionChannel hands out: the application's handle on
// a channel that the CQs created on it share. Destroying the handle while a
// CQ still uses the channel is refused as ibv_destroy_comp_channel refuses it
// (EBUSY, logged): the channel lives on until its last CQ is destroyed, so a
// caller that gets the order wrong gets an error, not a use-after-free.
#ifndef RPMA_CORE_SRC_PROVIDER_TCP_TCP_COMPLETION_CHANNEL_HANDLE_H
#define RPMA_CORE_SRC_PROVIDER_TCP_TCP_COMPLETION_CHANNEL_HANDLE_H

#include <memory>

#include "rpma_core/src/provider/provider.h"
#include "rpma_core/src/provider/tcp/tcp_completion_channel.h"

namespace rpma::provider::tcp {

class CompletionChannelHandle final : public provider::CompletionChannel {
  public:
    explicit CompletionChannelHandle(std::shared_ptr<tcp::CompletionChannel> channel)
        : channel_(std::move(channel)) {}
    ~CompletionChannelHandle() override;

    int Fd() const override { return channel_->Fd(); }
    int GetEvent(provider::CompletionQueue **cq) override { return channel_->GetEvent(cq); }
    int GetAckedEvent(provider::CompletionQueue **cq) override {
        return channel_->GetAckedEvent(cq);
    }
    int GetAckedEventWithin(provider::CompletionQueue **cq, int timeout_ms) override {
        return channel_->GetAckedEventWithin(cq, timeout_ms);
    }
    void AckEvents(provider::CompletionQueue *cq, unsigned int count) override {
        channel_->AckEvents(cq, count);
    }

    // For the CQs created on this channel.
    const std::shared_ptr<tcp::CompletionChannel> &Shared() const { return channel_; }

  private:
    const std::shared_ptr<tcp::CompletionChannel> channel_;
};

}  // namespace rpma::provider::tcp

#endif  // RPMA_CORE_SRC_PROVIDER_TCP_TCP_COMPLETION_CHANNEL_HANDLE_H
