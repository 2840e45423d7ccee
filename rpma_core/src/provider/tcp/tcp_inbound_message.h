// The message a connection is reading from its socket: its header, where
// its payload goes (registered memory, a posted receive's buffers, or a
// small buffer), how much of it arrived, and the phase of the reading.
// Plain data, owned by the connection and used under its lock.
#ifndef RPMA_CORE_SRC_PROVIDER_TCP_TCP_INBOUND_MESSAGE_H
#define RPMA_CORE_SRC_PROVIDER_TCP_TCP_INBOUND_MESSAGE_H

#include <array>
#include <cstddef>
#include <cstdint>

#include "rpma_core/src/provider/tcp/tcp_memory_table.h"
#include "rpma_core/src/provider/tcp/tcp_receive_queue.h"
#include "rpma_core/src/provider/tcp/tcp_wire.h"

namespace rpma::provider::tcp {

struct InboundMessage {
    // kPersisting: a persist worker makes the FLUSH in `header` durable;
    // the messages behind it wait in the socket until it is done.
    enum class Phase { kHeader, kPayload, kWaitingForReceive, kPersisting };
    Phase phase = Phase::kHeader;
    uint8_t header_bytes[wire::kHeaderSize] = {};
    size_t header_received = 0;
    wire::Header header;
    // Payload destination: registered memory (`destination`, or the
    // receive's buffers when into_receive), or `small` when empty.
    SegmentList destination;
    bool into_receive = false;
    const SegmentList &Destination() const { return into_receive ? receive.segments : destination; }
    MemorySegment atomic_target;
    std::array<uint8_t, wire::kMaxHandshakePayload> small{};
    size_t payload_length = 0;
    size_t payload_received = 0;
    // A READ_RESPONSE whose queue pair was destroyed: no WR to complete,
    // no memory to write (the application may reuse it). Its payload is
    // read through the stage and dropped.
    bool discard = false;
    bool has_receive = false;
    PostedReceive receive;
};

}  // namespace rpma::provider::tcp

#endif  // RPMA_CORE_SRC_PROVIDER_TCP_TCP_INBOUND_MESSAGE_H
