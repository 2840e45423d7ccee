// rpmactl in cluster mode (--etcd): the nodes that registered in etcd, and
// regions placed on them, whose records etcd holds (cluster/cluster.proto).
#ifndef CLIENT_RPMACTL_CLUSTER_COMMANDS_H
#define CLIENT_RPMACTL_CLUSTER_COMMANDS_H

#include <cstdint>
#include <string>
#include <vector>

#include "client/rpmactl/settings.h"
#include "rpma/client/status.h"

namespace rpmactl {

// Places `replicas` replicas of NAME on live nodes, creates them and
// records the region, or leaves nothing behind.
int ClusterRegionCreate(const Settings &settings, const std::string &name, uint64_t size,
                        size_t replicas);
// Removes every replica, then the record.
int ClusterRegionDelete(const Settings &settings, const std::string &name, bool force);
int ClusterRegionList(const Settings &settings);
int ClusterRegionInfo(const Settings &settings, const std::string &name);
int ClusterNodeList(const Settings &settings);
// The control addresses of NAME's replicas in its record's order (a dead
// node's last known one), for the commands that ask each replica's daemon
// (verify, bench); kNotFound when etcd holds no such region.
rpma::client::Result<std::vector<std::string>> ClusterRegionServers(const Settings &settings,
                                                                    const std::string &name);

}  // namespace rpmactl

#endif  // CLIENT_RPMACTL_CLUSTER_COMMANDS_H
