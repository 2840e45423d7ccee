#include "rpma_core/src/provider/tcp/tcp_persist.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

namespace rpma::provider::tcp {
namespace {

// ---- the CPU's cache flush ----------------------------------------------------

using FlushLinesFn = void (*)(uintptr_t begin, uintptr_t end);

struct CacheFlush {
    const char *instruction = "";
    FlushLinesFn flush_lines = nullptr;
};

#if defined(__x86_64__)
// x86 flushes 64-byte lines (libpmem2's FLUSH_ALIGN).
constexpr uintptr_t kLine = 64;

__attribute__((target("clwb"))) void FlushLinesClwb(uintptr_t begin, uintptr_t end) {
    for (uintptr_t line = begin & ~(kLine - 1); line < end; line += kLine)
        _mm_clwb(reinterpret_cast<void *>(line));
}

__attribute__((target("clflushopt"))) void FlushLinesClflushopt(uintptr_t begin, uintptr_t end) {
    for (uintptr_t line = begin & ~(kLine - 1); line < end; line += kLine)
        _mm_clflushopt(reinterpret_cast<void *>(line));
}

void FlushLinesClflush(uintptr_t begin, uintptr_t end) {
    for (uintptr_t line = begin & ~(kLine - 1); line < end; line += kLine)
        _mm_clflush(reinterpret_cast<void *>(line));
}

// CLWB keeps the line cached, CLFLUSHOPT evicts it but is weakly ordered,
// CLFLUSH is what every x86-64 has (CPUID.7.0:EBX bits 24 and 23).
CacheFlush DetectCacheFlush() {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) {
        if (ebx & (1u << 24))
            return {"clwb", FlushLinesClwb};
        if (ebx & (1u << 23))
            return {"clflushopt", FlushLinesClflushopt};
    }
    return {"clflush", FlushLinesClflush};
}

// Orders the flushes before the acknowledgement that follows.
void Fence() {
    _mm_sfence();
}
#else
CacheFlush DetectCacheFlush() {
    return {};
}
void Fence() {}
#endif

const CacheFlush &ChosenCacheFlush() {
    static const CacheFlush chosen = DetectCacheFlush();
    return chosen;
}

std::atomic<MsyncFunction> msync_function{::msync};

int Msync(uintptr_t begin, uintptr_t end) {
    static const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
    const uintptr_t aligned_begin = begin & ~(page - 1);
    const uintptr_t aligned_end = (end + page - 1) & ~(page - 1);
    if (msync_function.load(std::memory_order_relaxed)(reinterpret_cast<void *>(aligned_begin),
                                                       aligned_end - aligned_begin, MS_SYNC) != 0)
        return errno;
    return 0;
}

// ---- what the kernel says about the mappings ------------------------------------

// One line of /proc/self/maps.
struct Mapping {
    uintptr_t begin = 0, end = 0;
    bool shared = false;
    unsigned dev_major = 0, dev_minor = 0;
    uint64_t inode = 0;
    std::string path;
    bool dax_file = false;
    bool device_dax = false;
    bool synchronous = false;
};

bool ParseMapsLine(const char *line, Mapping *mapping) {
    char perms[5] = {};
    unsigned long long offset = 0;
    unsigned long long inode = 0;
    int path_at = 0;
    if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %4s %llx %x:%x %llu %n", &mapping->begin,
               &mapping->end, perms, &offset, &mapping->dev_major, &mapping->dev_minor, &inode,
               &path_at) < 7)
        return false;
    mapping->shared = perms[3] == 's';
    mapping->inode = inode;
    mapping->path = line + path_at;
    while (!mapping->path.empty() && (mapping->path.back() == '\n' || mapping->path.back() == ' '))
        mapping->path.pop_back();
    return true;
}

// A character device whose subsystem is dax (/sys/class/dax or
// /sys/bus/dax, as libpmem2 checks it).
bool IsDeviceDax(unsigned rdev_major, unsigned rdev_minor) {
    char link[64];
    snprintf(link, sizeof(link), "/sys/dev/char/%u:%u/subsystem", rdev_major, rdev_minor);
    char target[256];
    const ssize_t n = readlink(link, target, sizeof(target) - 1);
    if (n <= 0)
        return false;
    target[n] = '\0';
    const char *slash = strrchr(target, '/');
    return strcmp(slash != nullptr ? slash + 1 : target, "dax") == 0;
}

