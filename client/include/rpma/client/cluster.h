// rpma::client::Cluster: where a cluster's etcd is, for opening regions by
// name (Region::Open(Cluster, name)) instead of by a list of replicas.
// README "Cluster mode" says what etcd holds and what is guaranteed.
#ifndef CLIENT_INCLUDE_RPMA_CLIENT_CLUSTER_H
#define CLIENT_INCLUDE_RPMA_CLIENT_CLUSTER_H

#include <chrono>
#include <string>

#include "rpma/client/connect_options.h"

namespace rpma::client {

struct Cluster {
    // host:port of etcd's members, comma-separated ("https://" in front
    // asks for TLS).
    std::string etcd_endpoints;
    // PEM CA bundle for etcd's certificate ("" = the system's), and a client
    // certificate and key for an etcd with --client-cert-auth.
    std::string etcd_ca_file;
    std::string etcd_cert_file;
    std::string etcd_key_file;
    // Where the cluster's keys live (rpmad's cluster.prefix).
    std::string prefix = "/rpma/";
    // How to reach the nodes' control planes (TLS, tokens, deadline); also
    // the deadline of each etcd call.
    ConnectOptions options;
    // A writer holds its region under an etcd lease of this many seconds,
    // renewed while it runs: a writer that dies (or is stopped) frees the
    // region for another this long after its last renewal.
    std::chrono::seconds writer_lease{10};
    // A writer runs what the cluster's controller asks of the region it
    // holds (repair a stale replica, copy one to another node), on a thread
    // of its own while the application writes: the controller does not
    // change a region a writer holds. Closing the Region waits for a repair
    // it is running. Off only for the controller itself.
    bool maintain = true;
};

}  // namespace rpma::client

#endif  // CLIENT_INCLUDE_RPMA_CLIENT_CLUSTER_H
