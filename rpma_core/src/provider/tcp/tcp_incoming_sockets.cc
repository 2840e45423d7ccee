#include "rpma_core/src/provider/tcp/tcp_incoming_sockets.h"

#include <sys/epoll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "rpma_core/src/provider/tcp/tcp_wire.h"

namespace rpma::provider::tcp {

Arrival ClassifyArrival(const uint8_t *bytes, size_t length) {
    if (length < wire::kHeaderSize) {
        return wire::CouldStartHandshake(bytes, length, wire::Opcode::kConnectRequest,
                                         wire::Opcode::kConnectRequest)
                   ? Arrival::kNothingYet
                   : Arrival::kOther;
    }
    uint8_t header_bytes[wire::kHeaderSize];
    memcpy(header_bytes, bytes, sizeof(header_bytes));
    wire::Header header;
    if (wire::ParseHeader(header_bytes, &header) != wire::ParseError::kNone ||
        header.opcode != wire::Opcode::kConnectRequest)
        return Arrival::kOther;
    // ParseHeader bounds a CONNECT_REQUEST's length by kMaxHandshakePayload.
    if (length < wire::kHeaderSize + header.length)
        return Arrival::kNothingYet;
    wire::HandshakePrefix prefix;
    return wire::ParseHandshakePrefix(bytes + wire::kHeaderSize, header.length, &prefix)
               ? Arrival::kRequest
               : Arrival::kOther;
}

Arrival PeekArrival(int fd) {
    uint8_t bytes[wire::kHeaderSize + wire::kMaxHandshakePayload];
    const ssize_t got = SocketRecv(fd, bytes, sizeof(bytes), MSG_PEEK | MSG_DONTWAIT);
    if (got > 0)
        return ClassifyArrival(bytes, static_cast<size_t>(got));
    if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        return Arrival::kNothingYet;
    return Arrival::kGone;
}

void RefuseConnection(UniqueFd socket) {
    // A peer that keeps sending may leave more; then the close is a reset,
    // which it earned.
    uint8_t sink[512];
    for (int i = 0; i < 8; ++i) {
        if (SocketRecv(socket.Get(), sink, sizeof(sink), MSG_DONTWAIT) <= 0)
            break;
    }
    wire::Header reject;
    reject.opcode = wire::Opcode::kReject;
    const wire::EncodedHeader encoded = wire::EncodeHeader(reject);
    // A connection's fresh send buffer takes 64 bytes; if not, the peer
    // sees the close alone.
    [[maybe_unused]] const ssize_t sent =
        SocketSend(socket.Get(), encoded.data(), encoded.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
}

int IncomingSockets::Add(Held held, std::shared_ptr<EventHandler> handler) {
    const int fd = held.socket.Get();
    uint64_t token = 0;
    if (const int err =
            engine_->Add(fd, EPOLLIN | EPOLLRDHUP | EPOLLET, std::move(handler), &token);
        err != 0)
        return err;
    by_age_.push_back(Entry{std::move(held), token});
    by_fd_.emplace(fd, std::prev(by_age_.end()));
    return 0;
}

IncomingSockets::Held IncomingSockets::Release(std::list<Entry>::iterator it) {
    const int fd = it->held.socket.Get();
    engine_->Remove(it->token, fd);
    by_fd_.erase(fd);
    Held held = std::move(it->held);
    by_age_.erase(it);
    return held;
}

IncomingSockets::Held IncomingSockets::Take(int fd) {
    return Release(by_fd_.at(fd));
}

IncomingSockets::Held IncomingSockets::TakeOldest() {
    return Release(by_age_.begin());
}

std::vector<IncomingSockets::Held> IncomingSockets::TakeExpired(Clock::time_point now) {
    std::vector<Held> expired;
    while (!by_age_.empty() && NextExpiry() <= now)
        expired.push_back(TakeOldest());
    return expired;
}

std::vector<IncomingSockets::Held> IncomingSockets::TakeAll() {
    std::vector<Held> all;
    while (!by_age_.empty())
        all.push_back(TakeOldest());
    return all;
}

}  // namespace rpma::provider::tcp
