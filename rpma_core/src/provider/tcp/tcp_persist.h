// How the target makes a registered range durable before it acknowledges a
// persistent flush. Decided once, at registration, from what the kernel says
// about the mappings under the range (/proc/self/maps, and smaps for DAX
// files):
//
//   cpu-flush  a DAX mapping: a file on fsdax mapped with MAP_SYNC (VmFlags
//              "sf"; the kernel accepts MAP_SYNC on DAX files only), or a
//              device-DAX character device (/dev/daxX.Y). Stores reach the
//              medium through the CPU caches, so writing the lines back and
//              a fence is enough. msync would cost a syscall on fsdax, and
//              fails on device DAX, which has no fsync.
//   msync      a shared mapping of a page-cache file, and a DAX file mapped
//              without MAP_SYNC (its blocks are durable only after an fsync).
//   none       private memory (anonymous, MAP_PRIVATE): nothing to write back.
//
// Why not libpmem2, which rpmad maps its regions with: librpma.so.0 is a
// drop-in for Debian's, which needs only libibverbs, librdmacm and libc;
// libpmem2 would load libndctl, libdaxctl, libudev, libkmod, libzstd, liblzma
// and libcrypto into every librpma program and run its constructor there.
// And pmem2_map_from_existing enters the range in libpmem2's process-wide
// registry of maps, so it fails (PMEM2_E_MAP_EXISTS) exactly where the
// application already mapped the memory with libpmem2 (rpmad does), and for
// two registrations of one buffer. What is needed is libpmem2's cache flush
// alone: CLWB, CLFLUSHOPT or CLFLUSH per 64-byte line, chosen by CPUID as
// libpmem2 does, then SFENCE.
#ifndef RPMA_CORE_SRC_PROVIDER_TCP_TCP_PERSIST_H
#define RPMA_CORE_SRC_PROVIDER_TCP_TCP_PERSIST_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace rpma::provider::tcp {

enum class PersistMethod : uint8_t { kNone, kMsync, kCpuFlush };
const char *PersistMethodName(PersistMethod method);  // "none", "msync", "cpu-flush"

// The instruction cpu-flush writes a line back with on this CPU: "clwb",
// "clflushopt" or "clflush"; "" where the build has no cache flush (then DAX
// mappings are msync'ed, which fails on device DAX).
const char *CpuFlushInstruction();

// What the kernel says about one mapping under a registered range.
struct MappingFacts {
    bool mapped = false;       // false: a hole, nothing mapped there
    bool shared = false;       // MAP_SHARED
    bool dax_file = false;     // a file in DAX state (statx STATX_ATTR_DAX)
    bool synchronous = false;  // MAP_SYNC (smaps VmFlags "sf")
    bool device_dax = false;   // a device-DAX character device
};

// The rule alone, so that it is tested without DAX hardware. A hole gets
// msync, which reports it (ENOMEM) when a flush reaches it.
PersistMethod ChoosePersistMethod(const MappingFacts &facts);

// The methods of one registered range, piece by piece (a range may span
// mappings of different kinds; usually it is one piece). Immutable.
class PersistPlan {
  public:
    struct Piece {
        uintptr_t begin = 0;
        uintptr_t end = 0;
        PersistMethod method = PersistMethod::kMsync;
        std::string why;  // what the kernel said, for the log
    };

    // Reads /proc/self/maps (and /proc/self/smaps when a DAX file is mapped
    // under the range); when they cannot be read, the whole range is msync'ed.
    static PersistPlan ForRange(const void *addr, size_t length);

    // `pieces` cover the range in order, without gaps.
    explicit PersistPlan(std::vector<Piece> pieces);

    // Makes [addr, addr + length), which lies inside the plan's range,
    // durable: 0, or msync's errno.
    int Persist(const void *addr, size_t length) const;

    // How many of [addr, addr + length)'s bytes Persist would msync.
    size_t MsyncBytes(const void *addr, size_t length) const;

    // False when every piece is kNone: a persistent flush has nothing to do.
    bool HasWork() const { return has_work_; }
    const std::vector<Piece> &pieces() const { return pieces_; }
    // One line for the log, e.g. "cpu-flush with clwb (device DAX /dev/dax0.0)".
    std::string Describe() const;

  private:
    std::vector<Piece> pieces_;
    bool has_work_ = false;
};

// Tests hold a persist in progress by replacing msync (which the
// replacement may still call); nullptr restores msync.
using MsyncFunction = int (*)(void *addr, size_t length, int flags);
void SetMsyncForTesting(MsyncFunction function);

}  // namespace rpma::provider::tcp

#endif  // RPMA_CORE_SRC_PROVIDER_TCP_TCP_PERSIST_H
