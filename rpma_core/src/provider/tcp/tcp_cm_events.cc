// CmEvents (tcp_cm_events.h). Test: tcp_cm_events_test.
#include "rpma_core/src/provider/tcp/tcp_cm_events.h"

#include <utility>

namespace rpma::provider::tcp {

bool CmEvents::Emit(CmEventType type, std::vector<uint8_t> private_data) {
    if (type == CmEventType::kDisconnected) {
        if (disconnected_sent_)
            return false;
        disconnected_sent_ = true;
        final_sent_ = true;
    } else if (type != CmEventType::kEstablished) {
        if (final_sent_)
            return false;
        final_sent_ = true;
    }
    CmEvent event;
    event.type = type;
    event.private_data = std::move(private_data);
    queue_.Push(std::move(event));
    return true;
}

}  // namespace rpma::provider::tcp
