#include "client/rpmactl/region_access.h"

#include <atomic>
#include <cstdio>

#include "client/rpmactl/daemons.h"
#include "client/rpmactl/exit_code.h"

namespace rpmactl {
namespace {

using rpma::client::Status;

// The replicas that fail while the region opens, kept to be reported once
// Open has returned (the library also folds them into Open's own error);
// after that, failures are reported as they happen.
struct OpenReport {
    std::atomic<bool> opened{false};
    std::vector<Status> failures;
};

void PrintReplicaFailure(const Status &status, const rpma::client::ConnectOptions &options,
                         const char *what) {
    fprintf(stderr, "rpmactl: %s%s\n", what, Advise(status, options).ToString().c_str());
}

}  // namespace

rpma::client::Result<std::unique_ptr<rpma::client::Region>> OpenRegion(
    const Settings &settings, const std::string &name, rpma::client::OpenOptions options,
    std::vector<std::string> servers) {
    // --etcd without servers: by name, etcd says where the replicas are.
    const bool by_name = settings.cluster.enabled() && servers.empty();
    rpma::client::ReplicaSet set;
    set.addresses = servers.empty() ? settings.servers : std::move(servers);
    set.options = settings.connect;
    auto report = std::make_shared<OpenReport>();
    options.on_failure = [report, connect = settings.connect](const Status &status) {
        if (report->opened)
            PrintReplicaFailure(status, connect, "replica failed: ");
        else
            report->failures.push_back(status);
    };
    const size_t quorum = options.quorum == 0 ? set.addresses.size() : options.quorum;
    rpma::client::Result<std::unique_ptr<rpma::client::Region>> region =
        Status(rpma::client::StatusCode::kInternal, "not opened");
    if (by_name) {
        rpma::client::Cluster cluster;
        cluster.etcd_endpoints = settings.cluster.endpoints;
        cluster.etcd_ca_file = settings.cluster.ca_file;
        cluster.etcd_cert_file = settings.cluster.cert_file;
        cluster.etcd_key_file = settings.cluster.key_file;
        cluster.prefix = settings.cluster.prefix;
        cluster.options = settings.connect;
        region = rpma::client::Region::Open(cluster, name, options);
    } else {
        region = rpma::client::Region::Open(set, name, options);
    }
    // Each server's error once, with what to do about it.
    for (const Status &failure : report->failures)
        PrintReplicaFailure(failure, settings.connect, region.ok() ? "replica failed: " : "");
    report->opened = true;
    if (region.ok() || report->failures.empty())
        return region.ok() ? std::move(region) : Advise(region.status(), settings.connect);
    if (by_name)
        return Advise(region.status(), settings.connect);
    const size_t opened = set.addresses.size() - report->failures.size();
    return Status(region.status().code(),
                  "could open region " + name + " on only " + std::to_string(opened) + " of " +
                      std::to_string(set.addresses.size()) + " servers, " + std::to_string(quorum) +
                      " needed (each server's error is above)");
}

Json ReplicasJson(const rpma::client::Region &region) {
    Json replicas = Json::array();
    for (const auto &replica : region.replicas()) {
        const char *state = "live";
        switch (replica.state) {
            case rpma::client::ReplicaState::kLive:
                break;
            case rpma::client::ReplicaState::kFailed:
                state = "failed";
                break;
            case rpma::client::ReplicaState::kRepairing:
                state = "repairing";
                break;
            case rpma::client::ReplicaState::kStale:
                state = "stale";
                break;
        }
        replicas.push_back({{"server", replica.address},
                            {"state", state},
                            {"persistence", replica.gpspm ? "gpspm" : "apm"},
                            {"daemon_id", replica.daemon_id},
                            {"stale_since", replica.stale_since},
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
