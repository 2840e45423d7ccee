// Checksums of a region's extents (ChecksumRegion): XXH3-128 of each extent
// of a range, so that replicas are compared (verify) and only what differs
// is copied (repair) without moving the bytes. xxHash is compiled in
// (XXH_INLINE_ALL): the package gains no runtime library.
#ifndef DAEMON_CHECKSUM_H
#define DAEMON_CHECKSUM_H

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "daemon/status.h"

namespace rpmad {

inline constexpr char kChecksumAlgorithm[] = "xxh3-128";
inline constexpr size_t kChecksumBytes = 16;
inline constexpr uint64_t kMinExtentSize = 4096;
inline constexpr uint64_t kMaxExtentSize = 1ull << 30;
inline constexpr uint64_t kMaxExtents = 65536;

// INVALID_ARGUMENT, saying which rule, unless extent_size is a power of two
// in [kMinExtentSize, kMaxExtentSize], offset a multiple of it, length > 0,
// offset + length within `region_size` (checked without overflow) and the
// range at most kMaxExtents extents.
Status ValidateChecksumRange(uint64_t region_size, uint64_t offset, uint64_t length,
                             uint64_t extent_size);

// The checksums of [offset, offset + length) of `bytes` (validated), one
// per extent of extent_size, the last one shorter when the range ends
// inside one: each XXH3-128 as 16 bytes, high 64 bits first, big-endian
// (xxHash's canonical form).
std::string ChecksumExtents(std::span<const std::byte> bytes, uint64_t offset, uint64_t length,
                            uint64_t extent_size);

}  // namespace rpmad

#endif  // DAEMON_CHECKSUM_H
