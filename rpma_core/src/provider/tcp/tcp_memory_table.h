// The process-wide table of registered memory, keyed by rkey (lkey == rkey).
//
// Remote operations look a region up, check bounds and access, and then let
// the kernel move bytes straight between a socket and the region. A region can
// be deregistered at any moment by the application, so whatever touches a
// region's memory (a memcpy, or a syscall on it) does so under the lock of
// the connection doing it, after checking that the region is not revoked;
// deregistration revokes the region and then takes and releases the lock of
// every connection (RegionUser), so when it returns no access is running
// and none will start. A check is a plain load; the cost is the
// deregistration's, which is rare.
#ifndef RPMA_CORE_SRC_PROVIDER_TCP_TCP_MEMORY_TABLE_H
#define RPMA_CORE_SRC_PROVIDER_TCP_TCP_MEMORY_TABLE_H

#include <infiniband/verbs.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <random>
#include <unordered_map>
#include <vector>

#include "rpma_core/src/provider/provider.h"
#include "rpma_core/src/provider/tcp/tcp_containers.h"
#include "rpma_core/src/provider/tcp/tcp_persist.h"

namespace rpma::provider::tcp {

class Region : public std::enable_shared_from_this<Region> {
  public:
    Region(uint8_t *addr, size_t length, int access, uint32_t key, uint64_t pd_id,
           PersistPlan persist_plan)
        : addr_(addr),
          length_(length),
          access_(access),
          key_(key),
          pd_id_(pd_id),
          persist_plan_(std::move(persist_plan)) {}

    uint8_t *Addr() const { return addr_; }
    size_t Length() const { return length_; }
    int Access() const { return access_; }
    uint32_t Key() const { return key_; }
    bool Revoked() const { return revoked_.load(); }
    uint64_t PdId() const { return pd_id_; }
    // False when every page was in a private mapping at registration
    // (anonymous memory, MAP_PRIVATE files): a persistent flush has nothing
    // to write back there. Shared mappings are msync'ed or, on DAX, flushed
    // from the CPU caches (tcp_persist.h).
    bool NeedsWriteBack() const { return persist_plan_.HasWork(); }
    const PersistPlan &persist_plan() const { return persist_plan_; }

    // Makes [addr, addr + length), inside the region, durable by the method
    // chosen at registration. 0, EFAULT when the region was deregistered, or
    // msync's errno.
    int Persist(const uint8_t *addr, size_t length) const {
        if (length == 0)
            return 0;
        if (Revoked())
            return EFAULT;
        return persist_plan_.Persist(addr, length);
    }
    // Persist from a thread that holds no connection's lock (a persist
    // worker, tcp_persist_workers.h): deregistration waits for it instead.
    int PersistUnlocked(const uint8_t *addr, size_t length) const;

    // Overflow-safe: [addr, addr + length) lies inside the region.
    bool Contains(uint64_t addr, uint64_t length) const;

    // What the peers' accepted operations did here (rpma_ext_mr_get_remote_
    // stats). Several connections' threads count into one region; relaxed,
    // since a reader wants totals, not an order among them.
    void CountWritten(uint64_t bytes) {
        counters_.bytes_written.fetch_add(bytes, std::memory_order_relaxed);
    }
    void CountRead(uint64_t bytes) {
        counters_.bytes_read.fetch_add(bytes, std::memory_order_relaxed);
    }
    void CountPersisted(uint64_t bytes) {
        counters_.persistent_flushes.fetch_add(1, std::memory_order_relaxed);
        counters_.bytes_persisted.fetch_add(bytes, std::memory_order_relaxed);
    }
    RemoteAccessCounts Counts() const {
        return {counters_.bytes_written.load(std::memory_order_relaxed),
                counters_.bytes_read.load(std::memory_order_relaxed),
                counters_.persistent_flushes.load(std::memory_order_relaxed),
                counters_.bytes_persisted.load(std::memory_order_relaxed)};
    }

  private:
    friend class MemoryTable;

