// Where a region's replicas go: on live nodes that are not draining and
// have the room, in distinct zones while there are zones left, most free
// bytes first. A pure function, so that every rule has a unit test.
#ifndef CLUSTER_PLACEMENT_H
#define CLUSTER_PLACEMENT_H

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <string>
#include <vector>

#include "cluster/cluster.pb.h"

namespace rpma::cluster {

using v1::NodeRecord;
using v1::RegionRecord;

struct PlacementRequest {
    size_t replicas = 0;
    uint64_t size_bytes = 0;
    // Nodes that may not be chosen (they hold a replica already).
    std::vector<std::string> exclude;
    // Zones already holding a replica of the region (re-placement): new
    // replicas avoid them as long as other zones have room.
    std::vector<std::string> zones_taken;
};

// Fills *chosen with `replicas` nodes of `live`, or RESOURCE_EXHAUSTED
// saying how many qualify and why the others do not.
grpc::Status Place(const std::vector<NodeRecord> &live, const PlacementRequest &request,
                   std::vector<NodeRecord> *chosen);

}  // namespace rpma::cluster

#endif  // CLUSTER_PLACEMENT_H
