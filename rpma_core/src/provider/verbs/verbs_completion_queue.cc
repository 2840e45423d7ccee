#include "rpma_core/src/provider/verbs/verbs_completion_queue.h"

#include <cerrno>
#include <cstring>

#include "rpma_core/src/log.h"
#include "rpma_core/src/provider/verbs/verbs_completion_channel.h"

namespace rpma::provider::verbs {

int CompletionQueue::Create(ibv_context *context, int capacity,
                            provider::CompletionChannel *channel,
                            std::unique_ptr<provider::CompletionQueue> *cq) {
    ibv_comp_channel *raw_channel = nullptr;
    if (channel != nullptr) {
        auto *verbs_channel = dynamic_cast<CompletionChannel *>(channel);
        if (verbs_channel == nullptr) {
            RPMA_LOG_ERROR("a completion channel of another provider cannot signal a verbs CQ");
            return EINVAL;
        }
        raw_channel = verbs_channel->Raw();
    }
    // The object exists first so that the ibv_cq can point back at it.
    auto created = std::make_unique<CompletionQueue>();
    errno = 0;
    created->cq_.reset(ibv_create_cq(context, capacity, created.get(), raw_channel, 0));
    if (created->cq_ == nullptr) {
        int err = ErrnoOr(ENOMEM);
        RPMA_LOG_ERROR(
            "ibv_create_cq(%d entries) failed: %s (is the size within the device's "
            "max_cqe? see ibv_devinfo -v)",
            capacity, strerror(err));
        return err;
    }
    *cq = std::move(created);
    return 0;
}

}  // namespace rpma::provider::verbs
