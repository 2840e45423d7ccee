// ibv_comp_channel over an eventfd: each time an armed CQ fires, one unit is
// added and the CQ is queued; GetEvent takes one of each. Because the fd is
// blocking unless the application sets O_NONBLOCK on it, GetEvent behaves
// like ibv_get_cq_event in both modes.
#ifndef RPMA_CORE_SRC_PROVIDER_TCP_TCP_COMPLETION_CHANNEL_H
#define RPMA_CORE_SRC_PROVIDER_TCP_TCP_COMPLETION_CHANNEL_H

#include <memory>

#include "rpma_core/src/provider/provider.h"
#include "rpma_core/src/provider/tcp/tcp_signaling_queue.h"

namespace rpma::provider::tcp {

class CompletionQueue;

class CompletionChannel final : public provider::CompletionChannel {
  public:
    static int Create(std::unique_ptr<provider::CompletionChannel> *channel);

    int Fd() const override { return fired_.Fd(); }
    int GetEvent(provider::CompletionQueue **cq) override;
    void AckEvents(provider::CompletionQueue *cq, unsigned int count) override;

    void Fire(CompletionQueue *cq);

  private:
    SignalingQueue<CompletionQueue *> fired_{/*nonblocking=*/false};
};

}  // namespace rpma::provider::tcp

#endif  // RPMA_CORE_SRC_PROVIDER_TCP_TCP_COMPLETION_CHANNEL_H