// The file of a shared mapping, if it can be found: by the path maps shows
// (when it is still that file) or through /proc/self/map_files.
bool StatMappedFile(const Mapping &mapping, struct statx *stx) {
    auto is_it = [&](const char *path) {
        return statx(AT_FDCWD, path, 0, STATX_BASIC_STATS, stx) == 0 &&
               stx->stx_ino == mapping.inode && stx->stx_dev_major == mapping.dev_major &&
               stx->stx_dev_minor == mapping.dev_minor;
    };
    if (!mapping.path.empty() && mapping.path[0] == '/' && is_it(mapping.path.c_str()))
        return true;
    char map_file[80];
    snprintf(map_file, sizeof(map_file), "/proc/self/map_files/%" PRIxPTR "-%" PRIxPTR,
             mapping.begin, mapping.end);
    return is_it(map_file);
}

void ExamineFile(Mapping *mapping) {
    if (!mapping->shared || mapping->inode == 0)
        return;
    struct statx stx;
    if (!StatMappedFile(*mapping, &stx))
        return;
    if (S_ISCHR(stx.stx_mode))
        mapping->device_dax = IsDeviceDax(stx.stx_rdev_major, stx.stx_rdev_minor);
    else if (S_ISREG(stx.stx_mode))
        mapping->dax_file = (stx.stx_attributes_mask & STATX_ATTR_DAX) != 0 &&
                            (stx.stx_attributes & STATX_ATTR_DAX) != 0;
}

// Whether a "VmFlags: rd wr sh ..." line holds the two-letter `flag`.
bool HasVmFlag(const char *line, const char *flag) {
    for (const char *at = strstr(line, flag); at != nullptr; at = strstr(at + 1, flag)) {
        if (at[-1] == ' ' && (at[2] == ' ' || at[2] == '\n' || at[2] == '\0'))
            return true;
    }
    return false;
}

// Sets `synchronous` of the DAX file mappings from smaps' VmFlags. smaps
// costs a page-table walk of the whole process, so only DAX files pay it.
void ReadSynchronousFlags(std::vector<Mapping> *mappings) {
    FILE *smaps = fopen("/proc/self/smaps", "re");
    if (smaps == nullptr)
        return;
    char *line = nullptr;
    size_t capacity = 0;
    Mapping *current = nullptr;
    while (getline(&line, &capacity, smaps) > 0) {
        uintptr_t begin = 0, end = 0;
        char dash = 0;
        if (sscanf(line, "%" SCNxPTR "%c%" SCNxPTR " ", &begin, &dash, &end) == 3 && dash == '-') {
            current = nullptr;
            for (Mapping &mapping : *mappings) {
                if (mapping.begin == begin && mapping.end == end && mapping.dax_file)
                    current = &mapping;
            }
        } else if (current != nullptr && strncmp(line, "VmFlags:", 8) == 0) {
            current->synchronous = HasVmFlag(line, "sf");
            current = nullptr;
        }
    }
    free(line);
    fclose(smaps);
}

// The mappings that overlap [begin, end), in address order; false when
// maps cannot be read.
bool ReadMappings(uintptr_t begin, uintptr_t end, std::vector<Mapping> *mappings) {
    FILE *maps = fopen("/proc/self/maps", "re");
    if (maps == nullptr)
        return false;
    char *line = nullptr;
    size_t capacity = 0;
    while (getline(&line, &capacity, maps) > 0) {
        Mapping mapping;
        if (!ParseMapsLine(line, &mapping) || mapping.end <= begin)
            continue;
        if (mapping.begin >= end)
            break;
        mappings->push_back(std::move(mapping));
    }
    free(line);
    fclose(maps);
    bool any_dax_file = false;
    for (Mapping &mapping : *mappings) {
        ExamineFile(&mapping);
        any_dax_file |= mapping.dax_file;
    }
    if (any_dax_file)
        ReadSynchronousFlags(mappings);
    return true;
}

std::string Why(const Mapping &mapping) {
    const std::string of = mapping.path.empty() ? "" : " of " + mapping.path;
    if (!mapping.shared)
        return "private memory" + of + ": nothing to write back";
    if (mapping.device_dax)
        return "device DAX" + of;
    if (mapping.synchronous)
        return "MAP_SYNC mapping" + of;
    if (mapping.dax_file)
        return "DAX file" + of +
               " mapped without MAP_SYNC: its blocks are durable only after an fsync";
    return "shared mapping" + of;
}

void Append(std::vector<PersistPlan::Piece> *pieces, uintptr_t begin, uintptr_t end,
            PersistMethod method, std::string why) {
    if (!pieces->empty() && pieces->back().method == method && pieces->back().why == why &&
        pieces->back().end == begin) {
        pieces->back().end = end;
        return;
    }
    pieces->push_back({begin, end, method, std::move(why)});
}

}  // namespace

