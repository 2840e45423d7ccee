// rpma::client::ReplicaSet: where a region's replicas live. A plain value
// today (addresses from the command line or a config file); a placement
// service can hand one out later without the rest of the library changing.
#ifndef CLIENT_INCLUDE_RPMA_CLIENT_REPLICA_SET_H
#define CLIENT_INCLUDE_RPMA_CLIENT_REPLICA_SET_H

#include <string>
#include <vector>

#include "rpma/client/control_plane.h"

namespace rpma::client {

struct ReplicaSet {
    // rpmad control-plane addresses ("host:port"), one per replica. A
    // replica's index in operations and errors is its position here.
    std::vector<std::string> addresses;
    // TLS and admin token, the same for every replica.
    ConnectOptions options;
};

}  // namespace rpma::client

#endif  // CLIENT_INCLUDE_RPMA_CLIENT_REPLICA_SET_H
