// The GPSPM flush server: a client that cannot make its writes durable by
// itself sends a flush request; the daemon persists the range (small ones
// on the data-plane thread, large ones on PersistWorkers, in order per
// session) and answers in the request's response slot.
#include <algorithm>

#include "daemon/data_plane.h"
#include "daemon/data_plane_state.h"
#include "daemon/log.h"
#include "proto/rpmad/v1/data_plane_wire.h"

namespace rpmad {

void DataPlane::OnCompletions(Link &link) {
    rpma::CompletionQueue cq = link.conn->Cq();
    if (auto waited = cq.Wait(); !waited.ok() && waited.error().code() != RPMA_E_NO_COMPLETION) {
        Log().warn("session {}: waiting for completions failed: {}",
                   wire::SessionIdString(link.session_id), waited.error().message());
        return Close(link.session_id, true);
    }
    ibv_wc completions[16];
    for (;;) {
        auto count = cq.Poll(completions);
        if (!count.ok()) {
            Log().warn("session {}: polling completions failed: {}",
                       wire::SessionIdString(link.session_id), count.error().message());
            return Close(link.session_id, true);
        }
        if (*count == 0)
            return;
        const uint64_t session_id = link.session_id;
        for (int i = 0; i < *count; ++i) {
            const ibv_wc &done = completions[i];
            if (done.status == IBV_WC_WR_FLUSH_ERR) {
                // The queue pair is going down: the connection's own event
                // (closed by the client, or lost) follows, says which, and
                // closes the session.
                return;
            }
            if (done.status != IBV_WC_SUCCESS) {
                // A failed receive or response: the connection is broken.
                Log().warn("session {}: {} failed: {}", wire::SessionIdString(session_id),
                           done.opcode == IBV_WC_RECV ? "a receive" : "a response",
                           ibv_wc_status_str(done.status));
                return Close(session_id, true);
            }
            if (done.opcode == IBV_WC_RECV) {
                ServeFlush(link, static_cast<uint32_t>(done.wr_id), done.byte_len);
                if (!links_.count(session_id))
                    return;
            }
        }
    }
}

void DataPlane::ServeFlush(Link &link, uint32_t slot, uint32_t received) {
    if (slot >= wire::kMaxFlushesInFlight)
        return Close(link.session_id, true);
    // Only the `received` bytes are this message's: the rest of the slot
    // still holds the request it took before.
    std::byte *request_bytes = link.messages.get() + slot * wire::kFlushRequestSize;
    const auto request = wire::DecodeFlushRequest(
        std::span(request_bytes, std::min<size_t>(received, wire::kFlushRequestSize)));
    if (!request) {
        counters_.flushes_rejected++;
        Log().warn("session {}: malformed flush request ({} bytes; a request is {})",
                   wire::SessionIdString(link.session_id), received, wire::kFlushRequestSize);
    }
    link.waiting.push_back({slot, request, std::chrono::steady_clock::now()});
    ServeWaiting(link.session_id);
}

void DataPlane::ServeWaiting(uint64_t session_id) {
    for (;;) {
        auto it = links_.find(session_id);
        if (it == links_.end())
            return;  // answering closed the session
        Link &link = *it->second;
        if (link.persisting || link.waiting.empty())
            return;
        const WaitingFlush next = link.waiting.front();
        link.waiting.pop_front();
        if (!next.request) {
            Answer(link, next.slot, {0, wire::FlushStatus::kMalformed});
            continue;
        }
        const wire::FlushRequest request = *next.request;
        if (request.length <= PersistWorkers::kInlineBytes) {
            FinishFlush(link, next.slot, request, next.received,
                        link.region->region->Persist(request.offset, request.length));
            continue;
        }
        link.persisting = true;
        persist_workers_->Submit({link.region->region, request.offset, request.length,
                                  [this, session_id, token = link.token, next](Status persisted) {
                                      loop_->Post([=, this, persisted = std::move(persisted)] {
                                          OnPersisted(session_id, token, next, persisted);
                                      });
                                  }});
    }
}

void DataPlane::OnPersisted(uint64_t session_id, uint64_t token, const WaitingFlush &flush,
                            const Status &persisted) {
    auto it = links_.find(session_id);
    if (it == links_.end() || it->second->token != token)
        return;  // the session ended meanwhile: nobody waits for the answer
    it->second->persisting = false;
    FinishFlush(*it->second, flush.slot, *flush.request, flush.received, persisted);
    ServeWaiting(session_id);
}

void DataPlane::FinishFlush(Link &link, uint32_t slot, const wire::FlushRequest &request,
                            std::chrono::steady_clock::time_point received,
                            const Status &persisted) {
    counters_.gpspm_flush_time.Observe(std::chrono::steady_clock::now() - received);
    wire::FlushResponse response{request.request_id, wire::FlushStatus::kOk};
    if (persisted.ok()) {
        counters_.flushes++;
        counters_.bytes_flushed += request.length;
        sessions_.CountFlush(link.session_id, request.length);
    } else if (persisted.code() == StatusCode::kInvalidArgument) {
        counters_.flushes_rejected++;
        response.status = wire::FlushStatus::kOutOfRange;
        Log().warn("session {}: flush request refused: {}", wire::SessionIdString(link.session_id),
                   persisted.message());
    } else {
        // The disk failed under the region (it is damaged now): the
        // session hears it; the daemon and the other regions go on.
        counters_.flushes_rejected++;
        counters_.errors++;
        response.status = wire::FlushStatus::kFailed;
        Log().error("session {}: flush request failed: {}", wire::SessionIdString(link.session_id),
                    persisted.message());
    }
    Answer(link, slot, response);
}

void DataPlane::Answer(Link &link, uint32_t slot, const wire::FlushResponse &response) {
    // The slot takes the next request once this one is answered, so a
    // session never has more requests than slots in the daemon.
    const size_t response_offset =
        wire::kMaxFlushesInFlight * wire::kFlushRequestSize + slot * wire::kFlushResponseSize;
    wire::EncodeFlushResponse(response,
                              std::span<std::byte, wire::kFlushResponseSize>(
                                  link.messages.get() + response_offset, wire::kFlushResponseSize));
    const void *context = reinterpret_cast<const void *>(uintptr_t{slot});
    auto posted = link.conn->Recv(*link.messages_mr, slot * wire::kFlushRequestSize,
                                  wire::kFlushRequestSize, context);
    auto sent = posted.ok()
                    ? link.conn->Send(*link.messages_mr, response_offset, wire::kFlushResponseSize,
                                      RPMA_F_COMPLETION_ALWAYS, context)
                    : posted;
    if (!sent.ok()) {
        Log().warn("session {}: answering a flush request failed: {}",
                   wire::SessionIdString(link.session_id), sent.error().message());
        Close(link.session_id, true);
    }
}

}  // namespace rpmad
