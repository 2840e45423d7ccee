// ibv_comp_channel. Its fd keeps ibverbs' default (blocking) mode until the
// application changes it, which is what the provider contract asks for.
#ifndef RPMA_CORE_SRC_PROVIDER_VERBS_VERBS_COMPLETION_CHANNEL_H
#define RPMA_CORE_SRC_PROVIDER_VERBS_VERBS_COMPLETION_CHANNEL_H

#include <infiniband/verbs.h>

#include <memory>

#include "rpma_core/src/provider/provider.h"
#include "rpma_core/src/provider/verbs/verbs_owners.h"

namespace rpma::provider::verbs {

class CompletionChannel final : public provider::CompletionChannel {
  public:
    static int Create(ibv_context *context, std::unique_ptr<provider::CompletionChannel> *channel);

    explicit CompletionChannel(Owned<ibv_comp_channel> channel) : channel_(std::move(channel)) {}

    int Fd() const override { return channel_->fd; }
    int GetEvent(provider::CompletionQueue **cq) override;
    void AckEvents(provider::CompletionQueue *cq, unsigned int count) override;

    ibv_comp_channel *Raw() const { return channel_.get(); }

  private:
    Owned<ibv_comp_channel> channel_;
};

}  // namespace rpma::provider::verbs

#endif  // RPMA_CORE_SRC_PROVIDER_VERBS_VERBS_COMPLETION_CHANNEL_H
