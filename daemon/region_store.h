// rpmad's regions: files in <pool_dir>/regions, mapped with libpmem2, listed
// in a crash-safe catalog (catalog.h). Layout of a pool directory:
//   rpmad.lock            flock()ed by the one rpmad that serves the pool
//   catalog               the regions (catalog.prev: the generation before)
//   regions/<name>.pmem   one file per region
//
// Crash safety. Create makes regions/<name>.pmem.tmp, allocates and syncs
// it, maps it, renames it to <name>.pmem and only then commits the catalog;
// Delete commits the catalog first and then unlinks the file. So the
// catalog never lists a file that was not whole, and a crash leaves at
// worst a file the catalog does not list. Open removes such leftovers
// (*.pmem.tmp, and *.pmem files not in the catalog) and reports each one in
// problems().
//
// A catalog commit whose directory sync fails after the rename is not undone
// (the disk's state is unknown after a failed fsync, and a restart reads the
// new catalog): memory follows the new catalog. A deleted region is no
// longer served and its file is kept (the next Open removes it, or finds it
// whole if a power cut brought the old catalog back); a created region keeps
// its file and is unhealthy until a restart reads it back. The call fails
// saying what was done, and Create and Delete are refused
// (FAILED_PRECONDITION) until the store is opened again.
//
// Damage found by Open:
// - a region whose file is missing, has another size than the catalog says,
//   or cannot be mapped is unhealthy: List() shows it with its problem,
//   Get() refuses it, Delete() removes it; the other regions serve.
// - a damaged catalog (checksum, format) when catalog.prev is valid: the
//   pool comes up with that previous generation, the damaged file is kept
//   as catalog.damaged and problems() says so. The previous generation may
//   lack the last region created: files it does not list are adopted as
//   regions (named after the file, with a new id; one that cannot be
//   adopted is renamed to *.pmem.unadopted and left alone), never removed.
//   It may also still list the last region deleted (then unhealthy:
//   missing, or back if its file was not yet unlinked).
// - a device-DAX region (RegionStoreOptions::device_dax) that cannot be
//   mapped is unhealthy the same way.
// - a region whose write-back failed while serving (Region::damage) turns
//   unhealthy the same way, until rpmad restarts.
// - a damaged catalog and no valid previous one: Open fails with
//   FAILED_PRECONDITION naming the files and what to do.
// - no catalog at all but region files present: Open fails the same way
//   (the catalog was lost; an empty one would orphan every region).
//
// Device-DAX regions (a /dev/daxX.Y or a range of it) are configured, not
// created: the catalog does not list them, Open maps them after the pool's
// regions, and Delete refuses them. A device has no files to crash between,
// so they add nothing to the catalog's crash safety; and a region of the
// pool with the same name fails Open, since one name cannot mean both.
#ifndef DAEMON_REGION_STORE_H
#define DAEMON_REGION_STORE_H

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "daemon/catalog.h"
#include "daemon/latency_histogram.h"
#include "daemon/region.h"
#include "daemon/status.h"

namespace rpmad {

struct RegionInfo {
    std::string name;
    uint64_t size = 0;
    uint64_t id = 0;
    int64_t created_unix = 0;
    std::string path;
    std::string granularity;     // GranularityName(); empty when not mapped
    std::string persist_method;  // PersistMethodName(); empty when not mapped
    Backing backing = Backing::kPoolFile;
    bool healthy = false;
    std::string problem;  // why it is unhealthy
    // The replica-set record (serialized rpmad.v1.ReplicaSetRecord), empty
    // when none was recorded.
    std::string replica_set;
};

struct RegionStoreOptions {
    std::string pool_dir;
    uint64_t capacity = 0;  // sum of region sizes; 0 = filesystem free space only
    uint32_t max_regions = 1024;
    uint64_t max_region_size = 64ull << 30;
};

// All methods are thread-safe (one mutex; Create holds it while the file is
// allocated, which on some filesystems takes a while for a large region).
class RegionStore {
  public:
    static constexpr uint64_t kSizeAlignment = 4096;

    // Creates pool_dir (0700, parents too) if missing, takes the pool's
    // lock, loads the catalog and maps every region (see above for what
    // damage does). INVALID_ARGUMENT for an empty pool_dir or max_regions 0;
    // FAILED_PRECONDITION when another rpmad holds the pool or the catalog
    // cannot be trusted; PERMISSION_DENIED when the pool directory cannot be
    // written.
    //
    // `device_dax`: the regions on device DAX (storage.devdax_regions), each
    // with its name, path (/dev/daxX.Y), offset and size (0 = to the end of
    // the device); the store fills in the rest. FAILED_PRECONDITION when one
    // has the name of another region or overlaps another on its device;
    // INVALID_ARGUMENT for a bad name; one that cannot be mapped is
    // unhealthy, with why.
    static StatusOr<std::unique_ptr<RegionStore>> Open(const RegionStoreOptions &options,
                                                       std::vector<RegionMetadata> device_dax = {});

