// The history of a cluster scenario's writers and its checker. A writer
// logs, one line each (flushed per line, so a killed writer's log is what it
// saw): "invoke w SLOT VERSION" before a WritePersist of slot SLOT's block,
// "ack w SLOT VERSION" once it is acknowledged, "invoke r SLOT" before a
// read and "read r SLOT SEEN" after it (SEEN: the version the block held,
// 0 for a block never written, "bad" for bytes no write made). Other lines
// are notes. Versions grow with each write and never repeat across writers,
// so a log of writers one after the other is one history in real time.
#ifndef RPMA_TESTS_INTEGRATION_CLUSTER_HISTORY_H
#define RPMA_TESTS_INTEGRATION_CLUSTER_HISTORY_H

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace rpma::testing {

inline constexpr size_t kBlock = 4096;

// The block a write of `version` to `slot` carries: its slot, version and
// seed first, then bytes derived from them, so a torn or misplaced block
// shows.
std::vector<std::byte> Block(uint64_t slot, uint64_t version, uint64_t seed);
// The version `block` holds for `slot`: 0 when all zero, nullopt when no
// write of that slot and seed made it.
std::optional<uint64_t> VersionIn(std::span<const std::byte> block, uint64_t slot, uint64_t seed);

struct Op {
    enum Kind { kInvokeWrite, kAckWrite, kInvokeRead, kRead } kind;
    uint64_t slot = 0;
    uint64_t version = 0;  // kRead: the version seen
    bool bad = false;      // kRead: bytes of no write
};

// Appends the operations of `log` to *history; false with *error on a line
// that starts like an operation but does not parse.
bool ParseHistory(const std::string &log, std::vector<Op> *history, std::string *error);

// "" when no read returned a version older than a write of its slot
// acknowledged before the read was invoked (nor bytes of no write);
// otherwise the first such read.
std::string CheckReads(const std::vector<Op> &history);

// "" when every image (one per in-sync replica: `slots` blocks from offset
// 0) holds, in every slot, the same bytes as the others, and those are the
// block of the slot's latest acknowledged write or of a write invoked after
// it (an unacknowledged write may have landed), or zeros when none was
// acknowledged; otherwise what differs.
std::string CheckFinal(const std::vector<Op> &history, size_t slots, uint64_t seed,
                       const std::vector<std::vector<std::byte>> &images);

}  // namespace rpma::testing

#endif  // RPMA_TESTS_INTEGRATION_CLUSTER_HISTORY_H