    // On a cache line of their own: every request writes them, while the
    // fields above are only read on every request (ResolveRemote).
    struct alignas(64) Counters {
        std::atomic<uint64_t> bytes_written{0};
        std::atomic<uint64_t> bytes_read{0};
        std::atomic<uint64_t> persistent_flushes{0};
        std::atomic<uint64_t> bytes_persisted{0};
    };

    uint8_t *const addr_;
    const size_t length_;
    const int access_;
    const uint32_t key_;
    const uint64_t pd_id_;
    const PersistPlan persist_plan_;
    std::atomic<bool> revoked_{false};
    // PersistUnlocked calls running; Deregister waits for zero.
    mutable std::atomic<int> unlocked_persists_{0};
    Counters counters_;
};

// A piece of registered memory an operation reads from or writes to.
//
// A segment resolved through a connection's RegionCache borrows its region
// from the cache: good while that cache keeps it, i.e. under the
// connection's lock until the cache resolves another key. Own() takes a
// reference of its own, for a segment that outlives that (queued messages,
// posted receives, READ destinations). Borrowing saves two atomic
// operations per request on the data path.
struct MemorySegment {
    uint8_t *addr = nullptr;
    size_t length = 0;
    Region *region = nullptr;
    std::shared_ptr<Region> owner;

    void Own() {
        if (owner == nullptr && region != nullptr)
            owner = region->shared_from_this();
    }
};

// The pieces of one transfer; one inline covers the usual single sge.
using SegmentList = SmallVector<MemorySegment, 2>;

// What touches registered memory (a connection): Quiesce returns once an
// access that is running has ended, by taking and releasing the lock every
// access holds.
class RegionUser {
  public:
    virtual ~RegionUser() = default;
    virtual void Quiesce() = 0;
};

enum class RemoteCheck {
    kOk,
    kUnknownKey,
    kWrongProtectionDomain,
    kOutOfBounds,
    kAccessDenied,
};
const char *RemoteCheckString(RemoteCheck check);

// The last region a connection resolved, to skip the table's lock and hash
// for the next request that uses it (requests tend to hit the same one).
// Owned and locked by its user.
struct RegionCache {
    std::shared_ptr<Region> region;
};

class MemoryTable {
  public:
    MemoryTable();

    // ibv_reg_mr's argument rules: EINVAL for a null/empty range or unknown
    // access bits, REMOTE_WRITE/ATOMIC without LOCAL_WRITE; EOPNOTSUPP for
    // on-demand paging.
    int Register(void *addr, size_t length, int access, uint64_t pd_id,
                 std::shared_ptr<Region> *region);
    // Returns once nothing touches the region any more.
    void Deregister(const std::shared_ptr<Region> &region);
    // Deregister quiesces `user` as long as it lives.
    void AddUser(std::weak_ptr<RegionUser> user);

    // The target side of a remote operation. With a cache the segment
    // borrows its region (MemorySegment), without one it owns it.
    RemoteCheck ResolveRemote(uint32_t rkey, uint64_t addr, uint64_t length, uint64_t pd_id,
                              int required_access, MemorySegment *segment,
                              RegionCache *cache = nullptr) const;
    // A local sge: its lkey must name a region of `pd_id` that contains it and
    // grants `required_access` (0 or IBV_ACCESS_LOCAL_WRITE). Borrowing or
    // owning as ResolveRemote.
    bool ResolveLocal(const ibv_sge &sge, uint64_t pd_id, int required_access,
                      MemorySegment *segment, RegionCache *cache = nullptr) const;

  private:
    // The region with `key`, kept by the cache (a borrowed pointer) or, with
    // no cache, in *owned.
    Region *Lookup(uint32_t key, RegionCache *cache, std::shared_ptr<Region> *owned) const;

    mutable std::mutex mu_;
    std::unordered_map<uint32_t, std::shared_ptr<Region>> regions_;
    std::mutex users_mu_;
    std::vector<std::weak_ptr<RegionUser>> users_;
    std::mt19937 key_generator_;
};

}  // namespace rpma::provider::tcp

#endif  // RPMA_CORE_SRC_PROVIDER_TCP_TCP_MEMORY_TABLE_H
