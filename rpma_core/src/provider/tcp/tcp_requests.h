// What the initiator sends for a posted work request: its send-queue entry
// (PendingWr) and its message, built and checked from what the application
// posted before anything of the connection changes (bad input: an error
// with a message, nothing queued), and the parts a long request goes in.
// The connection queues and sends them (tcp_connection_initiator.cc).
// Tests: tcp_requests_test.
#ifndef RPMA_CORE_SRC_PROVIDER_TCP_TCP_REQUESTS_H
#define RPMA_CORE_SRC_PROVIDER_TCP_TCP_REQUESTS_H

#include <infiniband/verbs.h>

#include <cstddef>
#include <cstdint>

#include "rpma_core/src/provider/provider.h"
#include "rpma_core/src/provider/tcp/tcp_memory_table.h"
#include "rpma_core/src/provider/tcp/tcp_outbound_queue.h"
#include "rpma_core/src/provider/tcp/tcp_send_queue.h"

namespace rpma::provider::tcp {

struct Request {
    PendingWr wr;
    OutboundMessage message;
    // The request's length, which may span several parts (tcp_parts.h).
    uint64_t length = 0;
};

// Where a request's local buffers are looked up (MemoryTable::ResolveLocal).
struct LocalMemory {
    MemoryTable *memory;
    uint64_t pd_id;
    RegionCache *cache;
};

// 0, or EINVAL (the request is malformed) or ENOMEM (`sq` has no room).
// A local buffer outside its region is no error here: the request then
// carries IBV_WC_LOC_PROT_ERR, as verbs reports it on completion.
int BuildSendRequest(const ibv_send_wr &wr, const SendQueue &sq, const LocalMemory &local,
                     Request *request);
int BuildFlushRequest(uint64_t remote_addr, uint32_t rkey, size_t length, FlushType type,
                      bool signaled, uint64_t wr_id, const SendQueue &sq, Request *request);
int BuildAtomicWriteRequest(uint64_t remote_addr, uint32_t rkey, const char value[8], bool signaled,
                            uint64_t wr_id, const SendQueue &sq, Request *request);

// Part `index` of `whole`, a request of `parts` parts and `length` bytes
// whose header carries the last part's sequence: only the last part asks
// for the ACK and carries the immediate data.
OutboundMessage RequestPart(const OutboundMessage &whole, uint32_t parts, uint64_t length,
                            uint32_t index);

// The status a NAK reports; IBV_WC_REM_OP_ERR for one a NAK may not carry.
ibv_wc_status NakStatus(uint32_t status);

}  // namespace rpma::provider::tcp

#endif  // RPMA_CORE_SRC_PROVIDER_TCP_TCP_REQUESTS_H
