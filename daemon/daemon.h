// The domain of one rpmad: its regions (RegionStore), its sessions
// (SessionTable) and the data plane that serves them. The control plane's
// handlers call these methods and translate their Status to gRPC; nothing
// here knows about gRPC. Replica-set records are rpmad.v1's messages: the
// daemon checks them and stores them as they came (replica_set.h).
//
// A region is created in the store and exposed on the data plane in one
// step, and deleted in the reverse order: its connections are cut and its
// registration dropped before its file goes.
#ifndef DAEMON_DAEMON_H
#define DAEMON_DAEMON_H

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "daemon/cluster_controller.h"
#include "daemon/cluster_node.h"
#include "daemon/config.h"
#include "daemon/counters.h"
#include "daemon/data_plane.h"
#include "daemon/region_store.h"
#include "daemon/session_table.h"
#include "daemon/status.h"
#include "proto/rpmad/v1/rpmad.pb.h"

namespace rpmad {

struct RegionView {
    RegionInfo info;
    size_t open_sessions = 0;
    Persistence persistence = Persistence::kAuto;  // of the data plane; kAuto while unhealthy
    // Clients' one-sided operations on it; all 0 when !traffic_counted.
    RegionTraffic traffic;
    bool traffic_counted = false;
    // Its replica-set record on this daemon (generation 0: none), and the
    // repair progress last reported while the record marks this daemon
    // REPAIRING.
    v1::ReplicaSetRecord replica_set;
    std::optional<v1::RepairProgress> repair_progress;
};

// What a SetReplicaSet did.
struct ReplicaSetChange {
    bool applied = false;
    v1::ReplicaSetRecord current;  // the record now held
    size_t fenced_sessions = 0;
};

struct SessionOffer {
    SessionGrant grant;
    RegionAccess access;
    uint64_t region_size = 0;
    std::string data_address;
    std::string data_port;
};

struct StatsView {
    std::string provider;
    std::chrono::seconds uptime{0};
    size_t regions = 0;
    size_t unhealthy_regions = 0;
    uint64_t pool_used_bytes = 0;
    uint64_t pool_capacity_bytes = 0;
    size_t sessions = 0;
    size_t connections = 0;
    const Counters *counters = nullptr;
    const LatencyHistogram *catalog_commit_time = nullptr;
    std::string daemon_id;
    // Cluster mode: whether this node is registered in etcd, and if not why.
    std::optional<ClusterNode::State> cluster;
    // Clients' one-sided operations on every region; all 0 when
    // !traffic_counted.
    RegionTraffic traffic;
    bool traffic_counted = false;
};

class Daemon {
  public:
    // Opens the region store, starts the data plane and exposes every
    // healthy region. Damaged regions are logged and listed, not fatal.
    static StatusOr<std::unique_ptr<Daemon>> Start(const Config &config);
    ~Daemon();

    StatusOr<RegionView> CreateRegion(const std::string &name, uint64_t size);
    StatusOr<RegionView> GetRegion(const std::string &name) const;
    std::vector<RegionView> ListRegions() const;
    // FAILED_PRECONDITION while sessions are open, unless `force`: then they
    // are closed first. Returns how many were closed.
    StatusOr<size_t> DeleteRegion(const std::string &name, bool force);

    // `who` as the control plane authenticated it, for the session quotas.
    // `replica_set_generation` > 0: a writer's session, fenced by a later
    // SetReplicaSet; FAILED_PRECONDITION when the region's record has moved
    // past it.
    StatusOr<SessionOffer> OpenSession(const std::string &region, const Requester &who,
                                       uint64_t replica_set_generation = 0);
    Status CloseSession(const std::string &session_id);
    StatusOr<std::vector<SessionInfo>> ListSessions(const std::string &region) const;

