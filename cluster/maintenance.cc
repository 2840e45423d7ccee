#include "cluster/maintenance.h"

#include "cluster/placement.h"

namespace rpma::cluster {
namespace {

using Member = ::rpmad::v1::ReplicaSetMember;

}  // namespace

MaintenancePlan PlanMaintenance(const MaintenanceInput &in) {
    MaintenancePlan plan;
    std::map<std::string, const v1::NodeRecord *> live;
    for (const auto &node : in.live)
        live[node.node_id()] = &node;
    const auto &members = in.region.replica_set().members();
    // Replacements avoid every member's node and the zones of the members
    // staying.
    PlacementRequest placement;
    placement.size_bytes = in.region.size_bytes();
    for (const auto &m : members)
        placement.exclude.push_back(m.daemon_id());
    std::vector<int> to_replace;
    std::vector<std::string> why_replace, moved_from;
    for (int i = 0; i < members.size(); ++i) {
        const Member &m = members[i];
        auto node = live.find(m.daemon_id());
        if (node != live.end() && !node->second->draining()) {
            placement.zones_taken.push_back(node->second->zone());
            if (m.state() != Member::STATE_IN_SYNC)
                plan.actions.push_back({i, m.daemon_id(), node->second->control_address(),
                                        node->second->data_address(), false, "",
                                        "replica " + std::to_string(i) + " on node " +
                                            m.daemon_id() + " is stale since generation " +
                                            std::to_string(m.stale_since()) +
                                            ": repairing it where it is"});
            continue;
        }
        if (node != live.end()) {
            to_replace.push_back(i);
            why_replace.push_back("node " + m.daemon_id() + " is draining");
            moved_from.push_back(node->second->control_address());
            continue;
        }
        auto since = in.dead_since.find(m.daemon_id());
        const int64_t dead_for = since == in.dead_since.end() ? 0 : in.now_unix - since->second;
        if (dead_for < in.replace_after_seconds) {
            plan.waiting.push_back(
                "replica " + std::to_string(i) + ": node " + m.daemon_id() + " dead since " +
                std::to_string(since == in.dead_since.end() ? in.now_unix : since->second) +
                " (unix time), replaced once dead for " + std::to_string(in.replace_after_seconds) +
                " s");
            continue;
        }
        to_replace.push_back(i);
        moved_from.push_back("");
        why_replace.push_back("node " + m.daemon_id() + " dead for " + std::to_string(dead_for) +
                              " s (replace_after " + std::to_string(in.replace_after_seconds) +
                              " s)");
    }
    for (size_t k = 0; k < to_replace.size(); ++k) {
        placement.replicas = 1;
        std::vector<v1::NodeRecord> chosen;
        if (auto s = Place(in.live, placement, &chosen); !s.ok()) {
            plan.waiting.push_back("replica " + std::to_string(to_replace[k]) + ": " +
                                   why_replace[k] + ", but " + s.error_message());
            continue;
        }
        const v1::NodeRecord &to = chosen.front();
        placement.exclude.push_back(to.node_id());
        placement.zones_taken.push_back(to.zone());
        plan.actions.push_back({to_replace[k], to.node_id(), to.control_address(),
                                to.data_address(), true, moved_from[k],
                                "replica " + std::to_string(to_replace[k]) + ": " + why_replace[k] +
                                    ": placing it on node " + to.node_id() + " (zone '" +
                                    to.zone() + "') and copying it there"});
    }
    return plan;
}

}  // namespace rpma::cluster
