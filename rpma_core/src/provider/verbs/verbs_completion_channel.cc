#include "rpma_core/src/provider/verbs/verbs_completion_channel.h"

#include <cerrno>
#include <cstring>

#include "rpma_core/src/log.h"
#include "rpma_core/src/provider/verbs/verbs_completion_queue.h"

namespace rpma::provider::verbs {

int CompletionChannel::Create(ibv_context *context,
                              std::unique_ptr<provider::CompletionChannel> *channel) {
    errno = 0;
    Owned<ibv_comp_channel> created(ibv_create_comp_channel(context));
    if (created == nullptr) {
        int err = ErrnoOr(ENOMEM);
        RPMA_LOG_ERROR(
            "ibv_create_comp_channel failed: %s (out of file descriptors? check "
            "ulimit -n)",
            strerror(err));
        return err;
    }
    *channel = std::make_unique<CompletionChannel>(std::move(created));
    return 0;
}

int CompletionChannel::GetEvent(provider::CompletionQueue **cq) {
    ibv_cq *fired = nullptr;
    void *cq_context = nullptr;
    errno = 0;
    if (ibv_get_cq_event(channel_.get(), &fired, &cq_context) != 0)
        return ErrnoOr(EIO);  // EAGAIN: the application made the fd non-blocking
    // Every CQ of this provider carries its owner as the CQ context.
    *cq = static_cast<CompletionQueue *>(cq_context);
    return 0;
}

void CompletionChannel::AckEvents(provider::CompletionQueue *cq, unsigned int count) {
    auto *verbs_cq = dynamic_cast<CompletionQueue *>(cq);
    if (verbs_cq == nullptr) {
        RPMA_LOG_ERROR("acknowledging events of a completion queue of another provider");
        return;
    }
    // Unacknowledged events would make ibv_destroy_cq wait forever.
    ibv_ack_cq_events(verbs_cq->Raw(), count);
}

}  // namespace rpma::provider::verbs
