#include "daemon/catalog.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "daemon/crc32c.h"
#include "daemon/durable_file.h"

namespace rpmad {

namespace {

constexpr char kMagic[8] = {'R', 'P', 'M', 'A', 'D', 'C', 'A', 'T'};
// Version 1: no replica-set records; version 2 adds one per entry.
constexpr uint32_t kFormatVersion1 = 1;
constexpr uint32_t kFormatVersion = 2;
constexpr size_t kHeaderSize = sizeof(kMagic) + 4 + 4 + 8;
constexpr size_t kChecksumSize = 4;

void PutFixed(std::string *out, uint64_t value, int bytes) {
    for (int i = 0; i < bytes; i++) {
        out->push_back(static_cast<char>((value >> (8 * i)) & 0xFF));
    }
}

void PutString(std::string *out, const std::string &s) {
    PutFixed(out, s.size(), 2);
    out->append(s);
}

// Consumes little-endian fields from the front of a byte string; any read
// past the end makes ok() false for good, so a record is checked once.
class Reader {
  public:
    explicit Reader(std::string_view bytes) : rest_(bytes) {}

    uint64_t Fixed(int bytes) {
        if (rest_.size() < static_cast<size_t>(bytes)) {
            ok_ = false;
            rest_ = {};
            return 0;
        }
        uint64_t value = 0;
        for (int i = 0; i < bytes; i++) {
            value |= uint64_t{static_cast<unsigned char>(rest_[i])} << (8 * i);
        }
        rest_.remove_prefix(bytes);
        return value;
    }

    // A u16 length and the bytes (`length_bytes` 4: a u32 length).
    std::string String(int length_bytes = 2) {
        size_t length = Fixed(length_bytes);
        if (rest_.size() < length) {
            ok_ = false;
            rest_ = {};
            return {};
        }
        std::string s(rest_.substr(0, length));
        rest_.remove_prefix(length);
        return s;
    }

    bool ok() const { return ok_; }
    size_t remaining() const { return rest_.size(); }

