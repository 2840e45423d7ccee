#include "daemon/checksum.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <algorithm>

#include "tools/sanitizers/annotations.h"

namespace rpmad {

Status ValidateChecksumRange(uint64_t region_size, uint64_t offset, uint64_t length,
                             uint64_t extent_size) {
    auto invalid = [](const std::string &why) {
        return Status(StatusCode::kInvalidArgument, "ChecksumRegion: " + why);
    };
    if (extent_size < kMinExtentSize || extent_size > kMaxExtentSize ||
        (extent_size & (extent_size - 1)) != 0)
        return invalid("extent_size " + std::to_string(extent_size) +
                       " is not a power of two from 4096 to 1073741824 (1 GiB)");
    if (offset % extent_size != 0)
        return invalid("offset " + std::to_string(offset) + " is not a multiple of extent_size " +
                       std::to_string(extent_size));
    if (length == 0)
        return invalid("length is 0: ask for at least one byte");
    // Written so that offset + length is never computed: it could wrap.
    if (offset > region_size || length > region_size - offset)
        return invalid("range [" + std::to_string(offset) + ", +" + std::to_string(length) +
                       ") is outside the region of " + std::to_string(region_size) + " bytes");
    const uint64_t extents = length / extent_size + (length % extent_size != 0);
    if (extents > kMaxExtents)
        return invalid("the range holds " + std::to_string(extents) + " extents, more than " +
                       std::to_string(kMaxExtents) + ": ask for a shorter range or larger extents");
    return Status();
}

std::string ChecksumExtents(std::span<const std::byte> bytes, uint64_t offset, uint64_t length,
                            uint64_t extent_size) {
    std::string out;
    out.reserve((length / extent_size + 1) * kChecksumBytes);
    // The region's bytes as they are: clients' one-sided writes land with
    // nothing this thread synchronizes with (the replica-set record, not
    // memory ordering, says when they are final).
    const rpma::sanitizers::IgnoreReadsInScope as_they_are;
    for (uint64_t done = 0; done < length; done += extent_size) {
        const uint64_t size = std::min(extent_size, length - done);
        const XXH128_hash_t hash = XXH3_128bits(bytes.data() + offset + done, size);
        XXH128_canonical_t canonical;
        XXH128_canonicalFromHash(&canonical, hash);  // high 64 bits first, big-endian
        out.append(reinterpret_cast<const char *>(canonical.digest), sizeof(canonical.digest));
    }
    return out;
}

}  // namespace rpmad
