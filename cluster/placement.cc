#include "cluster/placement.h"

#include <algorithm>
#include <set>

namespace rpma::cluster {

grpc::Status Place(const std::vector<NodeRecord> &live, const PlacementRequest &request,
                   std::vector<NodeRecord> *chosen) {
    chosen->clear();
    std::vector<NodeRecord> eligible;
    std::string why_not;
    for (const NodeRecord &node : live) {
        std::string reason;
        if (std::find(request.exclude.begin(), request.exclude.end(), node.node_id()) !=
            request.exclude.end())
            reason = "holds a replica already";
        else if (node.draining())
            reason = "draining";
        else if (node.free_bytes() < request.size_bytes)
            reason = std::to_string(node.free_bytes()) + " bytes free";
        if (reason.empty())
            eligible.push_back(node);
        else
            why_not += "; " + node.node_id() + ": " + reason;
    }
    if (eligible.size() < request.replicas)
        return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                            std::to_string(request.replicas) + " replica(s) of " +
                                std::to_string(request.size_bytes) +
                                " bytes need as many live "
                                "nodes with the room; " +
                                std::to_string(eligible.size()) + " of " +
                                std::to_string(live.size()) + " live qualify" + why_not +
                                ": add nodes, free space, or ask for fewer replicas");
    // Most free first; the node id breaks ties so that placement is
    // deterministic.
    std::sort(eligible.begin(), eligible.end(), [](const NodeRecord &a, const NodeRecord &b) {
        if (a.free_bytes() != b.free_bytes())
            return a.free_bytes() > b.free_bytes();
        return a.node_id() < b.node_id();
    });
    std::set<std::string> zones(request.zones_taken.begin(), request.zones_taken.end());
    std::vector<bool> taken(eligible.size(), false);
    // First a node per zone not yet used, best first; then the best left.
    for (size_t i = 0; i < eligible.size() && chosen->size() < request.replicas; ++i)
        if (zones.insert(eligible[i].zone()).second) {
            chosen->push_back(eligible[i]);
            taken[i] = true;
        }
    for (size_t i = 0; i < eligible.size() && chosen->size() < request.replicas; ++i)
        if (!taken[i])
            chosen->push_back(eligible[i]);
    return grpc::Status::OK;
}

}  // namespace rpma::cluster
