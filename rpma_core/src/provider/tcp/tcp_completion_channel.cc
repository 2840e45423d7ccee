#include "rpma_core/src/provider/tcp/tcp_completion_channel.h"

#include <cerrno>
#include <cstring>

#include "rpma_core/src/log.h"
#include "rpma_core/src/provider/tcp/tcp_completion_queue.h"

namespace rpma::provider::tcp {

int CompletionChannel::Create(std::unique_ptr<provider::CompletionChannel> *channel) {
    auto created = std::make_unique<CompletionChannel>();
    if (!created->fired_.Valid()) {
        const int err = errno;
        RPMA_LOG_ERROR("cannot create a completion channel: eventfd failed: %s", strerror(err));
        return err;
    }
    *channel = std::move(created);
    return 0;
}

int CompletionChannel::GetEvent(provider::CompletionQueue **cq) {
    CompletionQueue *fired = nullptr;
    const int err = fired_.Pop(&fired);
    if (err != 0)
        return err;
    fired->NoteEventDelivered();
    *cq = fired;
    return 0;
}

void CompletionChannel::AckEvents(provider::CompletionQueue *cq, unsigned int count) {
    if (auto *tcp_cq = dynamic_cast<CompletionQueue *>(cq))
        tcp_cq->NoteEventsAcked(count);
}

void CompletionChannel::Fire(CompletionQueue *cq) {
    fired_.Push(cq);
}

}  // namespace rpma::provider::tcp
