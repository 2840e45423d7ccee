// rpma::client::ReplicaSet: where a region's replicas live. A plain value
// today (addresses from the command line or a config file); a placement
// service can hand one out later without the rest of the library changing.
#ifndef CLIENT_INCLUDE_RPMA_CLIENT_REPLICA_SET_H
#define CLIENT_INCLUDE_RPMA_CLIENT_REPLICA_SET_H

#include <string>
#include <vector>

#include "rpma/client/connect_options.h"

namespace rpma::client {

struct ReplicaSet {
    // rpmad control-plane addresses ("host:port"), one per replica. A
    // replica's index in operations and errors is its position here.
    std::vector<std::string> addresses;
    // TLS and admin token, the same for every replica.
    ConnectOptions options;
    // Where to reach each replica's data plane when not where its daemon
    // says it is (OpenSession's data_address and data_port, from rpmad's
    // --data-listen): behind NAT, a port forward or a proxy. Empty for
    // none, or one "host:port" per address, "" for the daemon's own. Readd
    // keeps a replica's override (also with a new control address).
    std::vector<std::string> data_addresses;
};

}  // namespace rpma::client

#endif  // CLIENT_INCLUDE_RPMA_CLIENT_REPLICA_SET_H
