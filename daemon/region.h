// One persistent-memory region: a file of the pool, or a range of a
// device-DAX character device, mapped with libpmem2. Clients write into the
// mapping remotely (rpmad registers bytes() with rpma); the daemon makes
// ranges durable with Persist(): pmem2's persist function on DAX (cache
// flushes), msync on ordinary files.
#ifndef DAEMON_REGION_H
#define DAEMON_REGION_H

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>

#include "daemon/status.h"

struct pmem2_map;

namespace rpmad {

// The smallest store that reaches the persistence domain, as pmem2 reports
// it for the mapping: byte (DAX with eADR), cache line (DAX), page (a file
// on an ordinary filesystem, made durable with msync).
enum class Granularity { kByte, kCacheLine, kPage };
const char *GranularityName(Granularity g);  // "byte", "cache-line", "page"

// How a range of the region is made durable, which follows from the
// granularity: "msync" (page: write the page cache back), "cpu-flush"
// (cache line: write the CPU cache lines back, then a fence) or "fence"
// (byte: the CPU caches are in the persistence domain, eADR). rpma_core's
// tcp provider flushes cache lines on every DAX mapping, eADR too.
const char *PersistMethodName(Granularity g);

// What holds a region's bytes.
enum class Backing {
    kPoolFile,   // <pool_dir>/regions/<name>.pmem, created and deleted by rpmad
    kDeviceDax,  // a range of /dev/daxX.Y, configured (storage.devdax_regions)
};
const char *BackingName(Backing backing);  // "file", "devdax"

// A region name is also a file name: [A-Za-z0-9][A-Za-z0-9._-]{0,63}.
// INVALID_ARGUMENT with that rule in the message otherwise.
Status ValidateRegionName(std::string_view name);

// What the catalog knows of a region.
struct RegionMetadata {
    std::string name;
    std::string path;  // the file, <pool_dir>/regions/<name>.pmem, or the device
    uint64_t size = 0;
    uint64_t id = 0;
    int64_t created_unix = 0;
    Backing backing = Backing::kPoolFile;
    uint64_t offset = 0;  // where the region starts in the device (kDeviceDax)
};

// Owned by shared_ptr: whoever still holds one (a session with the mapping
// registered) keeps the mapping valid after the region is deleted; the last
// owner unmaps it.
class Region {
  public:
    // Maps the open file `fd`, which must be metadata.size bytes long. The
    // caller keeps `fd` (the mapping does not need it once made).
    // FAILED_PRECONDITION with pmem2's reason when it cannot be mapped.
    static StatusOr<std::shared_ptr<Region>> Map(int fd, RegionMetadata metadata);

    // Opens metadata.path and maps it. FAILED_PRECONDITION when the file is
    // missing, has another size than the catalog says, or cannot be mapped;
    // the message says which.
    static StatusOr<std::shared_ptr<Region>> Open(RegionMetadata metadata);

    // Maps [metadata.offset, metadata.offset + metadata.size) of the
    // device-DAX character device metadata.path; size 0 maps to the end of
    // the device (size() then says how much). FAILED_PRECONDITION, naming
    // the path and the fix, when the path is not a device-DAX device, the
    // range is not aligned to the device's alignment or does not fit it, or
    // pmem2 cannot map it.
    static StatusOr<std::shared_ptr<Region>> OpenDeviceDax(RegionMetadata metadata);

    ~Region();
    Region(const Region &) = delete;
    Region &operator=(const Region &) = delete;

    const std::string &name() const { return metadata_.name; }
    uint64_t size() const { return metadata_.size; }
    const std::string &path() const { return metadata_.path; }
    // Random, given at creation: tells a re-created region from the old one.
    uint64_t id() const { return metadata_.id; }
    int64_t created_unix() const { return metadata_.created_unix; }
    Granularity granularity() const { return granularity_; }
    Backing backing() const { return metadata_.backing; }
    uint64_t offset() const { return metadata_.offset; }
    std::span<std::byte> bytes() const { return bytes_; }

    // Makes [offset, offset + length) durable. INVALID_ARGUMENT when the
    // range is not inside the region (checked without overflow). INTERNAL
    // when the write-back fails (msync: the disk failed): the region is
    // damaged from then on, and FAILED_PRECONDITION, naming the damage,
    // for every later call. Thread-safe.
    Status Persist(uint64_t offset, uint64_t length) const;

    // Why the region is damaged (a failed write-back), or "" when it is not.
    // After a failed write-back the kernel may have dropped the pages' dirty
    // state, so a later msync that succeeds proves nothing: the region stays
    // damaged until rpmad restarts.
    std::string damage() const;

  private:
    using PersistFn = void (*)(const void *ptr, size_t size);

    Region(RegionMetadata metadata, pmem2_map *map);

    RegionMetadata metadata_;
    pmem2_map *map_;
    std::span<std::byte> bytes_;
    Granularity granularity_;
    PersistFn persist_;
    mutable std::mutex damage_mu_;
    mutable std::string damage_;
};

}  // namespace rpmad

#endif  // DAEMON_REGION_H
