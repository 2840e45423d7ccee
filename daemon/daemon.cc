#include "daemon/daemon.h"

#include <algorithm>

#include "daemon/log.h"

namespace rpmad {
namespace {

StatusOr<RegionInfo> FindInfo(const RegionStore &store, const std::string &name) {
    for (auto &info : store.List())
        if (info.name == name)
            return info;
    return Status(StatusCode::kNotFound, "region '" + name +
                                             "' does not exist: list the regions with "
                                             "ListRegions (rpmactl region list)");
}

// An error of the pool's disk (INTERNAL: EIO and the like) goes to the log
// too: the operator, not only the caller, has to act on it.
Status LoggedIfDiskError(const std::string &name, Status status) {
    if (status.code() == StatusCode::kInternal)
        Log().error("region '{}': {}", name, status.message());
    return status;
}

}  // namespace

Daemon::Daemon(const Config &config)
    : config_(config),
      started_(std::chrono::steady_clock::now()),
      sessions_(config.max_sessions, std::chrono::seconds(config.token_ttl_seconds),
                SessionQuotas{config.max_sessions_per_identity, config.max_pending_per_peer}) {}

Daemon::~Daemon() {
    // The data plane holds regions; it goes before the store.
    data_plane_.reset();
}

StatusOr<std::unique_ptr<Daemon>> Daemon::Start(const Config &config) {
    std::unique_ptr<Daemon> daemon(new Daemon(config));
    // Device-DAX regions are configured, not created: the store maps them
    // beside the pool's cataloged ones.
    std::vector<RegionMetadata> device_dax;
    for (const DevdaxRegionConfig &d : config.devdax_regions) {
        RegionMetadata m;
        m.name = d.name;
        m.path = d.path;
        m.offset = d.offset;
        m.size = d.size;
        m.backing = Backing::kDeviceDax;
        device_dax.push_back(std::move(m));
    }
    auto store = RegionStore::Open(RegionStoreOptions{config.pool_dir, config.capacity,
                                                      config.max_regions, config.max_region_size},
                                   std::move(device_dax));
    if (!store.ok())
        return store.status();
    daemon->store_ = std::move(*store);
    for (const auto &problem : daemon->store_->problems())
        Log().warn("region store: {}", problem);

    auto listen = SplitHostPort(config.data_listen, "data.listen");
    if (!listen.ok())
        return listen.status();
    auto plane =
        DataPlane::Start(*listen, config.persistence, daemon->sessions_, daemon->counters_);
    if (!plane.ok())
        return plane.status();
    daemon->data_plane_ = std::move(*plane);

    for (const auto &info : daemon->store_->List()) {
        if (!info.healthy)
            continue;
        auto region = daemon->store_->Get(info.name);
        auto exposed = region.ok() ? daemon->data_plane_->Expose(*region)
                                   : StatusOr<RegionAccess>(region.status());
        if (!exposed.ok())
            Log().error("region '{}': cannot be served: {}", info.name, exposed.status().message());
    }
    return daemon;
}

RegionView Daemon::ViewOf(const RegionInfo &info) const {
    RegionView view{info, sessions_.CountForRegion(info.name), Persistence::kAuto, {}, false};
    if (auto access = data_plane_->Access(info.name); access.ok())
        view.persistence = access->persistence;
    view.traffic = data_plane_->Traffic(info.name);
    view.traffic_counted = data_plane_->counts_traffic();
    return view;
}

StatusOr<RegionView> Daemon::CreateRegion(const std::string &name, uint64_t size) {
    std::lock_guard lock(regions_mu_);
    if (draining_)
        return Status(StatusCode::kUnavailable, "rpmad is stopping: retry on its successor");
    auto region = store_->Create(name, size);
    if (!region.ok())
        return LoggedIfDiskError(name, region.status());
    auto exposed = data_plane_->Expose(*region);
    if (!exposed.ok()) {
        // A region nobody can reach is no region: undo the create.
        if (Status undone = store_->Delete(name); !undone.ok())
            Log().error("region '{}': removing it after a failed registration failed: {}", name,
                        undone.message());
        return exposed.status();
    }
    Log().info("region '{}': created, {} bytes, {} granularity", name, size,
               GranularityName((*region)->granularity()));
    auto info = FindInfo(*store_, name);
    if (!info.ok())
        return info.status();
    return ViewOf(*info);
}

StatusOr<RegionView> Daemon::GetRegion(const std::string &name) const {
    if (Status valid = ValidateRegionName(name); !valid.ok())
        return valid;
    auto info = FindInfo(*store_, name);
    if (!info.ok())
        return info.status();
    return ViewOf(*info);
}

std::vector<RegionView> Daemon::ListRegions() const {
    std::vector<RegionView> views;
    for (const auto &info : store_->List())
        views.push_back(ViewOf(info));
    return views;
}

StatusOr<size_t> Daemon::DeleteRegion(const std::string &name, bool force) {
    if (Status valid = ValidateRegionName(name); !valid.ok())
        return valid;
    std::lock_guard lock(regions_mu_);
    auto info = FindInfo(*store_, name);
    if (!info.ok())
        return info.status();
    // The store refuses to delete a configured device-DAX region: say so
    // before any session is closed or the region withdrawn.
    if (info->backing == BackingName(Backing::kDeviceDax)) {
        if (Status refused = store_->Delete(name); !refused.ok())
            return refused;
        return size_t{0};
    }
    const size_t open = sessions_.CountForRegion(name);
    if (open > 0 && !force)
        return Status(StatusCode::kFailedPrecondition,
                      "region '" + name + "' has " + std::to_string(open) +
                          " open session(s): close them first, or delete with force");
    const auto closed = sessions_.CloseRegion(name);
    data_plane_->Withdraw(name);
    if (Status deleted = store_->Delete(name); !deleted.ok()) {
        // Still in the store (the catalog was left as it was): serve it
        // again rather than strand it. A delete that reached the catalog
        // without being durable took it out of the store all the same.
        if (auto region = store_->Get(name); region.ok())
            (void)data_plane_->Expose(*region);
        return LoggedIfDiskError(name, deleted);
    }
    Log().info("region '{}': deleted ({} session(s) closed)", name, closed.size());
    return closed.size();
}

StatusOr<SessionOffer> Daemon::OpenSession(const std::string &region_name, const Requester &who) {
    if (Status valid = ValidateRegionName(region_name); !valid.ok())
        return valid;
    std::lock_guard lock(regions_mu_);
    if (draining_)
        return Status(StatusCode::kUnavailable, "rpmad is stopping: retry on its successor");
    auto region = store_->Get(region_name);
    if (!region.ok())
        return region.status();
    auto access = data_plane_->Access(region_name);
    if (!access.ok())
        return Status(StatusCode::kFailedPrecondition,
                      "region '" + region_name +
                          "' is not served on the data plane (see rpmad's log for why)");
    auto grant = sessions_.Open(region_name, (*region)->id(), who);
    if (!grant.ok())
        return grant.status();
    counters_.sessions_opened++;
    data_plane_->Wake();
    Log().info("session {}: opened on region '{}' by {} from {}",
               wire::SessionIdString(grant->token.session_id), region_name, who.identity,
               who.address);
    return SessionOffer{*grant, *access, (*region)->size(), data_plane_->address(),
                        data_plane_->port()};
}

Status Daemon::CloseSession(const std::string &session_id) {
    auto id = wire::ParseSessionId(session_id);
    if (!id)
        return Status(StatusCode::kInvalidArgument,
                      "'" + session_id +
                          "' is not a session id (16 lowercase hex digits, as ListSessions "
                          "shows them)");
    if (Status closed = data_plane_->CloseSession(*id); !closed.ok())
        return closed;
    Log().info("session {}: closed by request", session_id);
    return Status();
}

StatusOr<std::vector<SessionInfo>> Daemon::ListSessions(const std::string &region) const {
    if (!region.empty())
        if (Status valid = ValidateRegionName(region); !valid.ok())
            return valid;
    return sessions_.List(region);
}

StatsView Daemon::Stats() const {
    StatsView stats;
    stats.provider = data_plane_->provider();
    stats.uptime = std::chrono::duration_cast<std::chrono::seconds>(
        std::chrono::steady_clock::now() - started_);
    const auto regions = store_->List();
    stats.regions = regions.size();
    stats.unhealthy_regions =
        std::count_if(regions.begin(), regions.end(), [](const auto &r) { return !r.healthy; });
    stats.pool_used_bytes = store_->used_bytes();
    stats.pool_capacity_bytes = config_.capacity;
    stats.sessions = sessions_.size();
    stats.connections = data_plane_->connections();
    stats.counters = &counters_;
    stats.traffic = data_plane_->TotalTraffic();
    stats.traffic_counted = data_plane_->counts_traffic();
    return stats;
}

void Daemon::Drain() {
    {
        std::lock_guard lock(regions_mu_);
        draining_ = true;
    }
    data_plane_->Drain(std::chrono::milliseconds(3000));
}

}  // namespace rpmad
