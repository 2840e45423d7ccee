// Building a posted work request's send-queue entry and message
// (tcp_requests.h).
#include "rpma_core/src/provider/tcp/tcp_requests.h"

#include <cerrno>
#include <cstring>
#include <utility>

#include "rpma_core/src/log.h"
#include "rpma_core/src/provider/tcp/tcp_parts.h"
#include "rpma_core/src/provider/tcp/tcp_receive_queue.h"

namespace rpma::provider::tcp {
namespace {

// Largest IBV_SEND_INLINE payload (the QP's max_inline_data).
constexpr uint32_t kMaxInlineData = 64;

// Longer than any memory region: beyond the 47-bit user address space.
constexpr uint64_t kMaxFlushLength = uint64_t{1} << 47;

bool IsNakStatus(uint32_t status) {
    switch (status) {
        case IBV_WC_REM_ACCESS_ERR:
        case IBV_WC_REM_INV_REQ_ERR:
        case IBV_WC_REM_OP_ERR:
        case IBV_WC_RNR_RETRY_EXC_ERR:
            return true;
        default:
            return false;
    }
}

}  // namespace

int BuildSendRequest(const ibv_send_wr &wr, const SendQueue &sq, const LocalMemory &local,
                     Request *request) {
    PendingWr &pending = request->wr;
    OutboundMessage &message = request->message;
    switch (wr.opcode) {
        case IBV_WR_RDMA_WRITE:
            message.header.opcode = wire::Opcode::kWrite;
            pending.opcode = IBV_WC_RDMA_WRITE;
            break;
        case IBV_WR_RDMA_WRITE_WITH_IMM:
            message.header.opcode = wire::Opcode::kWriteWithImm;
            pending.opcode = IBV_WC_RDMA_WRITE;
            break;
        case IBV_WR_RDMA_READ:
            message.header.opcode = wire::Opcode::kReadRequest;
            pending.opcode = IBV_WC_RDMA_READ;
            pending.is_read = true;
            break;
        case IBV_WR_SEND:
            message.header.opcode = wire::Opcode::kSend;
            pending.opcode = IBV_WC_SEND;
            break;
        case IBV_WR_SEND_WITH_IMM:
            message.header.opcode = wire::Opcode::kSendWithImm;
            pending.opcode = IBV_WC_SEND;
            break;
        default:
            RPMA_LOG_ERROR("the tcp provider does not support work request opcode %d", wr.opcode);
            return EINVAL;
    }
    if (wr.num_sge < 0 || wr.num_sge > kMaxSge || (wr.num_sge > 0 && wr.sg_list == nullptr)) {
        RPMA_LOG_ERROR("cannot post a work request with %d gather entries (at most %d)", wr.num_sge,
                       kMaxSge);
        return EINVAL;
    }
    uint64_t total = 0;
    for (int i = 0; i < wr.num_sge; ++i)
        total += wr.sg_list[i].length;
    // A SEND fills one receive, so it is one message; WRITEs and READs go
    // in parts (tcp_parts.h) up to what a completion's byte_len holds.
    const bool send = wr.opcode == IBV_WR_SEND || wr.opcode == IBV_WR_SEND_WITH_IMM;
    const uint64_t longest = send ? wire::kMaxMessageLength : UINT32_MAX;
    if (total > longest) [[unlikely]] {
        RPMA_LOG_ERROR("cannot post a %llu-byte %s (at most %llu bytes)",
                       static_cast<unsigned long long>(total), send ? "send" : "work request",
                       static_cast<unsigned long long>(longest));
        return EINVAL;
    }
    pending.parts = static_cast<uint32_t>(PartCount(total));
    const bool inline_data = (wr.send_flags & IBV_SEND_INLINE) && !pending.is_read;
    if (inline_data && total > kMaxInlineData) {
        RPMA_LOG_ERROR("cannot post %llu bytes inline (at most %u)",
                       static_cast<unsigned long long>(total), kMaxInlineData);
        return EINVAL;
    }
    if (pending.Slots() > sq.Depth()) [[unlikely]] {
        RPMA_LOG_ERROR(
            "cannot post a %llu-byte read: it takes %u send queue slots (one per %llu bytes) "
            "and the queue pair has %u; read in pieces or create a deeper send queue",
            static_cast<unsigned long long>(total), pending.Slots(),
            static_cast<unsigned long long>(wire::kMaxMessageLength), sq.Depth());
        return EINVAL;
    }
    if (sq.Full(pending.Slots())) {
        RPMA_LOG_ERROR("cannot post: all %u send queue slots are in use (wait for completions)",
                       sq.Depth());
        return ENOMEM;
    }

    pending.wr_id = wr.wr_id;
    pending.signaled = (wr.send_flags & IBV_SEND_SIGNALED) != 0;
    pending.byte_len = static_cast<uint32_t>(total);
    for (int i = 0; i < wr.num_sge; ++i) {
        const ibv_sge &sge = wr.sg_list[i];
        if (sge.length == 0)
            continue;
        if (inline_data) {
            // Inline data is copied now, as verbs does; its lkey is ignored.
            memcpy(message.inline_payload.data() + message.inline_length,
                   reinterpret_cast<const void *>(static_cast<uintptr_t>(sge.addr)), sge.length);
            message.inline_length += sge.length;
            continue;
        }
        MemorySegment segment;
        const int access = pending.is_read ? IBV_ACCESS_LOCAL_WRITE : 0;
        if (!local.memory->ResolveLocal(sge, local.pd_id, access, &segment, local.cache)) {
            RPMA_LOG_ERROR(
                "local buffer %#llx+%u is not inside a memory region with lkey %#x%s; "
                "the work request completes with IBV_WC_LOC_PROT_ERR",
                static_cast<unsigned long long>(sge.addr), sge.length, sge.lkey,
                pending.is_read ? " and local write access" : "");
            pending.local_error = IBV_WC_LOC_PROT_ERR;
            break;
        }
        if (pending.is_read)
            segment.Own();  // written when the response comes
        (pending.is_read ? pending.read_destination : message.segments)
            .push_back(std::move(segment));
    }
    message.header.length = pending.parts == 1 ? static_cast<uint32_t>(total) : 0;
    if (wr.opcode != IBV_WR_SEND && wr.opcode != IBV_WR_SEND_WITH_IMM) {
        message.header.remote_addr = wr.wr.rdma.remote_addr;
        message.header.rkey = wr.wr.rdma.rkey;
    }
    if (wr.opcode == IBV_WR_RDMA_WRITE_WITH_IMM || wr.opcode == IBV_WR_SEND_WITH_IMM)
        message.header.imm = wr.imm_data;
    request->length = total;
    return 0;
}

int BuildFlushRequest(uint64_t remote_addr, uint32_t rkey, size_t length, FlushType type,
                      bool signaled, uint64_t wr_id, const SendQueue &sq, Request *request) {
    if (length > kMaxFlushLength) [[unlikely]] {
        RPMA_LOG_ERROR("cannot flush %zu bytes: no memory region is longer than %llu bytes", length,
                       static_cast<unsigned long long>(kMaxFlushLength));
        return EINVAL;
    }
    if (sq.Full()) {
        RPMA_LOG_ERROR("cannot post a flush: all %u send queue slots are in use", sq.Depth());
        return ENOMEM;
    }
    PendingWr &pending = request->wr;
    pending.wr_id = wr_id;
    pending.opcode = IBV_WC_RDMA_READ;  // as librpma's APM flush reports it
    pending.signaled = signaled;
    pending.parts = static_cast<uint32_t>(PartCount(length));
    OutboundMessage &message = request->message;
    message.header.opcode = wire::Opcode::kFlush;
    message.header.flags =
        type == FlushType::kPersistent ? wire::kFlushPersistent : wire::kFlushVisibility;
    message.header.length = pending.parts == 1 ? static_cast<uint32_t>(length) : 0;
    message.header.remote_addr = remote_addr;
    message.header.rkey = rkey;
    request->length = length;
    return 0;
}

int BuildAtomicWriteRequest(uint64_t remote_addr, uint32_t rkey, const char value[8], bool signaled,
                            uint64_t wr_id, const SendQueue &sq, Request *request) {
    if (value == nullptr) {
        RPMA_LOG_ERROR("cannot post an atomic write without a value");
        return EINVAL;
    }
    if (sq.Full()) {
        RPMA_LOG_ERROR("cannot post an atomic write: all %u send queue slots are in use",
                       sq.Depth());
        return ENOMEM;
    }
    PendingWr &pending = request->wr;
    pending.wr_id = wr_id;
    pending.opcode = IBV_WC_RDMA_WRITE;
    pending.signaled = signaled;
    pending.byte_len = wire::kAtomicWriteSize;
    OutboundMessage &message = request->message;
    message.header.opcode = wire::Opcode::kAtomicWrite;
    message.header.length = wire::kAtomicWriteSize;
    message.header.remote_addr = remote_addr;
    message.header.rkey = rkey;
    memcpy(message.inline_payload.data(), value, wire::kAtomicWriteSize);
    message.inline_length = wire::kAtomicWriteSize;
    return 0;
}

OutboundMessage RequestPart(const OutboundMessage &whole, uint32_t parts, uint64_t length,
                            uint32_t index) {
    OutboundMessage part;
    part.header = whole.header;
    part.header.length = PartLength(length, index);
    part.header.remote_addr = whole.header.remote_addr + PartOffset(index);
    part.header.sequence = whole.header.sequence - parts + 1 + index;
    if (index + 1 < parts) {
        // Only the last part asks for the ACK and carries the immediate
        // data (its receive completes the WRITE_WITH_IMM at the target).
        part.header.flags &= ~wire::kAckRequested;
        if (part.header.opcode == wire::Opcode::kWriteWithImm) {
            part.header.opcode = wire::Opcode::kWrite;
            part.header.imm = 0;
        }
    }
    part.segments = SliceSegments(whole.segments, PartOffset(index), part.header.length);
    return part;
}

ibv_wc_status NakStatus(uint32_t status) {
    return IsNakStatus(status) ? static_cast<ibv_wc_status>(status) : IBV_WC_REM_OP_ERR;
}

}  // namespace rpma::provider::tcp
