#include "daemon/region_store.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <random>
#include <utility>

#include "daemon/durable_file.h"

namespace rpmad {

namespace {

constexpr char kLockFileName[] = "rpmad.lock";
constexpr char kRegionsDirName[] = "regions";
constexpr char kRegionSuffix[] = ".pmem";
constexpr char kTemporarySuffix[] = ".pmem.tmp";

bool EndsWith(const std::string &s, std::string_view suffix) {
    return s.size() >= suffix.size() &&
           s.compare(s.size() - suffix.size(), suffix.size(), suffix.data(), suffix.size()) == 0;
}

// mkdir -p with mode 0700 for every directory it makes: region files hold
// client data, nobody else has business in the pool.
Status MakeDirectories(const std::string &path) {
    for (size_t end = path.find('/', 1);; end = path.find('/', end + 1)) {
        std::string prefix = path.substr(0, end);
        if (mkdir(prefix.c_str(), 0700) != 0 && errno != EEXIST) {
            return ErrnoStatus(errno, "cannot create directory " + prefix);
        }
        if (end == std::string::npos) {
            break;
        }
    }
    struct stat st;
    if (stat(path.c_str(), &st) != 0) {
        return ErrnoStatus(errno, "cannot use pool directory " + path);
    }
    if (!S_ISDIR(st.st_mode)) {
        return Status(StatusCode::kFailedPrecondition,
                      "pool directory " + path + " exists but is not a directory");
    }
    return Status();
}

// A file name the catalog gives must stay inside regions/.
bool IsPlainFileName(const std::string &file_name) {
    return !file_name.empty() && file_name[0] != '.' && file_name.find('/') == std::string::npos;
}

// A device-DAX region's id: the same while its configuration is, so that a
// restart does not look like a re-created region, and new when it changes
// (FNV-1a over the path, offset and size).
uint64_t DeviceDaxId(const RegionMetadata &device) {
    uint64_t hash = 0xcbf29ce484222325ull;
    auto mix = [&hash](std::string_view bytes) {
        for (char c : bytes) {
            hash = (hash ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
        }
    };
    mix(device.path);
    mix(std::string_view("\0", 1));
    mix(std::to_string(device.offset) + "+" + std::to_string(device.size));
    return hash != 0 ? hash : 1;
}

uint64_t RandomId() {
    std::random_device device;
    uint64_t id = 0;
    while (id == 0) {
        id = (uint64_t{device()} << 32) | device();
    }
    return id;
}

}  // namespace

RegionStore::RegionStore(RegionStoreOptions options, std::vector<RegionMetadata> device_dax,
                         int lock_fd)
    : options_(std::move(options)), device_dax_(std::move(device_dax)), lock_fd_(lock_fd) {}

RegionStore::~RegionStore() {
    // Unmap before giving up the pool, so the next owner finds it idle.
    slots_.clear();
    close(lock_fd_);
}

StatusOr<std::unique_ptr<RegionStore>> RegionStore::Open(const RegionStoreOptions &options,
                                                         std::vector<RegionMetadata> device_dax) {
    if (options.pool_dir.empty()) {
        return Status(StatusCode::kInvalidArgument, "the pool directory is not set");
    }
    if (options.max_regions == 0) {
        return Status(StatusCode::kInvalidArgument, "max_regions must be at least 1");
    }
    const std::string &dir = options.pool_dir;
    Status status = MakeDirectories(dir);
    if (!status.ok()) {
        return status;
    }
    // Root ignores permission bits, but not a read-only mount: say so now
    // rather than fail on the first create.
    if (access(dir.c_str(), W_OK) != 0) {
        return ErrnoStatus(errno, "pool directory " + dir + " is not writable");
    }
    // Read-only, so that the lock alone never keeps the filesystem from
    // being remounted read-only; flock() does not need write access.
    const std::string lock_path = dir + "/" + kLockFileName;
    int lock_fd = open(lock_path.c_str(), O_RDONLY | O_CREAT | O_CLOEXEC, 0600);
    if (lock_fd < 0) {
        return ErrnoStatus(errno, "cannot open lock file " + lock_path);
    }
    if (flock(lock_fd, LOCK_EX | LOCK_NB) != 0) {
        int err = errno;
        close(lock_fd);
        if (err == EWOULDBLOCK) {
            return Status(StatusCode::kFailedPrecondition,
                          "pool directory " + dir + " is in use by another rpmad (it holds " +
                              lock_path + "); stop that one or choose another pool directory");
        }
        return ErrnoStatus(err, "cannot lock " + lock_path);
    }
    std::unique_ptr<RegionStore> store(new RegionStore(options, std::move(device_dax), lock_fd));
    const std::string regions_dir = store->regions_dir();
    if (mkdir(regions_dir.c_str(), 0700) != 0 && errno != EEXIST) {
        return ErrnoStatus(errno, "cannot create directory " + regions_dir);
    }
    status = store->LoadRegions();
    if (!status.ok()) {
        return status;
    }
    return store;
}

std::string RegionStore::regions_dir() const {
    return options_.pool_dir + "/" + kRegionsDirName;
}

std::string RegionStore::FilePath(const std::string &file_name) const {
    return regions_dir() + "/" + file_name;
}

Status RegionStore::LoadRegions() {
    std::lock_guard<std::mutex> lock(mu_);
    StatusOr<LoadedCatalog> loaded = LoadCatalog(options_.pool_dir);
    if (!loaded.ok()) {
        return loaded.status();
    }
    const std::string catalog_path = options_.pool_dir + "/" + kCatalogFileName;
    switch (loaded->source) {
        case LoadedCatalog::Source::kNone: {
            // A new pool gets its catalog before any region exists, so
            // from now on a region file without a catalog means a lost
            // catalog, not a new pool.
            StatusOr<std::vector<std::string>> names = ListRegionsDir();
            if (!names.ok()) {
                return names.status();
            }
            auto found = std::find_if(names->begin(), names->end(), [](const std::string &name) {
                return EndsWith(name, kRegionSuffix);
            });
            if (found != names->end()) {
                return Status(StatusCode::kFailedPrecondition,
                              "region catalog " + catalog_path + " is missing but " +
                                  regions_dir() + " holds region files (" + *found +
                                  "); rpmad cannot tell their sizes and ids. Restore the "
                                  "catalog from a backup, or move " +
                                  options_.pool_dir + " aside to start an empty pool.");
            }
            Status status = CommitWith(&slots_).status;
            if (!status.ok()) {
                return status;
            }
            break;
        }
        case LoadedCatalog::Source::kCurrent:
            generation_ = loaded->catalog.generation;
            break;
        case LoadedCatalog::Source::kPrevious: {
            notes_.push_back(loaded->damage + "; recovered the previous generation " +
                             std::to_string(loaded->catalog.generation) + " from " +
                             kPreviousCatalogFileName + " and kept the damaged file as " +
                             options_.pool_dir + "/" + kDamagedCatalogFileName +
                             ". The last region created or deleted before the damage may be "
                             "missing from the list or listed without its file.");
            Status status = SetAsideDamagedCatalog(options_.pool_dir);
            if (!status.ok()) {
                return status;
            }
            // The damaged file probably held the next generation; skip its
            // number so that generations stay unique.
            generation_ = loaded->catalog.generation + 1;
            break;
        }
    }

    for (CatalogEntry &entry : loaded->catalog.entries) {
        Slot slot;
        slot.entry = entry;
        Status valid = ValidateRegionName(entry.name);
        if (!valid.ok()) {
            slot.problem = "the catalog holds an " + valid.message();
        } else if (!IsPlainFileName(entry.file_name)) {
            slot.problem = "the catalog names file \"" + entry.file_name +
                           "\", which is not a plain file name inside " + regions_dir();
        } else {
            StatusOr<std::shared_ptr<Region>> region = Region::Open(
                {entry.name, FilePath(entry.file_name), entry.size, entry.id, entry.created_unix});
            if (region.ok()) {
                slot.region = std::move(*region);
            } else {
                slot.problem = region.status().message();
            }
        }
        if (!slots_.emplace(entry.name, std::move(slot)).second) {
            notes_.push_back("the catalog lists region \"" + entry.name +
                             "\" more than once; the first entry is used");
        }
    }
    StatusOr<std::vector<std::string>> names = ListRegionsDir();
    if (!names.ok()) {
        return names.status();
    }
    if (loaded->source == LoadedCatalog::Source::kPrevious) {
        // Files the recovered catalog lacks may be regions created after
        // it: keep their data rather than clean them up as leftovers.
        AdoptUnlisted(*names);
        Status status = CommitWith(&slots_).status;
        if (!status.ok()) {
            return status;
        }
        names = ListRegionsDir();
        if (!names.ok()) {
            return names.status();
        }
    }
    RemoveLeftovers(*names);
    return AttachDeviceDax();
}

Status RegionStore::AttachDeviceDax() {
    for (const RegionMetadata &configured : device_dax_) {
        const std::string &name = configured.name;
        if (Status valid = ValidateRegionName(name); !valid.ok()) {
            return Status(StatusCode::kInvalidArgument,
                          "storage.devdax_regions: " + valid.message());
        }
        if (auto it = slots_.find(name); it != slots_.end()) {
            return Status(
                StatusCode::kFailedPrecondition,
                "storage.devdax_regions: region \"" + name + "\" on " + configured.path +
                    " has the name of " +
                    (it->second.backing == Backing::kPoolFile ? "a region of the pool"
                                                              : "another device-DAX region") +
                    "; give it another name");
        }
        Slot slot;
        slot.entry.name = name;
        slot.entry.size = configured.size;
        slot.entry.id = DeviceDaxId(configured);
        slot.backing = Backing::kDeviceDax;
        slot.device = configured.path;
        RegionMetadata metadata = configured;
        metadata.id = slot.entry.id;
        metadata.created_unix = 0;
        metadata.backing = Backing::kDeviceDax;
        StatusOr<std::shared_ptr<Region>> region = Region::OpenDeviceDax(std::move(metadata));
        if (region.ok()) {
            slot.entry.size = (*region)->size();
            slot.region = std::move(*region);
        } else {
            slot.problem = region.status().message();
        }
        slots_.emplace(name, std::move(slot));
    }
    // Two regions on overlapping ranges of one device would write over
    // each other.
    for (const auto &[name, slot] : slots_) {
        for (const auto &[other_name, other] : slots_) {
            if (name >= other_name || slot.region == nullptr || other.region == nullptr ||
                slot.backing != Backing::kDeviceDax || slot.device != other.device) {
                continue;
            }
            const Region &a = *slot.region;
            const Region &b = *other.region;
            if (a.offset() < b.offset() + b.size() && b.offset() < a.offset() + a.size()) {
                return Status(StatusCode::kFailedPrecondition,
                              "storage.devdax_regions: regions \"" + name + "\" and \"" +
                                  other_name + "\" overlap on " + slot.device +
                                  "; give them separate ranges (offset, size)");
            }
        }
    }
    return Status();
}

StatusOr<std::vector<std::string>> RegionStore::ListRegionsDir() const {
    DIR *dir = opendir(regions_dir().c_str());
    if (dir == nullptr) {
        return ErrnoStatus(errno, "cannot list " + regions_dir());
    }
    std::vector<std::string> names;
    while (dirent *entry = readdir(dir)) {
        std::string name = entry->d_name;
        if (name != "." && name != "..") {
            names.push_back(std::move(name));
        }
    }
    closedir(dir);
    std::sort(names.begin(), names.end());
    return names;
}

bool RegionStore::IsListedLocked(const std::string &file_name) const {
    return std::any_of(slots_.begin(), slots_.end(), [&file_name](const auto &named) {
        return named.second.entry.file_name == file_name;
    });
}

void RegionStore::AdoptUnlisted(const std::vector<std::string> &names) {
    for (const std::string &file_name : names) {
        if (!EndsWith(file_name, kRegionSuffix) || IsListedLocked(file_name)) {
            continue;
        }
        const std::string path = FilePath(file_name);
        CatalogEntry entry;
        entry.name = file_name.substr(0, file_name.size() - std::strlen(kRegionSuffix));
        entry.file_name = file_name;
        std::string why;
        struct stat st;
        if (Status valid = ValidateRegionName(entry.name); !valid.ok()) {
            why = valid.message();
        } else if (slots_.count(entry.name) != 0) {
            why = "the catalog lists a region of that name with another file";
        } else if (stat(path.c_str(), &st) != 0) {
            why = ErrnoStatus(errno, "cannot stat it").message();
        } else if (st.st_size <= 0 || st.st_size % kSizeAlignment != 0) {
            why = "its size " + std::to_string(st.st_size) + " is not a positive multiple of " +
                  std::to_string(kSizeAlignment);
        } else {
            entry.size = static_cast<uint64_t>(st.st_size);
            entry.id = UnusedIdLocked();
            entry.created_unix = st.st_mtime;
            StatusOr<std::shared_ptr<Region>> region =
                Region::Open({entry.name, path, entry.size, entry.id, entry.created_unix});
            if (region.ok()) {
                notes_.push_back("adopted " + path + " as region \"" + entry.name +
                                 "\" with a new id: the recovered catalog did not list it (it "
                                 "may be the last region created before the damage)");
                slots_[entry.name] = Slot{entry, std::move(*region), "", Backing::kPoolFile, ""};
                continue;
            }
            why = region.status().message();
        }
        // Out of the way under a name no later start removes.
        const std::string kept_path = path + ".unadopted";
        if (Status moved = RenameFile(path, kept_path); !moved.ok()) {
            notes_.push_back(moved.message() + " (it is removed at the next start)");
        } else {
            notes_.push_back("moved " + path + " to " + kept_path +
                             ": the recovered catalog does not list it and it cannot be adopted "
                             "(" +
                             why + ")");
        }
    }
}

void RegionStore::RemoveLeftovers(const std::vector<std::string> &names) {
    bool removed = false;
    for (const std::string &name : names) {
        const std::string path = FilePath(name);
        std::string why;
        if (EndsWith(name, kTemporarySuffix)) {
            why = "a create that did not finish";
        } else if (!EndsWith(name, kRegionSuffix)) {
            notes_.push_back("ignored " + path + ": not a region file");
            continue;
        } else if (IsListedLocked(name)) {
            continue;
        } else {
            why = "not in the catalog: a create interrupted before it was recorded";
        }
        if (Status unlinked = RemoveFile(path); !unlinked.ok()) {
            notes_.push_back(unlinked.message() + " (a leftover: " + why + ")");
            continue;
        }
        removed = true;
        notes_.push_back("removed leftover " + path + " (" + why + ")");
    }
    if (removed) {
        Status status = SyncDirectory(regions_dir());
        if (!status.ok()) {
            notes_.push_back(status.message());
        }
    }
}

Catalog RegionStore::CatalogOf(const std::map<std::string, Slot> &slots) const {
    Catalog catalog;
    catalog.generation = generation_ + 1;
    for (const auto &[name, slot] : slots) {
        if (slot.backing ==
            Backing::kPoolFile) {  // device-DAX regions are configured, not cataloged
            catalog.entries.push_back(slot.entry);
        }
    }
    return catalog;
}

Replacement RegionStore::CommitWith(std::map<std::string, Slot> *slots) {
    const auto started = std::chrono::steady_clock::now();
    Replacement committed = CommitCatalog(options_.pool_dir, CatalogOf(*slots));
    catalog_commit_time_.Observe(std::chrono::steady_clock::now() - started);
    if (!committed.visible) {
        return committed;
    }
    // A restart reads the new catalog, so memory follows it, durable or not.
    generation_++;
    if (slots != &slots_) {
        slots_ = std::move(*slots);
    }
    if (!committed.status.ok()) {
        not_durable_ = committed.status.message();
    }
    return committed;
}

Status RegionStore::RefuseIfNotDurableLocked() const {
    if (not_durable_.empty()) {
        return Status();
    }
    return Status(StatusCode::kFailedPrecondition, RestartAdvice());
}

std::string RegionStore::RestartAdvice() const {
    return "rpmad refuses region changes until it is restarted: a change of the region catalog "
           "is in place but may not be durable (" +
           not_durable_ +
           "), and after a failed sync only a fresh start can tell what the disk holds. Check "
           "the pool's filesystem and device (dmesg), then restart rpmad";
}

StatusOr<std::shared_ptr<Region>> RegionStore::MakeRegionFile(const RegionMetadata &metadata) {
    const std::string tmp_path = metadata.path + ".tmp";
    int fd = open(tmp_path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        return ErrnoStatus(errno, "cannot create region file " + tmp_path);
    }
    StatusOr<std::shared_ptr<Region>> region = AllocateAndMap(fd, tmp_path, metadata);
    close(fd);
    if (region.ok()) {
        if (Status renamed = RenameFile(tmp_path, metadata.path); !renamed.ok()) {
            region = renamed;
        }
    }
    if (!region.ok()) {
        unlink(tmp_path.c_str());
        return region;
    }
    Status status = SyncDirectory(regions_dir());
    if (!status.ok()) {
        unlink(metadata.path.c_str());
        return status;
    }
    return region;
}

StatusOr<std::shared_ptr<Region>> RegionStore::AllocateAndMap(int fd, const std::string &tmp_path,
                                                              const RegionMetadata &metadata) {
    // Allocating every block now is what makes a full filesystem fail the
    // create, not a client's write into a hole later (SIGBUS).
    int err = posix_fallocate(fd, 0, static_cast<off_t>(metadata.size));
    if (err == ENOSPC || err == EDQUOT) {
        return ErrnoStatus(err, "no room for region \"" + metadata.name + "\" (" +
                                    std::to_string(metadata.size) + " bytes) in pool directory " +
                                    options_.pool_dir +
                                    "; free space there or choose a smaller size");
    }
    if (err != 0) {
        return ErrnoStatus(err, "cannot allocate " + tmp_path);
    }
    if (fsync(fd) != 0) {
        return ErrnoStatus(errno, "cannot sync " + tmp_path);
    }
    return Region::Map(fd, metadata);
}

uint64_t RegionStore::UsedBytesLocked() const {
    uint64_t used = 0;
    for (const auto &[name, slot] : slots_) {
        if (slot.backing == Backing::kPoolFile) {
            used += slot.entry.size;
        }
    }
    return used;
}

uint64_t RegionStore::UnusedIdLocked() const {
    for (;;) {
        uint64_t id = RandomId();
        bool taken = std::any_of(slots_.begin(), slots_.end(),
                                 [id](const auto &named) { return named.second.entry.id == id; });
        if (!taken) {
            return id;
        }
    }
}

StatusOr<std::shared_ptr<Region>> RegionStore::Create(const std::string &name, uint64_t size) {
    Status status = ValidateRegionName(name);
    if (!status.ok()) {
        return status;
    }
    if (size == 0 || size % kSizeAlignment != 0) {
        return Status(StatusCode::kInvalidArgument, "invalid size " + std::to_string(size) +
                                                        " for region \"" + name +
                                                        "\": a size is a positive multiple of " +
                                                        std::to_string(kSizeAlignment) + " bytes");
    }
    if (size > options_.max_region_size) {
        return Status(StatusCode::kInvalidArgument,
                      "region \"" + name + "\" of " + std::to_string(size) +
                          " bytes is larger than limits.max_region_size (" +
                          std::to_string(options_.max_region_size) +
                          " bytes): create a smaller one, or raise limits.max_region_size");
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (status = RefuseIfNotDurableLocked(); !status.ok()) {
        return status;
    }
    if (slots_.count(name) != 0) {
        return Status(StatusCode::kAlreadyExists, "region \"" + name + "\" already exists");
    }
    if (slots_.size() >= options_.max_regions) {
        return Status(StatusCode::kResourceExhausted,
                      "the pool already holds limits.max_regions (" +
                          std::to_string(options_.max_regions) +
                          ") regions: delete one, or raise limits.max_regions");
    }
    const uint64_t used = UsedBytesLocked();
    if (options_.capacity != 0 && (size > options_.capacity || used > options_.capacity - size)) {
        return Status(StatusCode::kResourceExhausted,
                      "region \"" + name + "\" of " + std::to_string(size) +
                          " bytes does not fit the pool's capacity: " + std::to_string(used) +
                          " of " + std::to_string(options_.capacity) +
                          " bytes are used: delete regions, or raise storage.capacity");
    }

    // No replica-set record: a region created again starts at generation 0.
    CatalogEntry entry{name,
                       size,
                       UnusedIdLocked(),
                       static_cast<int64_t>(std::time(nullptr)),
                       name + kRegionSuffix,
                       ""};
    const std::string path = FilePath(entry.file_name);
    StatusOr<std::shared_ptr<Region>> region =
        MakeRegionFile({name, path, size, entry.id, entry.created_unix});
    if (!region.ok()) {
        return region;
    }
    std::map<std::string, Slot> slots = slots_;
    slots[name] = Slot{entry, *region, "", Backing::kPoolFile, ""};
    Replacement committed = CommitWith(&slots);
    if (!committed.visible) {
        unlink(path.c_str());
        (void)SyncDirectory(regions_dir());  // best effort: Open removes it anyway
        return committed.status;
    }
    if (!committed.status.ok()) {
        // The catalog lists it, so its file stays. Served only once a start
        // has read it back: a power cut may still undo the create, and with
        // it whatever a client would have stored.
        Slot &slot = slots_[name];
        slot.region = nullptr;
        slot.problem =
            "created while the catalog could not be made durable: served once "
            "rpmad restarts and finds it in the catalog";
        return Status(committed.status.code(),
                      "region \"" + name + "\" is created but not served yet: " + RestartAdvice());
    }
    return region;
}

std::string RegionStore::ProblemOf(const Slot &slot) {
    return slot.region != nullptr ? slot.region->damage() : slot.problem;
}

StatusOr<std::shared_ptr<Region>> RegionStore::Get(const std::string &name) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = slots_.find(name);
    if (it == slots_.end()) {
        return Status(StatusCode::kNotFound, "no region named \"" + name + "\"");
    }
    if (std::string problem = ProblemOf(it->second); !problem.empty()) {
        return Status(StatusCode::kFailedPrecondition,
                      "region \"" + name + "\" is unhealthy: " + problem);
    }
    return it->second.region;
}

Status RegionStore::Delete(const std::string &name) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = slots_.find(name);
    if (it == slots_.end()) {
        return Status(StatusCode::kNotFound, "no region named \"" + name + "\"");
    }
    if (Status refused = RefuseIfNotDurableLocked(); !refused.ok()) {
        return refused;
    }
    if (it->second.backing == Backing::kDeviceDax) {
        return Status(StatusCode::kFailedPrecondition,
                      "region \"" + name + "\" is on device DAX (" + it->second.device +
                          "), configured in storage.devdax_regions: it cannot be deleted; remove "
                          "it from rpmad's configuration and restart rpmad");
    }
    const std::string file_name = it->second.entry.file_name;
    std::map<std::string, Slot> slots = slots_;
    slots.erase(name);
    Replacement committed = CommitWith(&slots);
    if (!committed.visible) {
        return committed.status;
    }
    if (!committed.status.ok()) {
        // Its file stays: the next start removes it, unless a power cut
        // brought back the catalog that lists it; then it is whole.
        return Status(
            committed.status.code(),
            "region \"" + name + "\" is deleted and no longer served: " + RestartAdvice());
    }
    // The region is gone from the catalog: whatever happens to its file now,
    // the next Open removes it.
    if (!IsPlainFileName(file_name)) {
        return Status();
    }
    const std::string path = FilePath(file_name);
    if (Status removed = RemoveFile(path);
        !removed.ok() && removed.code() != StatusCode::kNotFound) {
        notes_.push_back("deleted region \"" + name + "\": " + removed.message() +
                         " (it is removed at the next start)");
        return Status();
    }
    Status status = SyncDirectory(regions_dir());
    if (!status.ok()) {
        notes_.push_back(status.message());
    }
    return Status();
}

Replacement RegionStore::SetReplicaSet(const std::string &name, uint64_t id, std::string record) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = slots_.find(name);
    if (it == slots_.end() || it->second.entry.id != id) {
        return {Status(StatusCode::kNotFound,
                       "region \"" + name + "\" was deleted: its replica set is gone with it"),
                false};
    }
    if (std::string problem = ProblemOf(it->second); !problem.empty()) {
        return {Status(StatusCode::kFailedPrecondition,
                       "region \"" + name + "\" is unhealthy: " + problem),
                false};
    }
    if (it->second.backing == Backing::kDeviceDax) {
        return {Status(StatusCode::kFailedPrecondition,
                       "region \"" + name + "\" is on device DAX (" + it->second.device +
                           "), which the catalog does not list: it cannot hold a replica-set "
                           "record; replicate regions of the pool directory"),
                false};
    }
    if (record.size() > kMaxReplicaSetRecordBytes) {
        return {Status(StatusCode::kInvalidArgument, "the replica-set record of region \"" + name +
                                                         "\" is " + std::to_string(record.size()) +
                                                         " bytes, more than " +
                                                         std::to_string(kMaxReplicaSetRecordBytes)),
                false};
    }
    if (Status refused = RefuseIfNotDurableLocked(); !refused.ok()) {
        return {refused, false};
    }
    std::map<std::string, Slot> slots = slots_;
    slots[name].entry.replica_set = std::move(record);
    Replacement committed = CommitWith(&slots);
    if (!committed.visible) {
        // Nothing changed; the writer may try again or count this member out.
        return {Status(StatusCode::kFailedPrecondition,
                       "the replica-set record of region \"" + name +
                           "\" was not changed: " + committed.status.message()),
                false};
    }
    if (!committed.status.ok()) {
        return {Status(committed.status.code(),
                       "the replica-set record of region \"" + name +
                           "\" is changed but may not be durable: " + RestartAdvice()),
                true};
    }
    return committed;
}

