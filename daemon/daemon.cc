#include "daemon/daemon.h"

#include <sys/statvfs.h>

#include <algorithm>
#include <ctime>

#include "daemon/checksum.h"
#include "daemon/daemon_id.h"
#include "daemon/log.h"
#include "daemon/replica_set.h"
#include "rpma_version.h"
#include "util/host_port.h"

namespace rpmad {
namespace {

StatusOr<RegionInfo> FindInfo(const RegionStore &store, const std::string &name) {
    if (auto info = store.Find(name); info.ok())
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
    controller_.reset();
    cluster_.reset();
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
    // After the store took the pool's lock: no other rpmad makes one meanwhile.
    auto id = LoadOrCreateDaemonId(config.pool_dir);
    if (!id.ok())
        return id.status();
    daemon->daemon_id_ = std::move(*id);
    Log().info("daemon id {} (kept in {}/{})", daemon->daemon_id_, config.pool_dir,
               kDaemonIdFileName);

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
    RegionView view;
    view.info = info;
    view.open_sessions = sessions_.CountForRegion(info.name);
    if (auto access = data_plane_->Access(info.name); access.ok())
        view.persistence = access->persistence;
    view.traffic = data_plane_->Traffic(info.name);
    view.traffic_counted = data_plane_->counts_traffic();
    if (auto record = ParseReplicaSetRecord(info.replica_set); record.ok())
        view.replica_set = std::move(*record);
    const v1::ReplicaSetMember *self = FindMember(view.replica_set, daemon_id_);
    if (self != nullptr && self->state() == v1::ReplicaSetMember::STATE_REPAIRING) {
        std::lock_guard lock(repair_mu_);
        auto it = repair_progress_.find(info.name);
        if (it != repair_progress_.end() && it->second.first == info.id &&
            it->second.second.generation() == view.replica_set.generation())
            view.repair_progress = it->second.second;
    }
    return view;
}

StatusOr<std::pair<v1::ReplicaSetRecord, uint64_t>> Daemon::RecordOf(
    const std::string &name) const {
    auto info = FindInfo(*store_, name);
    if (!info.ok())
        return info.status();
    auto record = ParseReplicaSetRecord(info->replica_set);
    if (!record.ok())
        return Status(record.status().code(),
                      "region '" + name + "': " + record.status().message());
    return std::make_pair(std::move(*record), info->id);
}

Status Daemon::CheckSessionGeneration(const std::string &name, uint64_t generation) const {
    if (generation == 0)
        return Status();
    auto held = RecordOf(name);
    if (!held.ok())
        return held.status();
    const uint64_t current = held->first.generation();
    if (generation >= current)
        return Status();
    return Status(StatusCode::kFailedPrecondition,
                  "region '" + name + "': the replica set moved on to generation " +
                      std::to_string(current) + " (this session was asked for under generation " +
                      std::to_string(generation) +
                      "): another writer changed it; reopen the region to read the new record");
}

std::shared_ptr<std::mutex> Daemon::ChangeMutexOf(const std::string &name) {
    std::lock_guard lock(change_mus_mu_);
    auto &mu = change_mus_[name];
    if (mu == nullptr)
        mu = std::make_shared<std::mutex>();
    return mu;
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
    if (info->backing == Backing::kDeviceDax) {
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
    {
        std::lock_guard repair(repair_mu_);
        repair_progress_.erase(name);
    }
    Log().info("region '{}': deleted ({} session(s) closed)", name, closed.size());
    return closed.size();
}

StatusOr<SessionOffer> Daemon::OpenSession(const std::string &region_name, const Requester &who,
                                           uint64_t replica_set_generation) {
    if (Status valid = ValidateRegionName(region_name); !valid.ok())
        return valid;
    // Refusals too: a slow refusal is as much a client's wait.
    struct Timed {
        LatencyHistogram &histogram;
        const std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
        ~Timed() { histogram.Observe(std::chrono::steady_clock::now() - started); }
    } timed{counters_.open_session_time};
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
    if (Status moved = CheckSessionGeneration(region_name, replica_set_generation); !moved.ok())
        return moved;
    auto grant = sessions_.Open(region_name, (*region)->id(), who, replica_set_generation);
    if (!grant.ok())
        return grant.status();
    // A SetReplicaSet whose record was stored between the check above and
    // the session's insertion did not see it when it fenced: look again, so
    // that either the fence closes it or it is refused here.
    if (Status moved = CheckSessionGeneration(region_name, replica_set_generation); !moved.ok()) {
        (void)sessions_.Close(grant->token.session_id);
        return moved;
    }
    counters_.sessions_opened++;
    data_plane_->Wake();
    Log().info("session {}: opened on region '{}' by {} from {} (replica-set generation {})",
               wire::SessionIdString(grant->token.session_id), region_name, who.identity,
               who.address, replica_set_generation);
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
    stats.catalog_commit_time = &store_->catalog_commit_time();
    stats.daemon_id = daemon_id_;
    stats.traffic = data_plane_->TotalTraffic();
    stats.traffic_counted = data_plane_->counts_traffic();
    if (cluster_)
        stats.cluster = cluster_->state();
    return stats;
}

Status Daemon::JoinCluster(const std::string &control_address) {
    const ClusterConfig &cluster = config_.cluster;
    rpma::cluster::NodeRecord base;
    base.set_node_id(daemon_id_);
    base.set_control_address(cluster.advertise_control.empty() ? control_address
                                                               : cluster.advertise_control);
    base.set_data_address(
        cluster.advertise_data.empty()
            ? rpma::util::JoinHostPort(data_plane_->address(), data_plane_->port())
            : cluster.advertise_data);
    base.set_provider(data_plane_->provider());
    if (config_.persistence != Persistence::kGpspm)
        base.add_persistence("apm");
    if (config_.persistence != Persistence::kApm)
        base.add_persistence("gpspm");
    base.set_zone(cluster.zone);
    base.set_version(RPMA_VERSION);
    base.set_started_unix_seconds(std::chrono::duration_cast<std::chrono::seconds>(
                                      std::chrono::system_clock::now().time_since_epoch())
                                      .count());
    auto node = ClusterNode::Start(cluster, [this, base] {
        rpma::cluster::NodeRecord record = base;
        // Without storage.capacity the filesystem's size and room decide.
        struct statvfs fs {};
        const bool known = statvfs(store_->pool_dir().c_str(), &fs) == 0;
        const uint64_t fs_size = known ? uint64_t{fs.f_blocks} * fs.f_frsize : 0;
        const uint64_t fs_free = known ? uint64_t{fs.f_bavail} * fs.f_frsize : 0;
        const uint64_t used = store_->used_bytes();
        const uint64_t capacity = config_.capacity != 0 ? config_.capacity : fs_size;
        record.set_capacity_bytes(capacity);
        record.set_free_bytes(std::min(capacity > used ? capacity - used : 0, fs_free));
        return record;
    });
    if (!node.ok())
        return node.status();
    cluster_ = std::move(*node);
    // The controller reaches the other nodes as this one is reached: its
    // admin token, a client token (the first), its certificate, trusting
    // the CA it checks client certificates with.
    ClusterController::Options controller;
    controller.config = cluster;
    controller.node_id = daemon_id_;
    controller.lease = [node = cluster_.get()] { return node->state().lease; };
    controller.connect.admin_token = config_.admin_token;
    if (!config_.client_tokens.empty())
        controller.connect.client_token = config_.client_tokens.front().token;
    if (config_.tls.enabled()) {
        controller.connect.tls = true;
        controller.connect.ca_file = config_.tls.client_ca_file;
        controller.connect.cert_file = config_.tls.cert_file;
        controller.connect.key_file = config_.tls.key_file;
    }
    auto started = ClusterController::Start(std::move(controller));
    if (!started.ok())
        return started.status();
    controller_ = std::move(*started);
    return Status();
}

StatusOr<std::pair<v1::ReplicaSetRecord, uint64_t>> Daemon::GetReplicaSet(
    const std::string &region) const {
    if (Status valid = ValidateRegionName(region); !valid.ok())
        return valid;
    // A configured device-DAX region is not in the catalog and holds no
    // record: answered as an rpmad without replica sets answers, so that
    // clients use it as they did before records (client/REPLICA_SETS.md,
    // "Older daemons").
    if (auto info = FindInfo(*store_, region); info.ok() && info->backing == Backing::kDeviceDax)
        return Status(StatusCode::kUnimplemented,
                      "region '" + region +
                          "' is on device DAX, which holds no replica-set record: clients use "
                          "it without one; replicate regions of the pool directory to have it");
    return RecordOf(region);
}

StatusOr<ReplicaSetChange> Daemon::SetReplicaSet(const std::string &name,
                                                 uint64_t expected_generation,
                                                 const v1::ReplicaSetRecord &record,
                                                 const std::vector<std::string> &keep_session_ids) {
    if (Status valid = ValidateRegionName(name); !valid.ok())
        return valid;
    std::vector<uint64_t> keep;
    for (const std::string &text : keep_session_ids) {
        auto id = wire::ParseSessionId(text);
        if (!id)
            return Status(StatusCode::kInvalidArgument,
                          "keep_session_ids: '" + text.substr(0, 64) +
                              "' is not a session id (16 lowercase hex digits, as OpenSession "
                              "returns them)");
        keep.push_back(*id);
    }
    // Malformed is refused whatever the daemon holds.
    if (Status valid = ValidateReplicaSetRecord(record, daemon_id_); !valid.ok())
        return valid;

    const auto change_mu = ChangeMutexOf(name);
    std::lock_guard change(*change_mu);
    auto info = FindInfo(*store_, name);
    if (!info.ok())
        return info.status();
    if (!info->healthy)
        return Status(StatusCode::kFailedPrecondition,
                      "region '" + name + "' is unhealthy: " + info->problem);
    auto current = ParseReplicaSetRecord(info->replica_set);
    if (!current.ok())
        return current.status();
    auto apply = DecideReplicaSetChange(*current, expected_generation, record, daemon_id_);
    if (!apply.ok())
        return apply.status();
    if (!*apply)
        return ReplicaSetChange{false, std::move(*current), 0};

    Replacement stored = store_->SetReplicaSet(name, info->id, record.SerializeAsString());
    if (!stored.visible)
        return LoggedIfDiskError(name, stored.status);
    // In place (durable or not): a restart reads it, so it is what holds.
    {
        std::lock_guard repair(repair_mu_);
        repair_progress_.erase(name);
    }
    const size_t fenced = FenceSessions(name, record.generation(), keep);
    Log().info("region '{}': replica set {} at generation {} ({}, by {}); {} session(s) fenced",
               name, record.set_id(), record.generation(), record.reason(), record.writer(),
               fenced);
    if (!stored.status.ok())
        return LoggedIfDiskError(name, stored.status);
    return ReplicaSetChange{true, record, fenced};
}

size_t Daemon::FenceSessions(const std::string &name, uint64_t generation,
                             const std::vector<uint64_t> &keep) {
    size_t fenced = 0;
    for (const SessionInfo &session : sessions_.List(name)) {
        const uint64_t opened_under = session.replica_set_generation;
        if (opened_under == 0 || opened_under >= generation)
            continue;  // a reader's, or already under the new record
        if (std::find(keep.begin(), keep.end(), session.session_id) != keep.end()) {
            sessions_.SetGeneration(session.session_id, name, generation);
            continue;
        }
        // As CloseSession: once it returns, nothing of the session lands.
        if (data_plane_->CloseSession(session.session_id).ok()) {
            ++fenced;
            Log().info(
                "session {}: closed: opened under replica-set generation {} of region "
                "'{}', which moved on to {}",
                wire::SessionIdString(session.session_id), opened_under, name, generation);
        }
    }
    return fenced;
}

StatusOr<std::string> Daemon::ChecksumRegion(const std::string &name, uint64_t offset,
                                             uint64_t length, uint64_t extent_size) {
    if (Status valid = ValidateRegionName(name); !valid.ok())
        return valid;
    // Holds the mapping while it is read, even if the region is deleted.
    auto region = store_->Get(name);
    if (!region.ok())
        return region.status();
    if (Status valid = ValidateChecksumRange((*region)->size(), offset, length, extent_size);
        !valid.ok())
        return valid;
    // Hashing reads up to the whole region: a few at a time, so that
    // checksums cannot take every control-plane thread and the memory
    // bandwidth from the clients.
    struct Slot {
        std::atomic<int> &running;
        ~Slot() { running.fetch_sub(1); }
    } slot{checksums_running_};
    if (slot.running.fetch_add(1) >= kMaxChecksumsAtOnce)
        return Status(StatusCode::kResourceExhausted,
                      "rpmad computes " + std::to_string(kMaxChecksumsAtOnce) +
                          " region checksums at once, its limit: retry when one has finished");
    return ChecksumExtents((*region)->bytes(), offset, length, extent_size);
}

StatusOr<v1::RepairProgress> Daemon::ReportRepairProgress(const v1::RepairProgress &progress) {
    const std::string &name = progress.region();
    if (Status valid = ValidateRegionName(name); !valid.ok())
        return valid;
    // Under the region's change mutex: a record change cannot slip between
    // the check and the store, leaving progress of a repair that ended.
    const auto change_mu = ChangeMutexOf(name);
    std::lock_guard change(*change_mu);
    auto info = FindInfo(*store_, name);
    if (!info.ok())
        return info.status();
    auto record = ParseReplicaSetRecord(info->replica_set);
    if (!record.ok())
        return record.status();
    const v1::ReplicaSetMember *self = FindMember(*record, daemon_id_);
    if (self == nullptr || self->state() != v1::ReplicaSetMember::STATE_REPAIRING ||
        record->generation() != progress.generation())
        return Status(
            StatusCode::kFailedPrecondition,
            "region '" + name + "': this daemon's replica-set record (generation " +
                std::to_string(record->generation()) + ", this daemon " +
                (self == nullptr ? std::string("not a member")
                                 : v1::ReplicaSetMember::State_Name(self->state())) +
                ") does not mark it REPAIRING at generation " +
                std::to_string(progress.generation()) +
                ": progress is reported only for the repair the record announces (record the "
                "member REPAIRING with SetReplicaSet first)");
    if (progress.bytes_compared() > info->size || progress.bytes_copied() > info->size ||
        progress.total_bytes() > info->size)
        return Status(StatusCode::kInvalidArgument, "region '" + name +
                                                        "': reported bytes exceed its size of " +
                                                        std::to_string(info->size) + " bytes");
    v1::RepairProgress kept = progress;
    kept.set_reported_unix_seconds(static_cast<int64_t>(std::time(nullptr)));
    std::lock_guard lock(repair_mu_);
    repair_progress_[name] = {info->id, kept};
    return kept;
}

void Daemon::Drain() {
    controller_.reset();
    cluster_.reset();
    {
        std::lock_guard lock(regions_mu_);
        draining_ = true;
    }
    data_plane_->Drain(std::chrono::milliseconds(3000));
}

}  // namespace rpmad
