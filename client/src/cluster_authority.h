// A region of a cluster as the client library holds it: its record in etcd
// (cluster/cluster.proto), the authority for which replicas are in sync,
// and, for a writer, the region itself under an etcd lease (one writer at a
// time; each takes a new writer epoch). Region::Impl commits every change
// of the replica set here first (a transaction comparing the record's
// revision), then on the daemons, which fence older writers by it.
#ifndef CLIENT_SRC_CLUSTER_AUTHORITY_H
#define CLIENT_SRC_CLUSTER_AUTHORITY_H

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "activity_log.h"
#include "cluster/etcd.h"
#include "cluster/records.h"
#include "rpma/client/cluster.h"
#include "rpma/client/replica_set.h"
#include "rpma/client/status.h"

namespace rpma::client {

class ClusterAuthority {
  public:
    // Reads region `name` (ready, not being created or deleted) and where
    // its nodes are now; a writer then takes it: kFailedPrecondition naming
    // the writer that holds it.
    static Result<std::unique_ptr<ClusterAuthority>> Open(const Cluster &cluster,
                                                          const std::string &name, bool writer,
                                                          const std::string &who);
    // Lets the region go (the writer's lease revoked).
    ~ClusterAuthority();

    // The replicas, in the record's order, at their nodes' addresses now
    // (a dead node's last known one).
    const ReplicaSet &replicas() const { return replicas_; }
    const ::rpmad::v1::ReplicaSetRecord &record() const { return region_.record.replica_set(); }
    uint64_t size() const { return region_.record.size_bytes(); }
    uint64_t writer_epoch() const { return region_.record.writer_epoch(); }

    // Makes `record` the region's replica set if nobody changed the region
    // since it was read or last committed here; kFailedPrecondition saying
    // who did otherwise, kUnavailable when etcd does not answer.
    Status Commit(const ::rpmad::v1::ReplicaSetRecord &record);

    // Reads the region's record again: *changed when it is not the one
    // held (which it then becomes). kFailedPrecondition when the region
    // was deleted, kUnavailable when etcd does not answer.
    Status Refresh(bool *changed);

    // Not ok once the writer's lease is known lost (expired: another writer
    // may hold the region now).
    Status Held() const;

    // The activity log (activity_log.h). Before a write of
    // [offset, offset + length): ok at once when its extents are hot,
    // else once the log with them is recorded in etcd (kUnavailable while
    // etcd is out of reach: writes into hot extents go on meanwhile).
    Status NoteActivity(uint64_t offset, uint64_t length) {
        return activity_.Hot(offset, length) ? Status() : RecordActivity(offset, length);
    }
    // A write that failed: its extents stay in the log.
    void PinActivity(uint64_t offset, uint64_t length) { activity_.Pin(offset, length); }
    // Leaves the log in etcd at close (a replica failed and was not
    // recorded stale: the next writer reconciles).
    void KeepActivity() { keep_activity_ = true; }
    // The extents a writer that died left in the log (read when this one
    // took the region), for Region::Impl::Reconcile; then cleared.
    const std::vector<uint64_t> &inherited_activity() const { return inherited_; }
    uint64_t inherited_extent_bytes() const { return inherited_extent_bytes_; }
    Status ClearInherited();

    // What the controller asks of this writer (<prefix>maintenance/<name>);
    // nullopt when nothing.
    Status ReadMaintenance(std::optional<rpma::cluster::v1::MaintenanceRequest> *request);

  private:
    ClusterAuthority() = default;
    Status TakeWriter(const std::string &who);
    void KeepAlive();
    // Adds to `txn` the condition that this writer still holds the region
    // (its key under this writer's lease).
    void StillOurs(etcdserverpb::TxnRequest *txn) const;
    Status RecordActivity(uint64_t offset, uint64_t length);
    // Puts `extents` as the region's activity log (this writer's epoch) if
    // this writer still holds the region.
    Status PutActivity(const std::vector<uint64_t> &extents);

    Cluster cluster_;
    std::string name_;
    std::unique_ptr<rpma::cluster::Etcd> etcd_;
    rpma::cluster::Keys keys_;
    rpma::cluster::Versioned<rpma::cluster::RegionRecord> region_;
    ReplicaSet replicas_;

    ActivityLog activity_;
    bool keep_activity_ = false;
    std::vector<uint64_t> inherited_;
    uint64_t inherited_extent_bytes_ = 0;

    int64_t lease_ = 0;
    std::atomic<bool> lost_{false};
    std::mutex mu_;
    std::condition_variable wake_;
    bool stop_ = false;
    std::thread keeper_;
};

}  // namespace rpma::client

#endif  // CLIENT_SRC_CLUSTER_AUTHORITY_H
