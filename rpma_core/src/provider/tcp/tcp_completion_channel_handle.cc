#include "rpma_core/src/provider/tcp/tcp_completion_channel_handle.h"

#include <cerrno>
#include <cstring>

#include "rpma_core/src/log.h"

namespace rpma::provider::tcp {

CompletionChannelHandle::~CompletionChannelHandle() {
    if (channel_->InUse())
        RPMA_LOG_ERROR(
            "destroying a completion channel failed: %s (delete every CQ that uses it first)",
            strerror(EBUSY));
}

}  // namespace rpma::provider::tcp
