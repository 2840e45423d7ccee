// This rpmad as a node of a cluster (cluster.etcd.endpoints): its record
// under <prefix>nodes/<daemon id>, put under a lease it keeps alive, so
// that a node that dies (or loses etcd for longer than the lease) drops out
// of the cluster by itself. Losing etcd stops nothing else: sessions and
// the data plane go on, and state() says what is wrong for health checks
// and the log.
#ifndef DAEMON_CLUSTER_NODE_H
#define DAEMON_CLUSTER_NODE_H

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "cluster/etcd.h"
#include "cluster/records.h"
#include "daemon/config.h"
#include "daemon/status.h"

namespace rpmad {

class ClusterNode {
  public:
    // What the node record says now (capacity and free bytes change).
    using Snapshot = std::function<rpma::cluster::NodeRecord()>;

    struct State {
        // The last registration step reached etcd.
        bool registered = false;
        std::string node_id;
        int64_t lease = 0;  // 0: none granted (or it expired)
        // Why it is not registered: etcd unreachable, the lease lost, ...
        std::string problem;
        int64_t problem_since_unix = 0;
        std::string endpoints;
    };

    // Connects and starts registering in the background: a node that
    // cannot reach etcd at start still starts (and says so), as it does
    // when etcd goes away later. An error only for a config that cannot
    // work (unreadable TLS files).
    static StatusOr<std::unique_ptr<ClusterNode>> Start(const ClusterConfig &config,
                                                        Snapshot snapshot);
    // Revokes the lease: a node stopped on purpose leaves at once.
    ~ClusterNode();

    State state() const;

  private:
    ClusterNode() = default;
    void Run();
    // One step: register (lease + record) or keep the lease alive and
    // refresh the record when it changed.
    grpc::Status Step();

    ClusterConfig config_;
    Snapshot snapshot_;
    std::unique_ptr<rpma::cluster::Etcd> etcd_;
    rpma::cluster::Keys keys_;
    // The record as last put under the current lease (without its time);
    // only the registration thread touches it.
    std::string published_;

    mutable std::mutex mu_;
    std::condition_variable wake_;
    bool stop_ = false;
    State state_;
    std::thread thread_;
};

}  // namespace rpmad

#endif  // DAEMON_CLUSTER_NODE_H
