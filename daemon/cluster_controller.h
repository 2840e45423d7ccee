// The cluster's controller: one rpmad at a time (whoever holds
// <prefix>controller under its node lease; another takes over when that
// lease expires) watches the nodes and regions and makes regions whole
// again (cluster/maintenance.h): a stale replica on a live node is
// repaired, one on a node dead for longer than cluster.replace_after_seconds
// or draining is placed on another node and copied there. It works through
// the client library as a writer would (Region::Repair: only what differs
// is copied; the record grows back only once the copy is durable), on
// regions no application writer holds; a region one holds is repaired by
// that writer, which the controller asks through <prefix>maintenance/<name>.
// It also deletes copies left on nodes that no record places there. Every
// decision is logged with the region and the reason and kept in
// <prefix>status/controller (`rpmactl cluster status`).
#ifndef DAEMON_CLUSTER_CONTROLLER_H
#define DAEMON_CLUSTER_CONTROLLER_H

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "cluster/etcd.h"
#include "cluster/maintenance.h"
#include "cluster/records.h"
#include "daemon/config.h"
#include "daemon/status.h"
#include "rpma/client/cluster.h"
#include "rpma/client/region.h"

namespace rpmad {

class ClusterController {
  public:
    struct Options {
        ClusterConfig config;
        // How the controller reaches the nodes' control planes.
        rpma::client::ConnectOptions connect;
        std::string node_id;
        // The node's lease now (0: none): leadership goes with it.
        std::function<int64_t()> lease;
    };

    static StatusOr<std::unique_ptr<ClusterController>> Start(Options options);
    ~ClusterController();

  private:
    ClusterController() = default;
    void Run();
    void Step();
    bool Lead(int64_t lease);
    void Repair(const rpma::cluster::Versioned<rpma::cluster::RegionRecord> &region,
                const std::vector<rpma::cluster::RepairAction> &actions);
    // Records the in-sync members that `actions` move (off a draining node)
    // stale first, so that Repair may copy them elsewhere; false when the
    // region changed meanwhile or no other member would stay in sync.
    bool StaleBeforeMoving(const rpma::cluster::Versioned<rpma::cluster::RegionRecord> &region,
                           const std::vector<rpma::cluster::RepairAction> &actions);
    void Record(const std::string &event);
    // Opens region `name` as a writer (quorum 1) to repair or reconcile it.
    rpma::client::Result<std::unique_ptr<rpma::client::Region>> OpenAsWriter(
        const std::string &name, bool take_over_repairs);
    // Reconciles the extents that writers that died left in their regions'
    // activity logs (regions nobody writes now).
    void Reconcile(const std::vector<rpma::cluster::KeyValue> &activities,
                   const std::set<std::string> &held);
    // Puts what the writer holding `region` should do (nothing: deletes
    // the request), when it changed.
    void Ask(const std::string &region, const std::vector<rpma::cluster::RepairAction> &actions);
    // Deletes the copies live nodes hold of regions whose records place
    // them elsewhere.
    void SweepOrphans(
        const std::vector<rpma::cluster::NodeRecord> &live,
        const std::vector<rpma::cluster::Versioned<rpma::cluster::RegionRecord>> &regions);

    Options options_;
    std::unique_ptr<rpma::cluster::Etcd> etcd_;
    rpma::cluster::Keys keys_;
    rpma::client::Cluster cluster_;
    bool leading_ = false;
    std::map<std::string, int64_t> dead_since_;
    std::map<std::string, std::string> last_waiting_;
    std::map<std::string, std::string> asked_;  // region -> request put
    std::map<std::string, int64_t> orphans_;    // "node/region" -> record revision
    uint64_t steps_ = 0;
    // Regions whose activity log no writer holds: since when (unix
    // seconds), and the last outcome of reconciling them.
    std::map<std::string, int64_t> orphaned_activity_;
    std::map<std::string, std::string> last_reconciled_;
    std::deque<std::string> history_;

    std::mutex mu_;
    std::condition_variable wake_;
    bool stop_ = false;
    std::thread thread_;
};

}  // namespace rpmad

#endif  // DAEMON_CLUSTER_CONTROLLER_H
