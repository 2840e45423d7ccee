// The byte ranges where replicas of a region differ, found chunk by chunk
// as verify reads them: replica 0 is the reference, and a range lists every
// other replica that differs from it somewhere inside the range.
#ifndef CLIENT_RPMACTL_DIFFERENCES_H
#define CLIENT_RPMACTL_DIFFERENCES_H

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace rpmactl {

struct DifferingRange {
    uint64_t offset = 0;
    uint64_t length = 0;
    std::vector<size_t> replicas;  // ascending indexes, never 0

    bool operator==(const DifferingRange &) const = default;
};

class DifferenceFinder {
  public:
    // chunks[r]: replica r's bytes at `offset`, all of one length. Chunks
    // come in ascending, non-overlapping order; a range that runs on into
    // the next chunk is joined with it.
    void Compare(uint64_t offset, const std::vector<std::span<const std::byte>> &chunks);
    // The ranges found so far, in order.
    std::vector<DifferingRange> Ranges() const;

  private:
    void Mark(uint64_t offset, size_t replica);

    std::vector<DifferingRange> ranges_;
};

}  // namespace rpmactl

#endif  // CLIENT_RPMACTL_DIFFERENCES_H