    // The region's replica-set record (client/REPLICA_SETS.md) and its id.
    StatusOr<std::pair<v1::ReplicaSetRecord, uint64_t>> GetReplicaSet(
        const std::string &region) const;
    // Compare-and-set of the record (DecideReplicaSetChange), one change of
    // a region at a time. Once the new record is in the catalog, every
    // session of the region opened under an older generation (> 0) and not
    // in `keep_session_ids` is closed as CloseSession does; the kept ones
    // move to the new generation. A catalog replaced whose sync failed
    // fences all the same (memory and a restart follow the new record) and
    // answers the store's error.
    StatusOr<ReplicaSetChange> SetReplicaSet(const std::string &region,
                                             uint64_t expected_generation,
                                             const v1::ReplicaSetRecord &record,
                                             const std::vector<std::string> &keep_session_ids);
    // XXH3-128 of each extent (checksum.h), computed on the caller's thread
    // with no lock held, at most kMaxChecksumsAtOnce at a time
    // (RESOURCE_EXHAUSTED beyond); the region's mapping stays alive while
    // it runs, even if the region is deleted meanwhile.
    static constexpr int kMaxChecksumsAtOnce = 2;
    StatusOr<std::string> ChecksumRegion(const std::string &region, uint64_t offset,
                                         uint64_t length, uint64_t extent_size);
    // Kept in memory while this daemon's record marks itself REPAIRING at
    // progress.generation(); FAILED_PRECONDITION otherwise. Returns what is
    // kept (reported_unix_seconds: when it arrived).
    StatusOr<v1::RepairProgress> ReportRepairProgress(const v1::RepairProgress &progress);

    StatsView Stats() const;
    const Config &config() const { return config_; }
    // This rpmad's identity (daemon_id.h).
    const std::string &daemon_id() const { return daemon_id_; }
    const DataPlane &data_plane() const { return *data_plane_; }

    // Whether the data plane still serves (its thread answers within
    // `timeout`).
    bool Responsive(std::chrono::milliseconds timeout) { return data_plane_->Responsive(timeout); }

    // Cluster mode (config.cluster): registers this daemon as a node, its
    // control plane reached at `control_address` unless
    // cluster.advertise_control says otherwise. Registration goes on in the
    // background; the error is only for a config that cannot work.
    Status JoinCluster(const std::string &control_address);

    // Graceful stop: leaves the cluster; no new sessions or connections;
    // clients disconnected.
    void Drain();

  private:
    explicit Daemon(const Config &config);
    RegionView ViewOf(const RegionInfo &info) const;
    // The record of the region `name` (generation 0 when none), with the
    // region's id.
    StatusOr<std::pair<v1::ReplicaSetRecord, uint64_t>> RecordOf(const std::string &name) const;
    // FAILED_PRECONDITION when `generation` > 0 is older than the region's
    // record.
    Status CheckSessionGeneration(const std::string &name, uint64_t generation) const;
    // The mutex that serializes the record changes of region `name`.
    std::shared_ptr<std::mutex> ChangeMutexOf(const std::string &name);
    size_t FenceSessions(const std::string &name, uint64_t generation,
                         const std::vector<uint64_t> &keep);

    Config config_;
    const std::chrono::steady_clock::time_point started_;
    Counters counters_;
    std::unique_ptr<RegionStore> store_;
    SessionTable sessions_;
    std::unique_ptr<DataPlane> data_plane_;
    std::unique_ptr<ClusterNode> cluster_;
    // Stops before the node leaves (it leads under the node's lease).
    std::unique_ptr<ClusterController> controller_;
    // Serializes region creation and deletion with session opening, so that
    // no session is opened on a region being deleted.
    mutable std::mutex regions_mu_;
    bool draining_ = false;
    std::string daemon_id_;

    // Record changes: one at a time per region (by name; a region deleted
    // and created again is told apart by its id in the store).
    std::mutex change_mus_mu_;
    std::map<std::string, std::shared_ptr<std::mutex>> change_mus_;
    // Repair progress by region name, with the region's id; in memory only.
    mutable std::mutex repair_mu_;
    std::map<std::string, std::pair<uint64_t, v1::RepairProgress>> repair_progress_;
    std::atomic<int> checksums_running_{0};
};

}  // namespace rpmad

#endif  // DAEMON_DAEMON_H
