#include "client/rpmactl/region_access.h"

#include <cstdio>

#include "client/rpmactl/daemons.h"
#include "client/rpmactl/exit_code.h"

namespace rpmactl {

rpma::client::Result<std::unique_ptr<rpma::client::Region>> OpenRegion(
    const Settings &settings, const std::string &name, rpma::client::OpenOptions options,
    std::vector<std::string> servers) {
    rpma::client::ReplicaSet set;
    set.addresses = servers.empty() ? settings.servers : std::move(servers);
    set.options = settings.connect;
    options.on_failure = [](const rpma::client::Status &status) {
        fprintf(stderr, "rpmactl: replica failed: %s\n", status.ToString().c_str());
    };
    return rpma::client::Region::Open(set, name, options);
}

Json ReplicasJson(const rpma::client::Region &region) {
    Json replicas = Json::array();
    for (const auto &replica : region.replicas()) {
        const char *state = replica.state == rpma::client::ReplicaState::kLive     ? "live"
                            : replica.state == rpma::client::ReplicaState::kFailed ? "failed"
                                                                                   : "resyncing";
        replicas.push_back({{"server", replica.address},
                            {"state", state},
                            {"persistence", replica.gpspm ? "gpspm" : "apm"},
                            {"error", replica.error.ok() ? "" : replica.error.ToString()}});
    }
    return replicas;
}

int ReplicasExitCode(const rpma::client::Region &region) {
    for (const auto &replica : region.replicas())
        if (replica.state != rpma::client::ReplicaState::kLive)
            return kExitFailure;
    return kExitOk;
}

}  // namespace rpmactl