  private:
    std::string_view rest_;
    bool ok_ = true;
};

std::string Hex32(uint32_t value) {
    char buffer[16];
    std::snprintf(buffer, sizeof(buffer), "0x%08x", value);
    return buffer;
}

Status Damaged(const std::string &why) {
    return Status(StatusCode::kFailedPrecondition, why);
}

// Older rpmads unlinked catalog.prev while a recovery had set
// the damaged catalog aside, so a crash there left a whole, synced
// catalog.tmp (the recovered catalog) and neither catalog nor catalog.prev.
// That file becomes catalog.prev, from which the recovery starts again.
// (Without catalog.damaged, a catalog.tmp alone is a new pool's first commit
// cut short: the pool is new again.)
Status PromoteInterruptedCommit(const std::string &pool_dir) {
    const std::string previous_path = pool_dir + "/" + kPreviousCatalogFileName;
    const std::string damaged_path = pool_dir + "/" + kDamagedCatalogFileName;
    const std::string tmp_path = pool_dir + "/" + kCatalogFileName + ".tmp";
    if (access(previous_path.c_str(), F_OK) == 0 || access(damaged_path.c_str(), F_OK) != 0) {
        return Status();
    }
    StatusOr<std::string> tmp = ReadWholeFile(tmp_path);
    if (!tmp.ok() || !DecodeCatalog(*tmp).ok()) {
        return Status();  // none, or cut short: never committed
    }
    if (Status renamed = RenameFile(tmp_path, previous_path); !renamed.ok()) {
        return renamed;
    }
    return SyncDirectory(pool_dir);
}

}  // namespace

std::string EncodeCatalog(const Catalog &catalog) {
    const bool records = std::any_of(catalog.entries.begin(), catalog.entries.end(),
                                     [](const CatalogEntry &e) { return !e.replica_set.empty(); });
    const uint32_t version = records ? kFormatVersion : kFormatVersion1;
    std::string out(kMagic, sizeof(kMagic));
    PutFixed(&out, version, 4);
    PutFixed(&out, catalog.entries.size(), 4);
    PutFixed(&out, catalog.generation, 8);
    for (const CatalogEntry &entry : catalog.entries) {
        PutString(&out, entry.name);
        PutString(&out, entry.file_name);
        PutFixed(&out, entry.size, 8);
        PutFixed(&out, entry.id, 8);
        PutFixed(&out, static_cast<uint64_t>(entry.created_unix), 8);
        if (version >= kFormatVersion) {
            PutFixed(&out, entry.replica_set.size(), 4);
            out.append(entry.replica_set);
        }
    }
    PutFixed(&out, Crc32c(out), 4);
    return out;
}

StatusOr<Catalog> DecodeCatalog(std::string_view bytes) {
    if (bytes.size() < kHeaderSize + kChecksumSize) {
        return Damaged("too short to be a catalog (" + std::to_string(bytes.size()) + " bytes)");
    }
    if (std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0) {
        return Damaged("not a region catalog (bad magic)");
    }
    // The checksum comes first: a count or a length read from damaged bytes
    // means nothing.
    std::string_view body = bytes.substr(0, bytes.size() - kChecksumSize);
    Reader trailer(bytes.substr(body.size()));
    uint32_t stored = static_cast<uint32_t>(trailer.Fixed(4));
    uint32_t computed = Crc32c(body);
    if (stored != computed) {
        return Damaged("checksum mismatch (stored " + Hex32(stored) + ", computed " +
                       Hex32(computed) + ")");
    }
    Reader reader(body.substr(sizeof(kMagic)));
    uint32_t version = static_cast<uint32_t>(reader.Fixed(4));
    if (version != kFormatVersion1 && version != kFormatVersion) {
        return Damaged("catalog format version " + std::to_string(version) +
                       " is not supported (this rpmad reads versions " +
                       std::to_string(kFormatVersion1) + " and " + std::to_string(kFormatVersion) +
                       ")");
    }
    uint32_t count = static_cast<uint32_t>(reader.Fixed(4));
    Catalog catalog;
    catalog.generation = reader.Fixed(8);
    for (uint32_t i = 0; i < count && reader.ok(); i++) {
        CatalogEntry entry;
        entry.name = reader.String();
        entry.file_name = reader.String();
        entry.size = reader.Fixed(8);
        entry.id = reader.Fixed(8);
        entry.created_unix = static_cast<int64_t>(reader.Fixed(8));
        if (version >= kFormatVersion) {
            entry.replica_set = reader.String(4);
            if (entry.replica_set.size() > kMaxReplicaSetRecordBytes) {
                return Damaged("record " + std::to_string(catalog.entries.size()) +
                               " holds a replica-set record of " +
                               std::to_string(entry.replica_set.size()) + " bytes, more than " +
                               std::to_string(kMaxReplicaSetRecordBytes));
            }
        }
        catalog.entries.push_back(std::move(entry));
    }
    if (!reader.ok()) {
        return Damaged("record " + std::to_string(catalog.entries.size()) + " of " +
                       std::to_string(count) + " is cut short");
    }
    if (reader.remaining() != 0) {
        return Damaged(std::to_string(reader.remaining()) +
                       " unexpected bytes after the last record");
    }
    // One spelling per catalog: rpmad writes version 2 only when some
    // region holds a record, version 1 otherwise.
    if (version == kFormatVersion &&
        std::none_of(catalog.entries.begin(), catalog.entries.end(),
                     [](const CatalogEntry &entry) { return !entry.replica_set.empty(); })) {
        return Damaged(
            "catalog format version 2 without any replica-set record (rpmad writes "
            "version 1 then)");
    }
    return catalog;
}

StatusOr<LoadedCatalog> LoadCatalog(const std::string &pool_dir) {
    const std::string current_path = pool_dir + "/" + kCatalogFileName;
    const std::string previous_path = pool_dir + "/" + kPreviousCatalogFileName;

    LoadedCatalog loaded;
    std::string current_problem;
    StatusOr<std::string> current = ReadWholeFile(current_path);
    if (current.ok()) {
        StatusOr<Catalog> decoded = DecodeCatalog(*current);
        if (decoded.ok()) {
            loaded.source = LoadedCatalog::Source::kCurrent;
            loaded.catalog = std::move(*decoded);
            return loaded;
        }
        current_problem = decoded.status().message();
    } else if (current.status().code() == StatusCode::kNotFound) {
        current_problem = "missing";
    } else {
        return current.status();
    }

    if (current_problem == "missing") {
        if (Status promoted = PromoteInterruptedCommit(pool_dir); !promoted.ok()) {
            return promoted;
        }
    }
    StatusOr<std::string> previous = ReadWholeFile(previous_path);
    if (!previous.ok() && previous.status().code() == StatusCode::kNotFound) {
        if (current_problem == "missing") {
            return loaded;  // a new pool
        }
        return Status(StatusCode::kFailedPrecondition,
                      "region catalog " + current_path + " is damaged: " + current_problem +
                          "; there is no previous generation (" + previous_path +
                          ") to fall back to, so rpmad cannot tell which regions exist. "
                          "Restore the catalog from a backup, or move " +
                          pool_dir +
                          " aside to start an empty pool (the region files in its "
                          "regions/ folder keep their data).");
    }
    if (!previous.ok()) {
        return previous.status();
    }
    StatusOr<Catalog> decoded = DecodeCatalog(*previous);
    if (!decoded.ok()) {
        return Status(
            StatusCode::kFailedPrecondition,
            "region catalog " + current_path + " is " +
                (current_problem == "missing" ? "missing" : "damaged: " + current_problem) +
                "; its previous generation " + previous_path +
                " is damaged too: " + decoded.status().message() +
                ". rpmad cannot tell which regions exist: restore the catalog from a "
                "backup, or move " +
                pool_dir +
                " aside to start an empty pool (the region files in its regions/ "
                "folder keep their data).");
    }
    loaded.source = LoadedCatalog::Source::kPrevious;
    loaded.catalog = std::move(*decoded);
    loaded.damage = current_path + " is " +
                    (current_problem == "missing" ? "missing" : "damaged: " + current_problem);
    return loaded;
}

Replacement CommitCatalog(const std::string &pool_dir, const Catalog &catalog) {
    return ReplaceFileDurably(pool_dir + "/" + kCatalogFileName, EncodeCatalog(catalog),
                              pool_dir + "/" + kPreviousCatalogFileName);
}

Status SetAsideDamagedCatalog(const std::string &pool_dir) {
    const std::string current_path = pool_dir + "/" + kCatalogFileName;
    const std::string damaged_path = pool_dir + "/" + kDamagedCatalogFileName;
    Status status = RenameFile(current_path, damaged_path);
    if (!status.ok() && status.code() != StatusCode::kNotFound) {
        return Status(status.code(), "cannot set the damaged catalog aside: " + status.message());
    }
    return SyncDirectory(pool_dir);
}

}  // namespace rpmad
