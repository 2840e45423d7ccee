#include "daemon/region.h"

#include <fcntl.h>
#include <libpmem2.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "daemon/durable_file.h"

namespace rpmad {

namespace {

constexpr size_t kMaxNameLength = 64;

bool IsAlnum(char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

Granularity FromPmem2(pmem2_granularity g) {
    switch (g) {
        case PMEM2_GRANULARITY_BYTE:
            return Granularity::kByte;
        case PMEM2_GRANULARITY_CACHE_LINE:
            return Granularity::kCacheLine;
        case PMEM2_GRANULARITY_PAGE:
            break;
    }
    return Granularity::kPage;
}

// msync of the pages under [addr, addr + length): 0 or its errno. pmem2's
// persist function for a page-cache mapping does the same but abort()s when
// msync fails, which would end the daemon and every session with it.
int SyncPages(const std::byte *addr, size_t length) {
    const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
    const uintptr_t begin = reinterpret_cast<uintptr_t>(addr) & ~(page - 1);
    const size_t span = length + (reinterpret_cast<uintptr_t>(addr) - begin);
    int ret;
    do {
        ret = msync(reinterpret_cast<void *>(begin), span, MS_SYNC);
    } while (ret != 0 && errno == EINTR);
    return ret == 0 ? 0 : errno;
}

Status Unmappable(const RegionMetadata &metadata, const char *step) {
    return Status(StatusCode::kFailedPrecondition,
                  "cannot map " + metadata.path + " (" + step + "): " + pmem2_errormsg());
}

}  // namespace

const char *PersistMethodName(Granularity g) {
    switch (g) {
        case Granularity::kByte:
            return "fence";
        case Granularity::kCacheLine:
            return "cpu-flush";
        case Granularity::kPage:
            break;
    }
    return "msync";
}

const char *BackingName(Backing backing) {
    return backing == Backing::kDeviceDax ? "devdax" : "file";
}

const char *GranularityName(Granularity g) {
    switch (g) {
        case Granularity::kByte:
            return "byte";
        case Granularity::kCacheLine:
            return "cache-line";
        case Granularity::kPage:
            break;
    }
    return "page";
}

Status ValidateRegionName(std::string_view name) {
    bool valid = !name.empty() && name.size() <= kMaxNameLength && IsAlnum(name[0]);
    for (size_t i = 1; valid && i < name.size(); i++) {
        char c = name[i];
        valid = IsAlnum(c) || c == '.' || c == '_' || c == '-';
    }
    if (!valid) {
        return Status(StatusCode::kInvalidArgument,
                      "invalid region name \"" + std::string(name) +
                          "\": a name is 1 to 64 characters, letters, digits, '.', '_' and "
                          "'-', and starts with a letter or a digit");
    }
    return Status();
}

StatusOr<std::shared_ptr<Region>> Region::Map(int fd, RegionMetadata metadata) {
    pmem2_source *source = nullptr;
    if (pmem2_source_from_fd(&source, fd) != 0) {
        return Unmappable(metadata, "pmem2_source_from_fd");
    }
    pmem2_config *config = nullptr;
    if (pmem2_config_new(&config) != 0) {
        pmem2_source_delete(&source);
        return Unmappable(metadata, "pmem2_config_new");
    }
    // PAGE is the weakest requirement: pmem2 then maps at whatever the
    // medium offers, and reports the granularity it got.
    pmem2_map *map = nullptr;
    int ret = pmem2_config_set_required_store_granularity(config, PMEM2_GRANULARITY_PAGE);
    const char *step = "pmem2_config_set_required_store_granularity";
    if (ret == 0 && metadata.backing == Backing::kDeviceDax) {
        // A file region is the whole file; a device region is its range.
        ret = pmem2_config_set_offset(config, metadata.offset);
        if (ret == 0) {
            ret = pmem2_config_set_length(config, metadata.size);
        }
        step = "pmem2_config_set_offset";
    }
    if (ret == 0) {
        ret = pmem2_map_new(&map, config, source);
        step = "pmem2_map_new";
    }
    Status status = ret == 0 ? Status() : Unmappable(metadata, step);
    pmem2_config_delete(&config);
    pmem2_source_delete(&source);
    if (!status.ok()) {
        return status;
    }
    if (pmem2_map_get_size(map) != metadata.size) {
        size_t mapped = pmem2_map_get_size(map);
        pmem2_map_delete(&map);
        return Status(StatusCode::kFailedPrecondition,
                      "cannot map " + metadata.path + ": mapped " + std::to_string(mapped) +
                          " bytes, the catalog says " + std::to_string(metadata.size));
    }
    return std::shared_ptr<Region>(new Region(std::move(metadata), map));
}

StatusOr<std::shared_ptr<Region>> Region::Open(RegionMetadata metadata) {
    int fd = open(metadata.path.c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        int err = errno;
        if (err == ENOENT) {
            return Status(StatusCode::kFailedPrecondition, "file " + metadata.path + " is missing");
        }
        Status status = ErrnoStatus(err, "cannot open " + metadata.path);
        return Status(StatusCode::kFailedPrecondition, status.message());
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        Status status = ErrnoStatus(errno, "cannot stat " + metadata.path);
        close(fd);
        return Status(StatusCode::kFailedPrecondition, status.message());
    }
    if (static_cast<uint64_t>(st.st_size) != metadata.size) {
        close(fd);
        return Status(StatusCode::kFailedPrecondition,
                      "file " + metadata.path + " is " + std::to_string(st.st_size) +
                          " bytes but the catalog says " + std::to_string(metadata.size) +
                          " (truncated or resized outside rpmad); restore the file or delete "
                          "the region");
    }
    StatusOr<std::shared_ptr<Region>> region = Map(fd, std::move(metadata));
    close(fd);
    return region;
}

StatusOr<std::shared_ptr<Region>> Region::OpenDeviceDax(RegionMetadata metadata) {
    const std::string &path = metadata.path;
    const std::string fix =
        "; storage.devdax_regions takes device-DAX character devices "
        "(/dev/daxX.Y, see `daxctl list`)";
    int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        Status status = ErrnoStatus(errno, "cannot open device " + path);
        return Status(StatusCode::kFailedPrecondition, status.message() + fix);
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISCHR(st.st_mode)) {
        close(fd);
        return Status(StatusCode::kFailedPrecondition,
                      path + " is not a device-DAX device (not a character device)" + fix +
                          "; keep file regions in the pool directory (storage.pool_dir, on an "
                          "fsdax mount for DAX)");
    }
    pmem2_source *source = nullptr;
    if (int ret = pmem2_source_from_fd(&source, fd); ret != 0) {
        close(fd);
        std::string why =
            ret == PMEM2_E_INVALID_FILE_TYPE
                ? path + " is a character device but not device DAX"
                : "cannot use " + path + " (pmem2_source_from_fd): " + pmem2_errormsg();
        return Status(StatusCode::kFailedPrecondition, why + fix);
    }
    size_t device_size = 0;
    size_t alignment = 0;
    int ret = pmem2_source_size(source, &device_size);
    if (ret == 0) {
        ret = pmem2_source_alignment(source, &alignment);
    }
    pmem2_source_delete(&source);
    if (ret != 0) {
        close(fd);
        return Status(StatusCode::kFailedPrecondition,
                      "cannot read the size and alignment of " + path + ": " + pmem2_errormsg());
    }
    alignment = std::max<size_t>(alignment, 1);
    const uint64_t offset = metadata.offset;
    std::string bad_range;
    if (offset % alignment != 0 || metadata.size % alignment != 0) {
        bad_range = "offset " + std::to_string(offset) + " and size " +
                    std::to_string(metadata.size) +
                    " must be multiples of the device's alignment " + std::to_string(alignment);
    } else if (offset >= device_size || metadata.size > device_size - offset) {
        bad_range = "offset " + std::to_string(offset) + " and size " +
                    std::to_string(metadata.size) + " do not fit the device's " +
                    std::to_string(device_size) + " bytes";
    }
    if (!bad_range.empty()) {
        close(fd);
        return Status(StatusCode::kFailedPrecondition,
                      "region \"" + metadata.name + "\" on " + path + ": " + bad_range +
                          "; fix its offset and size in storage.devdax_regions (size 0 = to the "
                          "end of the device)");
    }
    if (metadata.size == 0) {
        metadata.size = device_size - offset;
    }
    StatusOr<std::shared_ptr<Region>> region = Map(fd, std::move(metadata));
    close(fd);
    return region;
}

Region::Region(RegionMetadata metadata, pmem2_map *map)
    : metadata_(std::move(metadata)),
      map_(map),
      bytes_(static_cast<std::byte *>(pmem2_map_get_address(map)), pmem2_map_get_size(map)),
      granularity_(FromPmem2(pmem2_map_get_store_granularity(map))),
      persist_(pmem2_get_persist_fn(map)) {}

Region::~Region() {
    pmem2_map_delete(&map_);
}

Status Region::Persist(uint64_t offset, uint64_t length) const {
    // Written so that offset + length is never computed: it could wrap.
    if (offset > metadata_.size || length > metadata_.size - offset) {
        return Status(StatusCode::kInvalidArgument,
                      "persist range [" + std::to_string(offset) + ", +" + std::to_string(length) +
                          ") is outside region \"" + metadata_.name + "\" of " +
                          std::to_string(metadata_.size) + " bytes");
    }
    if (std::string damage = this->damage(); !damage.empty()) {
        return Status(StatusCode::kFailedPrecondition,
                      "region \"" + metadata_.name + "\" is damaged: " + damage);
    }
    if (length == 0) {
        return Status();
    }
    if (granularity_ != Granularity::kPage) {
        persist_(bytes_.data() + offset, length);  // cache flushes: cannot fail
        return Status();
    }
    if (int err = SyncPages(bytes_.data() + offset, length); err != 0) {
        std::string why = "writing back [" + std::to_string(offset) + ", +" +
                          std::to_string(length) + ") of " + metadata_.path +
                          " failed (msync: " + strerror(err) +
                          "); its bytes may be lost: check the disk (dmesg), then delete the "
                          "region or restart rpmad";
        {
            std::lock_guard lock(damage_mu_);
            if (damage_.empty()) {
                damage_ = why;
            }
        }
        return Status(StatusCode::kInternal, "region \"" + metadata_.name + "\": " + why);
    }
    return Status();
}

std::string Region::damage() const {
    std::lock_guard lock(damage_mu_);
    return damage_;
}

}  // namespace rpmad
