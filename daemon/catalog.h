// The region catalog: which regions a pool holds. It lives in
// <pool_dir>/catalog and is only ever replaced whole (LevelDB's CURRENT
// dance: write catalog.tmp, sync, rename, sync the directory), so a crash
// leaves the old or the new catalog, never a mix. The generation it
// replaces is kept as catalog.prev: if the current file is found damaged,
// the pool can still come up with the one before. Neither file is ever
// removed before its successor is in place, so a crash at any step of a
// commit or of a recovery leaves a catalog to start from.
//
// File format, little-endian:
//   magic "RPMADCAT" (8 bytes), format version u32 (1 or 2), record count
//   u32, generation u64, then per record:
//   name length u16, name, file name length u16, file name, size u64,
//   id u64, creation time i64 (Unix seconds),
//   version 2 only: replica-set record length u32, record;
//   and last a CRC-32C u32 of every byte before it.
// Version 2 is written only while some region has a replica-set record, so
// a pool that never recorded one can still go back to an rpmad that reads
// version 1 only; both versions are read.
#ifndef DAEMON_CATALOG_H
#define DAEMON_CATALOG_H

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/durable_file.h"
#include "daemon/status.h"

namespace rpmad {

inline constexpr char kCatalogFileName[] = "catalog";
inline constexpr char kPreviousCatalogFileName[] = "catalog.prev";
inline constexpr char kDamagedCatalogFileName[] = "catalog.damaged";
// The largest replica-set record an entry holds; bigger ones are refused
// before they reach the catalog (SetReplicaSet) and are damage in a file.
inline constexpr size_t kMaxReplicaSetRecordBytes = 64 * 1024;

struct CatalogEntry {
    std::string name;
    uint64_t size = 0;
    uint64_t id = 0;
    int64_t created_unix = 0;
    std::string file_name;  // inside <pool_dir>/regions
    // The region's replica-set record (rpmad.v1.ReplicaSetRecord, serialized;
    // the catalog does not look inside), empty when none was recorded.
    std::string replica_set;

    bool operator==(const CatalogEntry &) const = default;
};

struct Catalog {
    uint64_t generation = 0;  // grows by one with every committed change
    std::vector<CatalogEntry> entries;

    bool operator==(const Catalog &) const = default;
};

std::string EncodeCatalog(const Catalog &catalog);

// FAILED_PRECONDITION saying what is wrong (short, bad magic, unknown
// version, checksum mismatch, a record cut short or too large, bytes left
// over).
StatusOr<Catalog> DecodeCatalog(std::string_view bytes);

struct LoadedCatalog {
    enum class Source {
        kNone,      // no catalog yet: a new pool
        kCurrent,   // <pool_dir>/catalog
        kPrevious,  // the current one is damaged or gone; catalog.prev used
    };
    Source source = Source::kNone;
    Catalog catalog;
    std::string damage;  // with kPrevious: what was wrong with the current one
};

// Reads the pool's catalog. Falls back to catalog.prev only when the
// current file is missing or its content is damaged (when both are missing
// beside a catalog.damaged, a whole catalog.tmp, left by an older rpmad's
// interrupted recovery, is first renamed to catalog.prev); when neither is
// usable the answer is FAILED_PRECONDITION naming both files and what an
// operator can do, since nobody can guess the regions. Read errors (EIO,
// EACCES) come back as they are.
StatusOr<LoadedCatalog> LoadCatalog(const std::string &pool_dir);

// Durably replaces <pool_dir>/catalog by `catalog`, keeping the one replaced
// as catalog.prev (ReplaceFileDurably). Errors are RESOURCE_EXHAUSTED,
// PERMISSION_DENIED or INTERNAL, the message naming the file; when the
// answer is not `visible` the old catalog stays in place, when it is the new
// one is what the next start reads, durable or not.
Replacement CommitCatalog(const std::string &pool_dir, const Catalog &catalog);

// Renames a damaged <pool_dir>/catalog to catalog.damaged so that the next
// commit cannot push it into catalog.prev, and a person can still look at it.
Status SetAsideDamagedCatalog(const std::string &pool_dir);

}  // namespace rpmad

#endif  // DAEMON_CATALOG_H
