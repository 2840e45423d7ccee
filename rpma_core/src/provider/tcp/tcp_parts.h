// A WRITE, READ or FLUSH longer than one wire message (wire::kMaxMessageLength)
// goes as several requests, "parts", of that length (the last one the rest),
// on consecutive sequence numbers. The target executes each as it would any
// request, in order; the initiator completes the work request once, with the
// answer to its last part (by then every part was applied, or made durable),
// so the application sees one WR as on verbs, whatever its length.
#ifndef RPMA_CORE_SRC_PROVIDER_TCP_TCP_PARTS_H
#define RPMA_CORE_SRC_PROVIDER_TCP_TCP_PARTS_H

#include <algorithm>
#include <cstdint>

#include "rpma_core/src/provider/tcp/tcp_memory_table.h"
#include "rpma_core/src/provider/tcp/tcp_wire.h"

namespace rpma::provider::tcp {

// How many parts carry `length` bytes (at least one: an empty request is one).
inline uint64_t PartCount(uint64_t length) {
    return length <= wire::kMaxMessageLength
               ? 1
               : (length + wire::kMaxMessageLength - 1) / wire::kMaxMessageLength;
}

// Where part `index` of a `length`-byte request begins, and its length.
inline uint64_t PartOffset(uint64_t index) {
    return index * wire::kMaxMessageLength;
}
inline uint32_t PartLength(uint64_t length, uint64_t index) {
    return static_cast<uint32_t>(std::min(wire::kMaxMessageLength, length - PartOffset(index)));
}

// [offset, offset + length) of the concatenation of `segments`, as segments
// that own their regions (they travel in queued messages, or wait for a
// READ's response).
inline SegmentList SliceSegments(const SegmentList &segments, uint64_t offset, uint64_t length) {
    SegmentList slice;
    for (const MemorySegment &segment : segments) {
        if (length == 0)
            break;
        if (offset >= segment.length) {
            offset -= segment.length;
            continue;
        }
        MemorySegment piece = segment;
        piece.addr += offset;
        piece.length = std::min<uint64_t>(segment.length - offset, length);
        piece.Own();
        length -= piece.length;
        offset = 0;
        slice.push_back(std::move(piece));
    }
    return slice;
}

}  // namespace rpma::provider::tcp

#endif  // RPMA_CORE_SRC_PROVIDER_TCP_TCP_PARTS_H