const char *PersistMethodName(PersistMethod method) {
    switch (method) {
        case PersistMethod::kNone:
            return "none";
        case PersistMethod::kMsync:
            return "msync";
        case PersistMethod::kCpuFlush:
            return "cpu-flush";
    }
    return "unknown";
}

const char *CpuFlushInstruction() {
    return ChosenCacheFlush().instruction;
}

PersistMethod ChoosePersistMethod(const MappingFacts &facts) {
    if (!facts.mapped)
        return PersistMethod::kMsync;
    if (!facts.shared)
        return PersistMethod::kNone;
    if ((facts.device_dax || facts.synchronous) && ChosenCacheFlush().flush_lines != nullptr)
        return PersistMethod::kCpuFlush;
    return PersistMethod::kMsync;
}

PersistPlan PersistPlan::ForRange(const void *addr, size_t length) {
    const auto begin = reinterpret_cast<uintptr_t>(addr);
    const uintptr_t end = begin + length;
    std::vector<Mapping> mappings;
    if (!ReadMappings(begin, end, &mappings))
        return PersistPlan({{begin, end, PersistMethod::kMsync, "/proc/self/maps is unreadable"}});
    std::vector<Piece> pieces;
    uintptr_t covered = begin;
    for (const Mapping &mapping : mappings) {
        if (mapping.begin > covered)
            Append(&pieces, covered, mapping.begin, PersistMethod::kMsync, "nothing mapped");
        const MappingFacts facts{true, mapping.shared, mapping.dax_file, mapping.synchronous,
                                 mapping.device_dax};
        const PersistMethod method = ChoosePersistMethod(facts);
        Append(&pieces, std::max(covered, mapping.begin), std::min(end, mapping.end), method,
               Why(mapping));
        covered = std::min(end, mapping.end);
    }
    if (covered < end)
        Append(&pieces, covered, end, PersistMethod::kMsync, "nothing mapped");
    return PersistPlan(std::move(pieces));
}

PersistPlan::PersistPlan(std::vector<Piece> pieces) : pieces_(std::move(pieces)) {
    has_work_ = std::any_of(pieces_.begin(), pieces_.end(), [](const Piece &piece) {
        return piece.method != PersistMethod::kNone;
    });
}

int PersistPlan::Persist(const void *addr, size_t length) const {
    if (length == 0 || !has_work_)
        return 0;
    const auto begin = reinterpret_cast<uintptr_t>(addr);
    const uintptr_t end = begin + length;
    bool flushed = false;
    int error = 0;
    for (const Piece &piece : pieces_) {
        if (piece.end <= begin)
            continue;
        if (piece.begin >= end)
            break;
        const uintptr_t from = std::max(begin, piece.begin);
        const uintptr_t to = std::min(end, piece.end);
        switch (piece.method) {
            case PersistMethod::kNone:
                break;
            case PersistMethod::kCpuFlush:
                ChosenCacheFlush().flush_lines(from, to);
                flushed = true;
                break;
            case PersistMethod::kMsync:
                if (const int err = Msync(from, to); err != 0 && error == 0)
                    error = err;
                break;
        }
    }
    if (flushed)
        Fence();
    return error;
}

size_t PersistPlan::MsyncBytes(const void *addr, size_t length) const {
    const auto begin = reinterpret_cast<uintptr_t>(addr);
    const uintptr_t end = begin + length;
    size_t bytes = 0;
    for (const Piece &piece : pieces_) {
        if (piece.method == PersistMethod::kMsync && piece.end > begin && piece.begin < end)
            bytes += std::min(end, piece.end) - std::max(begin, piece.begin);
    }
    return bytes;
}

void SetMsyncForTesting(MsyncFunction function) {
    msync_function.store(function != nullptr ? function : ::msync);
}

std::string PersistPlan::Describe() const {
    auto describe = [](const Piece &piece) {
        std::string text = PersistMethodName(piece.method);
        if (piece.method == PersistMethod::kCpuFlush)
            text += std::string(" with ") + CpuFlushInstruction();
        return text + " (" + piece.why + ")";
    };
    if (pieces_.size() == 1)
        return describe(pieces_.front());
    std::string text;
    for (const Piece &piece : pieces_) {
        char range[64];
        snprintf(range, sizeof(range), "[%#" PRIxPTR ", %#" PRIxPTR ") ", piece.begin, piece.end);
        text += (text.empty() ? "" : "; ") + std::string(range) + describe(piece);
    }
    return text;
}

}  // namespace rpma::provider::tcp