RegionInfo RegionStore::InfoOf(const std::string &name, const Slot &slot) const {
    RegionInfo info;
    info.name = name;
    info.size = slot.entry.size;
    info.id = slot.entry.id;
    info.created_unix = slot.entry.created_unix;
    info.replica_set = slot.entry.replica_set;
    info.path = slot.backing == Backing::kPoolFile ? FilePath(slot.entry.file_name) : slot.device;
    info.backing = slot.backing;
    info.problem = ProblemOf(slot);
    info.healthy = info.problem.empty();
    if (slot.region != nullptr) {
        info.granularity = GranularityName(slot.region->granularity());
        info.persist_method = PersistMethodName(slot.region->granularity());
    }
    return info;
}

std::vector<RegionInfo> RegionStore::List() const {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<RegionInfo> infos;
    for (const auto &[name, slot] : slots_) {
        infos.push_back(InfoOf(name, slot));
    }
    return infos;
}

StatusOr<RegionInfo> RegionStore::Find(const std::string &name) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = slots_.find(name);
    if (it == slots_.end()) {
        return Status(StatusCode::kNotFound, "no region named \"" + name + "\"");
    }
    return InfoOf(name, it->second);
}

std::vector<std::string> RegionStore::problems() const {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<std::string> problems = notes_;
    if (!not_durable_.empty()) {
        problems.push_back(RestartAdvice());
    }
    for (const auto &[name, slot] : slots_) {
        if (std::string problem = ProblemOf(slot); !problem.empty()) {
            problems.push_back("region \"" + name + "\" is unhealthy: " + problem);
        }
    }
    return problems;
}

uint64_t RegionStore::used_bytes() const {
    std::lock_guard<std::mutex> lock(mu_);
    return UsedBytesLocked();
}

size_t RegionStore::region_count() const {
    std::lock_guard<std::mutex> lock(mu_);
    return slots_.size();
}

}  // namespace rpmad
