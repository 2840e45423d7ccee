#include "rpma_core/src/provider/tcp/tcp_memory_table.h"

#include <cerrno>

#include "rpma_core/src/log.h"

namespace rpma::provider::tcp {
namespace {

constexpr int kSupportedAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                                 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |
                                 IBV_ACCESS_HUGETLB;

}  // namespace

bool Region::Contains(uint64_t addr, uint64_t length) const {
    const uint64_t base = reinterpret_cast<uintptr_t>(addr_);
    if (addr < base)
        return false;
    const uint64_t offset = addr - base;
    return length <= length_ && offset <= length_ - length;
}

const char *RemoteCheckString(RemoteCheck check) {
    switch (check) {
        case RemoteCheck::kOk:
            return "ok";
        case RemoteCheck::kUnknownKey:
            return "no memory region with this rkey";
        case RemoteCheck::kWrongProtectionDomain:
            return "the memory region belongs to another protection domain";
        case RemoteCheck::kOutOfBounds:
            return "the range is outside the memory region";
        case RemoteCheck::kAccessDenied:
            return "the memory region does not grant the required access";
    }
    return "unknown";
}

MemoryTable::MemoryTable() : key_generator_(std::random_device{}()) {}

int MemoryTable::Register(void *addr, size_t length, int access, uint64_t pd_id,
                          std::shared_ptr<Region> *region) {
    if (addr == nullptr || length == 0) {
        RPMA_LOG_ERROR("cannot register memory: address %p, length %zu (need a non-empty range)",
                       addr, length);
        return EINVAL;
    }
    if (reinterpret_cast<uintptr_t>(addr) + length < reinterpret_cast<uintptr_t>(addr) ||
        length > (size_t{1} << 62)) {
        RPMA_LOG_ERROR("cannot register memory: the range %p + %zu wraps around", addr, length);
        return EINVAL;
    }
    if (access & IBV_ACCESS_ON_DEMAND) {
        RPMA_LOG_ERROR("the tcp provider does not support on-demand paging registrations");
        return EOPNOTSUPP;
    }
    if (access & ~(kSupportedAccess | IBV_ACCESS_OPTIONAL_RANGE)) {
        RPMA_LOG_ERROR("cannot register memory: unsupported access flags 0x%x", access);
        return EINVAL;
    }
    if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
        !(access & IBV_ACCESS_LOCAL_WRITE)) {
        RPMA_LOG_ERROR("cannot register memory: remote write needs IBV_ACCESS_LOCAL_WRITE too");
        return EINVAL;
    }

    // Decided once here, so that a persistent flush only applies it.
    PersistPlan persist_plan = PersistPlan::ForRange(addr, length);
    std::lock_guard lock(mu_);
    uint32_t key;
    do {
        key = static_cast<uint32_t>(key_generator_());
    } while (key == 0 || regions_.count(key) != 0);
    auto entry =
        std::make_shared<Region>(static_cast<uint8_t *>(addr), length, access & kSupportedAccess,
                                 key, pd_id, std::move(persist_plan));
    RPMA_LOG_DEBUG("registered %p+%zu (rkey %#x): a persistent flush persists by %s", addr, length,
                   key, entry->persist_plan().Describe().c_str());
    regions_.emplace(key, entry);
    *region = std::move(entry);
    return 0;
}

void MemoryTable::Deregister(const std::shared_ptr<Region> &region) {
    {
        std::lock_guard lock(mu_);
        regions_.erase(region->Key());
    }
    region->revoked_.store(true);
    // Every access checks revoked_ under its connection's lock: one that
    // started before the store has ended once that lock was free once.
    std::vector<std::shared_ptr<RegionUser>> users;
    {
        std::lock_guard lock(users_mu_);
        std::erase_if(users_, [](const std::weak_ptr<RegionUser> &user) { return user.expired(); });
        for (const auto &user : users_) {
            if (auto alive = user.lock())
                users.push_back(std::move(alive));
        }
    }
    for (const auto &user : users)
        user->Quiesce();
    // A persist worker counts itself in before it checks revoked_.
    for (int running; (running = region->unlocked_persists_.load()) != 0;)
        region->unlocked_persists_.wait(running);
}

int Region::PersistUnlocked(const uint8_t *addr, size_t length) const {
    unlocked_persists_.fetch_add(1);
    const int err = Persist(addr, length);
    if (unlocked_persists_.fetch_sub(1) == 1)
        unlocked_persists_.notify_all();
    return err;
}

void MemoryTable::AddUser(std::weak_ptr<RegionUser> user) {
    std::lock_guard lock(users_mu_);
    std::erase_if(users_, [](const std::weak_ptr<RegionUser> &other) { return other.expired(); });
    users_.push_back(std::move(user));
}

Region *MemoryTable::Lookup(uint32_t key, RegionCache *cache,
                            std::shared_ptr<Region> *owned) const {
    // Deregistration revokes the region before it returns: a cached region
    // that is not revoked is at most being deregistered right now, which is
    // what a table lookup just before that would have found too.
    if (cache != nullptr && cache->region != nullptr && cache->region->Key() == key &&
        !cache->region->Revoked())
        return cache->region.get();
    std::shared_ptr<Region> region;
    {
        std::lock_guard lock(mu_);
        auto it = regions_.find(key);
        if (it != regions_.end())
            region = it->second;
    }
    if (region == nullptr)
        return nullptr;
    Region *found = region.get();
    if (cache != nullptr)
        cache->region = std::move(region);
    else
        *owned = std::move(region);
    return found;
}

RemoteCheck MemoryTable::ResolveRemote(uint32_t rkey, uint64_t addr, uint64_t length,
                                       uint64_t pd_id, int required_access, MemorySegment *segment,
                                       RegionCache *cache) const {
    std::shared_ptr<Region> owned;
    Region *region = Lookup(rkey, cache, &owned);
    if (region == nullptr)
        return RemoteCheck::kUnknownKey;
    if (region->PdId() != pd_id)
        return RemoteCheck::kWrongProtectionDomain;
    if (!region->Contains(addr, length))
        return RemoteCheck::kOutOfBounds;
    if ((region->Access() & required_access) != required_access)
        return RemoteCheck::kAccessDenied;
    segment->addr = reinterpret_cast<uint8_t *>(static_cast<uintptr_t>(addr));
    segment->length = length;
    segment->region = region;
    segment->owner = std::move(owned);
    return RemoteCheck::kOk;
}

bool MemoryTable::ResolveLocal(const ibv_sge &sge, uint64_t pd_id, int required_access,
                               MemorySegment *segment, RegionCache *cache) const {
    std::shared_ptr<Region> owned;
    Region *region = Lookup(sge.lkey, cache, &owned);
    if (region == nullptr || region->PdId() != pd_id || !region->Contains(sge.addr, sge.length) ||
        (region->Access() & required_access) != required_access)
        return false;
    segment->addr = reinterpret_cast<uint8_t *>(static_cast<uintptr_t>(sge.addr));
    segment->length = sge.length;
    segment->region = region;
    segment->owner = std::move(owned);
    return true;
}

}  // namespace rpma::provider::tcp
