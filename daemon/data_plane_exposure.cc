// Exposure: a region registered in a protection domain of its own, with
// the persistence method its clients use, and what clients did to it.
#include <array>

#include "daemon/data_plane.h"
#include "daemon/data_plane_state.h"
#include "daemon/log.h"
#include "daemon/persistence_policy.h"
#include "rpma_ext.h"

namespace rpmad {

// Asked of a small registration, since only the provider knows (tcp applies them
// in this process; on verbs the NIC applies them unseen: RPMA_E_NOSUPP).
bool ProviderCountsTraffic(rpma::Peer &peer) {
    std::array<std::byte, 64> probe{};
    auto mr = rpma::MemoryRegion::Register(peer, probe, RPMA_MR_USAGE_READ_SRC);
    if (!mr.ok()) {
        Log().warn(
            "data plane: cannot ask whether the provider counts client traffic ({}); "
            "reporting it as unknown",
            mr.error().message());
        return false;
    }
    auto stats = mr->RemoteStats();
    if (!stats.ok() && stats.error().code() != RPMA_E_NOSUPP)
        Log().warn("data plane: {}; reporting client traffic as unknown", stats.error().message());
    return stats.ok();
}

namespace {

RegionTraffic TrafficOf(const rpma::MemoryRegion &mr) {
    auto stats = mr.RemoteStats();
    if (!stats.ok())
        return {};
    return {stats->bytes_written, stats->bytes_read, stats->flushes, stats->bytes_persisted};
}

}  // namespace

StatusOr<RegionAccess> DataPlane::Expose(std::shared_ptr<Region> region) {
    const auto chosen =
        ChoosePersistence(persistence_, flush_persists_, region->granularity(), region->name());
    if (!chosen.ok())
        return chosen.status();
    const Persistence method = *chosen;
    auto peer = rpma::Peer::New(peer_->context());
    if (!peer.ok())
        return FromRpma(peer.error(), StatusCode::kResourceExhausted);
    int usage =
        RPMA_MR_USAGE_WRITE_DST | RPMA_MR_USAGE_READ_SRC | RPMA_MR_USAGE_FLUSH_TYPE_VISIBILITY;
    if (method == Persistence::kApm)
        usage |= RPMA_MR_USAGE_FLUSH_TYPE_PERSISTENT;
    auto mr = rpma::MemoryRegion::Register(*peer, region->bytes(), usage);
    if (!mr.ok()) {
        // The kernel pins fsdax pages for an RNIC only with on-demand
        // paging (ibv_reg_mr: EOPNOTSUPP, RPMA_E_PROVIDER); device DAX it
        // pins. Out of locked memory is RPMA_E_NOMEM.
        if (mr.error().code() == RPMA_E_PROVIDER && !pins_fsdax_pages_ &&
            region->granularity() != Granularity::kPage)
            return Status(StatusCode::kFailedPrecondition,
                          "registering region '" + region->name() + "' failed (" +
                              mr.error().message() +
                              "): this RDMA device cannot pin pages of a DAX file system; "
                              "serve the PMem as device DAX (storage.devdax_regions) or use a "
                              "device with on-demand paging");
        return Status(StatusCode::kResourceExhausted,
                      "registering region '" + region->name() + "' failed (" +
                          mr.error().message() +
                          "): raise the memlock limit (LimitMEMLOCK=infinity)");
    }
    auto cfg = rpma::PeerCfg::New();
    if (!cfg.ok())
        return FromRpma(cfg.error());
    if (auto set = cfg->SetDirectWriteToPmem(method == Persistence::kApm); !set.ok())
        return FromRpma(set.error());
    auto region_descriptor = mr->Descriptor();
    auto cfg_descriptor = cfg->Descriptor();
    if (!region_descriptor.ok() || !cfg_descriptor.ok())
        return Status(StatusCode::kInternal, "describing region '" + region->name() + "' failed");
    RegionAccess access{std::move(*region_descriptor), std::move(*cfg_descriptor), method};
    auto exposed = std::make_shared<ExposedRegion>(
        ExposedRegion{std::move(region), std::move(*peer), std::move(*mr), access});
    std::lock_guard lock(regions_mu_);
    regions_[exposed->region->name()] = std::move(exposed);
    return access;
}

StatusOr<RegionAccess> DataPlane::Access(const std::string &region_name) const {
    std::lock_guard lock(regions_mu_);
    auto it = regions_.find(region_name);
    if (it == regions_.end())
        return Status(StatusCode::kNotFound, "region '" + region_name + "' is not exposed");
    return it->second->access;
}

void DataPlane::Withdraw(const std::string &region_name) {
    std::shared_ptr<ExposedRegion> withdrawn;
    {
        std::lock_guard lock(regions_mu_);
        if (auto it = regions_.find(region_name); it != regions_.end()) {
            withdrawn = std::move(it->second);
            regions_.erase(it);
            withdrawing_.push_back(withdrawn);
        }
    }
    // The links of the region hold the last references to it but this one.
    loop_->Call([this, region_name] {
        std::vector<uint64_t> ids;
        for (const auto &[id, link] : links_)
            if (link->region->region->name() == region_name)
                ids.push_back(id);
        for (uint64_t id : ids)
            Close(id, false);
    });
    // No connection reaches the region any more: its counts are final.
    if (withdrawn != nullptr) {
        std::lock_guard lock(regions_mu_);
        if (counts_traffic_)
            withdrawn_traffic_ += TrafficOf(withdrawn->mr);
        std::erase(withdrawing_, withdrawn);
    }
}

RegionTraffic DataPlane::Traffic(const std::string &region_name) const {
    if (!counts_traffic_)
        return {};
    std::shared_ptr<ExposedRegion> exposed;
    {
        std::lock_guard lock(regions_mu_);
        auto it = regions_.find(region_name);
        if (it == regions_.end())
            return {};
        exposed = it->second;
    }
    return TrafficOf(exposed->mr);
}

RegionTraffic DataPlane::TotalTraffic() const {
    if (!counts_traffic_)
        return {};
    // Under the lock a region is counted exactly once: exposed, being
    // withdrawn, or in withdrawn_traffic_. A few relaxed loads per region.
    std::lock_guard lock(regions_mu_);
    RegionTraffic total = withdrawn_traffic_;
    for (const auto &[name, exposed] : regions_)
        total += TrafficOf(exposed->mr);
    for (const auto &exposed : withdrawing_)
        total += TrafficOf(exposed->mr);
    return total;
}

}  // namespace rpmad
