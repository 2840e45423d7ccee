// Tests: tcp_acks_test (against a socket pair), and through connections
// tcp_remote_ops_test, tcp_liveness_test, tcp_hostile_requests_test.
#include "rpma_core/src/provider/tcp/tcp_acks.h"

#include <sys/socket.h>

#include "rpma_core/src/provider/tcp/tcp_socket.h"
#include "rpma_core/src/provider/tcp/tcp_wire.h"

namespace rpma::provider::tcp {

void Acknowledgements::Queue(OutboundQueue &out) {
    if (Due())
        out.PushAck(Take());
    else
        requested_ = false;
}

void Acknowledgements::BeforeFlush(int fd, OutboundQueue &out) {
    if (!requested_ && out.Empty())
        return;
    if (requested_ && out.Empty() && SendNow(fd, out))
        return;
    Queue(out);
}

bool Acknowledgements::SendNow(int fd, OutboundQueue &out) {
    if (!Due()) {
        requested_ = false;
        return true;  // nothing to acknowledge
    }
    const wire::EncodedHeader encoded = wire::EncodeHeader(wire::AckHeader(applied_));
    const ssize_t sent =
        SocketSend(fd, encoded.data(), encoded.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (sent <= 0)
        return false;  // queued instead; the queue's flush reports a failure
    const uint64_t sequence = Take();
    if (static_cast<size_t>(sent) < encoded.size()) {
        out.PushAck(sequence);
        out.MarkSent(static_cast<size_t>(sent));
    }
    return true;
}

}  // namespace rpma::provider::tcp