    ~RegionStore();
    RegionStore(const RegionStore &) = delete;
    RegionStore &operator=(const RegionStore &) = delete;

    // INVALID_ARGUMENT: bad name, size 0, not a multiple of 4096, above
    // max_region_size. ALREADY_EXISTS. RESOURCE_EXHAUSTED: max_regions
    // reached, capacity exceeded, or no room on the filesystem.
    // PERMISSION_DENIED: the pool cannot be written. On any failure no file
    // is left behind and the catalog is unchanged, except when the catalog
    // was replaced but its directory sync failed (see above): then the
    // region exists, unhealthy until a restart, and the error says so.
    // FAILED_PRECONDITION while changes wait for a restart.
    StatusOr<std::shared_ptr<Region>> Create(const std::string &name, uint64_t size);

    // NOT_FOUND; FAILED_PRECONDITION for an unhealthy region, with its problem.
    StatusOr<std::shared_ptr<Region>> Get(const std::string &name) const;

    // NOT_FOUND. Commits the catalog, then unlinks the file; unhealthy
    // regions too. Holders of the Region keep a valid mapping.
    // FAILED_PRECONDITION for a device-DAX region (it is configured) and
    // while changes wait for a restart. A catalog replaced whose directory
    // sync failed is an error, but the region is deleted all the same.
    Status Delete(const std::string &name);

    // Replaces the replica-set record of region `name` whose id is `id`, in
    // the catalog (a commit like Create's) and then in memory. The caller
    // compares and serializes the changes of one region. NOT_FOUND when the
    // region is gone (or is another incarnation); FAILED_PRECONDITION for an
    // unhealthy or device-DAX region, while changes wait for a restart, and
    // when the catalog cannot be replaced (`visible` false: nothing
    // changed); INVALID_ARGUMENT above kMaxReplicaSetRecordBytes. A catalog
    // replaced whose directory sync failed is an error with `visible` true:
    // the record is the new one, and changes wait for a restart (see above).
    Replacement SetReplicaSet(const std::string &name, uint64_t id, std::string record);

    std::vector<RegionInfo> List() const;  // sorted by name
    // One region as List() shows it (unhealthy too); NOT_FOUND.
    StatusOr<RegionInfo> Find(const std::string &name) const;

    // What Open found and cleaned up, and every unhealthy region; one
    // sentence each.
    std::vector<std::string> problems() const;

    uint64_t used_bytes() const;  // sum of the pool's region sizes (not device DAX)
    size_t region_count() const;  // unhealthy regions included
    const std::string &pool_dir() const { return options_.pool_dir; }
    // How long each catalog replacement took (CommitCatalog: write, fsync,
    // renames, directory fsync), failed ones included.
    const LatencyHistogram &catalog_commit_time() const { return catalog_commit_time_; }

  private:
    struct Slot {
        CatalogEntry entry;              // of a device-DAX region: name, size, id; no file
        std::shared_ptr<Region> region;  // null when it could not be mapped
        std::string problem;
        Backing backing = Backing::kPoolFile;
        std::string device;  // kDeviceDax: the device; empty otherwise
    };
    // Why the slot is unhealthy: it could not be mapped, or its region is
    // damaged (Region::damage); "" when it is healthy.
    static std::string ProblemOf(const Slot &slot);
    RegionInfo InfoOf(const std::string &name, const Slot &slot) const;

    RegionStore(RegionStoreOptions options, std::vector<RegionMetadata> device_dax, int lock_fd);

    std::string regions_dir() const;
    std::string FilePath(const std::string &file_name) const;
    Status LoadRegions();
    StatusOr<std::vector<std::string>> ListRegionsDir() const;
    bool IsListedLocked(const std::string &file_name) const;
    void AdoptUnlisted(const std::vector<std::string> &names);
    void RemoveLeftovers(const std::vector<std::string> &names);
    Status AttachDeviceDax();
    Replacement CommitWith(std::map<std::string, Slot> *slots);
    Status RefuseIfNotDurableLocked() const;
    std::string RestartAdvice() const;
    Catalog CatalogOf(const std::map<std::string, Slot> &slots) const;
    StatusOr<std::shared_ptr<Region>> MakeRegionFile(const RegionMetadata &metadata);
    StatusOr<std::shared_ptr<Region>> AllocateAndMap(int fd, const std::string &tmp_path,
                                                     const RegionMetadata &metadata);
    uint64_t UsedBytesLocked() const;
    uint64_t UnusedIdLocked() const;

    const RegionStoreOptions options_;
    const std::vector<RegionMetadata> device_dax_;
    const int lock_fd_;

    mutable std::mutex mu_;
    uint64_t generation_ = 0;            // of the catalog on disk
    std::map<std::string, Slot> slots_;  // by name
    std::vector<std::string> notes_;     // what Open found
    // Why a catalog change in place may not be durable; while set, Create
    // and Delete are refused.
    std::string not_durable_;
    LatencyHistogram catalog_commit_time_;
};

}  // namespace rpmad

#endif  // DAEMON_REGION_STORE_H
