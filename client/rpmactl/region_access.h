// What put, get, verify and bench share: opening a region on the --server
// replica set with the library (rpma::client::Region), reporting replicas
// that fail on the way, and the summary of each replica's state.
#ifndef CLIENT_RPMACTL_REGION_ACCESS_H
#define CLIENT_RPMACTL_REGION_ACCESS_H

#include <memory>
#include <string>
#include <vector>

#include "client/rpmactl/output.h"
#include "client/rpmactl/settings.h"
#include "rpma/client/region.h"

namespace rpmactl {

// Region `name` on `servers` (settings.servers when empty). Replica
// failures are printed on stderr as they happen ("rpmactl: replica 1
// (ADDRESS) failed: ...").
rpma::client::Result<std::unique_ptr<rpma::client::Region>> OpenRegion(
    const Settings &settings, const std::string &name, rpma::client::OpenOptions options,
    std::vector<std::string> servers = {});

// [{"server", "state": "live"|"failed"|"stale"|"repairing", "persistence":
// "apm"|"gpspm", "daemon_id", "stale_since", "error"}] of the region's
// replicas.
Json ReplicasJson(const rpma::client::Region &region);

// kExitFailure when any replica of the region failed (the operation may
// still have met its quorum), else kExitOk.
int ReplicasExitCode(const rpma::client::Region &region);

}  // namespace rpmactl

#endif  // CLIENT_RPMACTL_REGION_ACCESS_H
