// What a region needs to be whole again, decided from its record and the
// nodes alive: a stale replica on a live node is repaired where it is; a
// replica whose node has been dead for longer than replace_after, or is
// draining, is placed on another node and copied there. A pure function,
// so that each rule has a unit test; the controller (rpmad) and a writer
// run what it returns through the client library's Repair.
#ifndef CLUSTER_MAINTENANCE_H
#define CLUSTER_MAINTENANCE_H

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "cluster/cluster.pb.h"

namespace rpma::cluster {

struct RepairAction {
    int member = 0;
    // The node to copy to: the member's own, or the one chosen for it.
    std::string node_id;
    std::string control_address;
    // Its advertised data-plane address (NodeRecord.data_address).
    std::string data_address;
    bool replacement = false;
    // A replacement off a node that is still live (draining): its control
    // address, where the old copy is deleted once the new one is in sync.
    std::string moved_from_address;
    std::string reason;  // for the log and the history
};

struct MaintenanceInput {
    v1::RegionRecord region;
    // Live nodes (their records; draining ones included).
    std::vector<v1::NodeRecord> live;
    // When each node not live was first seen so (unix seconds).
    std::map<std::string, int64_t> dead_since;
    int64_t now_unix = 0;
    int64_t replace_after_seconds = 300;
};

struct MaintenancePlan {
    std::vector<RepairAction> actions;
    // Why members that need work get none yet ("node X dead for 20 s of
    // 300"; "no node has the room"), one sentence each.
    std::vector<std::string> waiting;
};

MaintenancePlan PlanMaintenance(const MaintenanceInput &in);

}  // namespace rpma::cluster

#endif  // CLUSTER_MAINTENANCE_H
