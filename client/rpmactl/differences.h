// verify's findings: where the replicas of a region differ, from the
// daemons' checksums of aligned extents (ChecksumRegion), coalesced into
// ranges a person can read.
//
// For each extent the reference is the checksum most of the in-sync
// replicas hold (all compared replicas when none is in sync); a replica
// differs there when its checksum is another. Adjacent differing extents
// whose differing replicas are the same make one range, so a replica that
// missed 100 MiB of writes is one range, not thousands of byte runs.
#ifndef CLIENT_RPMACTL_DIFFERENCES_H
#define CLIENT_RPMACTL_DIFFERENCES_H

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rpmactl {

struct DifferingRange {
    uint64_t offset = 0;
    uint64_t length = 0;
    std::vector<size_t> differing;  // ascending replica indexes
    std::vector<size_t> agreeing;   // the compared replicas that hold the reference
    // The in-sync replicas did not agree among themselves on a majority
    // value in some extent of the range (the reference is then the value
    // of the first in-sync replica among those most common).
    bool no_majority = false;
    // Filled in later, per entry of `differing`: bytes that differ from
    // the reference, when counted.
    std::vector<std::optional<uint64_t>> differing_bytes;

    bool operator==(const DifferingRange &) const = default;
};

class ExtentComparer {
  public:
    // `in_sync[r]`: replica r is in sync (its checksums decide the
    // reference); `compared[r]`: its checksums are given (a replica not
    // reached is not compared). The region is `size` bytes, cut into
    // `extent_size` extents (the last may be shorter).
    ExtentComparer(uint64_t size, uint64_t extent_size, std::vector<bool> in_sync,
                   std::vector<bool> compared);

    // checksums[r]: replica r's checksums (16 bytes each, as
    // ChecksumRegionResponse.checksums) of consecutive extents from the one
    // at `offset` (a multiple of extent_size), the same count for every
    // compared replica; empty for the others. Calls come in ascending,
    // contiguous order; a range running on into the next call is joined.
    void Add(uint64_t offset, const std::vector<std::string_view> &checksums);

    const std::vector<DifferingRange> &Ranges() const { return ranges_; }
    uint64_t differing_extents() const { return differing_extents_; }
    uint64_t compared_bytes() const { return compared_bytes_; }

  private:
    uint64_t size_;
    uint64_t extent_size_;
    std::vector<bool> in_sync_;
    std::vector<bool> compared_;
    std::vector<DifferingRange> ranges_;
    uint64_t differing_extents_ = 0;
    uint64_t compared_bytes_ = 0;
};

// Bytes that differ between two equally long buffers.
uint64_t CountDifferingBytes(std::string_view a, std::string_view b);

// An offset as a person reads it: "80 MiB" when a multiple of 1 MiB, "12
// KiB" of 1 KiB, else the byte count.
std::string FormatOffset(uint64_t offset);
// "[80 MiB, 190 MiB)".
std::string FormatRange(uint64_t offset, uint64_t length);

}  // namespace rpmactl

#endif  // CLIENT_RPMACTL_DIFFERENCES_H
