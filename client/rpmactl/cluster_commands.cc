#include "client/rpmactl/cluster_commands.h"

#include <unistd.h>

#include <ctime>
#include <future>
#include <map>
#include <optional>
#include <random>
#include <set>

#include "client/rpmactl/command.h"
#include "client/rpmactl/daemons.h"
#include "client/rpmactl/exit_code.h"
#include "client/rpmactl/output.h"
#include "client/rpmactl/sizes.h"
#include "cluster/etcd.h"
#include "cluster/placement.h"
#include "cluster/records.h"
#include "proto/rpmad/v1/rpmad.grpc.pb.h"

namespace rpmactl {
namespace {

namespace v1 = ::rpmad::v1;
using rpma::client::ControlPlane;
using rpma::client::Status;
using rpma::client::StatusCode;
using rpma::cluster::Etcd;
using rpma::cluster::Keys;
using rpma::cluster::NodeRecord;
using rpma::cluster::RegionRecord;
using rpma::cluster::Versioned;

Status FromEtcd(const grpc::Status &status) {
    return rpma::client::FromGrpc(status, "etcd");
}

// Prints the error and returns its exit code.
int Fail(const Status &status) {
    PrintError(status);
    return ExitCodeFor(status);
}

int64_t NowUnix() {
    return static_cast<int64_t>(std::time(nullptr));
}

std::string Who() {
    char host[256] = "?";
    gethostname(host, sizeof(host) - 1);
    return std::string("rpmactl on ") + host + " pid " + std::to_string(getpid());
}

std::string RandomHex(size_t digits) {
    std::random_device random;
    static const char kHex[] = "0123456789abcdef";
    std::string id;
    for (size_t i = 0; i < digits; ++i)
        id += kHex[random() % 16];
    return id;
}

std::string StateName(RegionRecord::State state) {
    switch (state) {
        case RegionRecord::STATE_CREATING:
            return "creating";
        case RegionRecord::STATE_READY:
            return "ready";
        case RegionRecord::STATE_DELETING:
            return "deleting";
        default:
            return "unknown";
    }
}

std::string MemberStateName(v1::ReplicaSetMember::State state) {
    switch (state) {
        case v1::ReplicaSetMember::STATE_IN_SYNC:
            return "in sync";
        case v1::ReplicaSetMember::STATE_STALE:
            return "stale";
        case v1::ReplicaSetMember::STATE_REPAIRING:
            return "repairing";
        default:
            return "unknown";
    }
}

// The cluster of --etcd, with its records' keys.
struct Cluster {
    std::unique_ptr<Etcd> etcd;
    Keys keys;
};

rpma::client::Result<Cluster> OpenCluster(const Settings &settings) {
    const ClusterSettings &c = settings.cluster;
    if (!c.enabled())
        return Status(StatusCode::kInvalidArgument,
                      "this command needs the cluster: give --etcd HOST:PORT[,HOST:PORT...] or "
                      "set RPMACTL_ETCD");
    if (auto s = rpma::cluster::CheckPrefix(c.prefix); !s.ok())
        return Status(StatusCode::kInvalidArgument, "--cluster-prefix: " + s.error_message());
    Cluster cluster{nullptr, Keys(c.prefix)};
    if (auto s = rpma::cluster::ConnectEtcd(c.endpoints, c.ca_file, c.cert_file, c.key_file,
                                            settings.connect.timeout, &cluster.etcd);
        !s.ok())
        return Status(StatusCode::kInvalidArgument, "--etcd: " + s.error_message());
    return cluster;
}

// Region `name` as etcd holds it; kNotFound saying where to look.
rpma::client::Result<Versioned<RegionRecord>> ReadRegion(Cluster &cluster,
                                                         const std::string &name) {
    std::optional<Versioned<RegionRecord>> read;
    if (auto s = rpma::cluster::GetRegion(*cluster.etcd, cluster.keys, name, &read); !s.ok())
        return FromEtcd(s);
    if (!read)
        return Status(StatusCode::kNotFound,
                      "region " + name +
                          " is not in the cluster: rpmactl region list shows the "
                          "regions");
    return std::move(*read);
}

// Live nodes by id.
rpma::client::Result<std::map<std::string, NodeRecord>> LiveNodes(Cluster &cluster) {
    std::vector<NodeRecord> nodes;
    if (auto s = rpma::cluster::ListNodes(*cluster.etcd, cluster.keys, &nodes); !s.ok())
        return FromEtcd(s);
    std::map<std::string, NodeRecord> by_id;
    for (NodeRecord &node : nodes)
        by_id[node.node_id()] = std::move(node);
    return by_id;
}

// One call on the control plane of each of `addresses` at once; the
// statuses in their order.
std::vector<Status> OnEach(
    const Settings &settings, const std::vector<std::string> &addresses,
    const std::function<grpc::Status(ControlPlane &, grpc::ClientContext *)> &call) {
    std::vector<std::future<Status>> pending;
    for (const std::string &address : addresses)
        pending.push_back(std::async(std::launch::async, [&, address]() -> Status {
            auto control = ControlPlane::Connect(address, settings.connect);
            if (!control.ok())
                return control.status();
            return rpma::client::FromGrpc(call(**control, (*control)->Context().get()), address);
        }));
    std::vector<Status> statuses;
    for (auto &p : pending)
        statuses.push_back(p.get());
    return statuses;
}

// Removes the replicas of `record` on the nodes in `nodes` (live ones by
// id); the members it could not remove are kept in *left.
std::vector<Status> DeleteReplicas(const Settings &settings, const RegionRecord &record,
                                   const std::map<std::string, NodeRecord> &nodes, bool force,
                                   std::vector<int> *left) {
    std::vector<std::string> addresses;
    std::vector<int> members;
    std::vector<Status> statuses(record.replica_set().members_size());
    for (int i = 0; i < record.replica_set().members_size(); ++i) {
        const auto &m = record.replica_set().members(i);
        auto node = nodes.find(m.daemon_id());
        if (node == nodes.end()) {
            statuses[i] = Status(StatusCode::kUnavailable,
                                 "node " + m.daemon_id() + " is not live (its lease expired)");
            continue;
        }
        addresses.push_back(node->second.control_address());
        members.push_back(i);
    }
    v1::DeleteRegionRequest request;
    request.set_name(record.name());
    request.set_force(force);
    const auto done = OnEach(settings, addresses, [&](ControlPlane &d, grpc::ClientContext *c) {
        v1::DeleteRegionResponse response;
        return d.regions().DeleteRegion(c, request, &response);
    });
    for (size_t k = 0; k < members.size(); ++k)
        statuses[members[k]] = done[k].code() == StatusCode::kNotFound ? Status() : done[k];
    left->clear();
    for (size_t i = 0; i < statuses.size(); ++i)
        if (!statuses[i].ok())
            left->push_back(static_cast<int>(i));
    return statuses;
}

std::string Describe(const std::vector<Status> &statuses, const RegionRecord &record) {
    std::string all;
    for (size_t i = 0; i < statuses.size(); ++i)
        if (!statuses[i].ok())
            all += (all.empty() ? "" : "; ") + std::string("node ") +
                   record.replica_set().members(i).daemon_id() + ": " + statuses[i].message();
    return all;
}

// A region record whose members are `left` of `record`'s, in `state`.
RegionRecord Keeping(const RegionRecord &record, const std::vector<int> &left,
                     RegionRecord::State state, const std::string &reason) {
    RegionRecord kept = record;
    kept.set_state(state);
    kept.mutable_replica_set()->clear_members();
    for (int i : left)
        *kept.mutable_replica_set()->add_members() = record.replica_set().members(i);
    kept.set_changed_by(Who());
    kept.set_reason(reason);
    return kept;
}

// One line of the controller's history, "UNIX-SECONDS what", with its time
// spelled out.
void PrintDecision(const std::string &line) {
    const size_t space = line.find(' ');
    printf("  %s %s\n", FormatUnixTime(std::stoll(line.substr(0, space))).c_str(),
           line.substr(space + 1).c_str());
}

}  // namespace

int ClusterRegionCreate(const Settings &settings, const std::string &name, uint64_t size,
                        size_t replicas) {
    auto cluster = OpenCluster(settings);
    if (!cluster.ok())
        return Fail(cluster.status());
    if (replicas == 0)
        return Fail(Status(StatusCode::kInvalidArgument, "--replicas: at least 1"));
    std::optional<Versioned<RegionRecord>> existing;
    if (auto s = rpma::cluster::GetRegion(*cluster->etcd, cluster->keys, name, &existing); !s.ok())
        return Fail(FromEtcd(s));
    if (existing) {
        const RegionRecord &r = existing->record;
        if (r.state() == RegionRecord::STATE_READY)
            return Fail(Status(StatusCode::kAlreadyExists,
                               "region " + name + " exists already in the cluster (" +
                                   FormatSizeRounded(r.size_bytes()) + ", " +
                                   std::to_string(r.replica_set().members_size()) +
                                   " replicas): rpmactl region info " + name));
        return Fail(Status(StatusCode::kFailedPrecondition,
                           "region " + name + " is " + StateName(r.state()) + " (by " +
                               r.changed_by() +
                               "): a create or delete of it died half-way; "
                               "finish it with `rpmactl region delete " +
                               name + "`"));
    }
    auto nodes = LiveNodes(*cluster);
    if (!nodes.ok())
        return Fail(nodes.status());
    std::vector<NodeRecord> live;
    for (const auto &[id, node] : *nodes)
        live.push_back(node);
    rpma::cluster::PlacementRequest placement;
    placement.replicas = replicas;
    placement.size_bytes = size;
    std::vector<NodeRecord> chosen;
    if (auto s = rpma::cluster::Place(live, placement, &chosen); !s.ok())
        return Fail(Status(StatusCode::kResourceExhausted,
                           "placing region " + name + ": " + s.error_message()));

    // 1. The intent, in one transaction that only a region not yet there
    // passes: the name is taken and every node a replica may be created on
    // is listed, so that a create that dies from here on leaves a record
    // saying where to clean up, never an orphan file.
    RegionRecord record;
    record.set_name(name);
    record.set_size_bytes(size);
    record.set_state(RegionRecord::STATE_CREATING);
    record.set_created_unix_seconds(NowUnix());
    record.set_changed_by(Who());
    record.set_reason("create");
    v1::ReplicaSetRecord *set = record.mutable_replica_set();
    set->set_set_id(RandomHex(32));
    set->set_generation(1);
    set->set_writer(Who());
    set->set_updated_unix_seconds(NowUnix());
    set->set_reason("created");
    std::vector<std::string> addresses;
    for (const NodeRecord &node : chosen) {
        auto *m = set->add_members();
        m->set_daemon_id(node.node_id());
        m->set_address(node.control_address());
        m->set_state(v1::ReplicaSetMember::STATE_IN_SYNC);
        addresses.push_back(node.control_address());
    }
    int64_t revision = 0;
    if (auto s = rpma::cluster::PutRegion(*cluster->etcd, cluster->keys, record, 0, &revision);
        !s.ok())
        return Fail(FromEtcd(s));

    // 2. The replicas, each with the set's first record (so that the
    // daemons fence writers by it as they do for static sets).
    const auto created = OnEach(settings, addresses, [&](ControlPlane &d, grpc::ClientContext *c) {
        v1::CreateRegionRequest create;
        create.set_name(name);
        create.set_size(size);
        v1::Region region;
        if (grpc::Status s = d.regions().CreateRegion(c, create, &region); !s.ok())
            return s;
        v1::SetReplicaSetRequest request;
        request.set_region(name);
        request.set_expected_generation(0);
        *request.mutable_record() = *set;
        v1::SetReplicaSetResponse response;
        auto again = d.Context();
        if (grpc::Status s = d.regions().SetReplicaSet(again.get(), request, &response); !s.ok())
            return s;
        if (!response.applied())
            return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                                "the daemon holds another replica-set record for " + name);
        return grpc::Status::OK;
    });
    const std::string failed = Describe(created, record);
    if (failed.empty()) {
        // 3. Ready: the same record, compared against the intent.
        record.set_state(RegionRecord::STATE_READY);
        if (auto s = rpma::cluster::PutRegion(*cluster->etcd, cluster->keys, record, revision);
            !s.ok())
            return Fail(FromEtcd(s));
        if (settings.json) {
            PrintJson(Json{{"region", ToJson(record)}});
        } else {
            printf("created region %s (%s) on %zu node(s):", name.c_str(),
                   FormatSizeRounded(size).c_str(), chosen.size());
            for (const NodeRecord &node : chosen)
                printf(" %s (zone '%s', %s)", node.node_id().c_str(), node.zone().c_str(),
                       node.control_address().c_str());
            printf("\n");
        }
        return kExitOk;
    }
    // Undo: every replica made, then the record.
    std::vector<int> left;
    const auto undone = DeleteReplicas(settings, record, *nodes, /*force=*/true, &left);
    Status why(created[0].ok() ? StatusCode::kUnavailable : created[0].code(),
               "creating region " + name + " failed (" + failed + ")");
    for (size_t i = 0; i < created.size(); ++i)
        if (!created[i].ok()) {
            why = Status(created[i].code(), why.message());
            break;
        }
    if (left.empty()) {
        bool applied = false;
        if (auto s =
                cluster->etcd->CompareAndDelete(cluster->keys.Region(name), revision, &applied);
            s.ok() && applied)
            return Fail(Status(why.code(), why.message() + ": nothing was left behind"));
    }
    return Fail(Status(why.code(), why.message() + "; undoing it left " + Describe(undone, record) +
                                       ": the region stays 'creating' until `rpmactl region "
                                       "delete " +
                                       name + "` removes the rest"));
}

int ClusterRegionDelete(const Settings &settings, const std::string &name, bool force) {
    auto cluster = OpenCluster(settings);
    if (!cluster.ok())
        return Fail(cluster.status());
    auto read = ReadRegion(*cluster, name);
    if (!read.ok())
        return Fail(read.status());
    // Deleting first, so that no writer opens it meanwhile.
    RegionRecord deleting = read->record;
    deleting.set_state(RegionRecord::STATE_DELETING);
    deleting.set_changed_by(Who());
    deleting.set_reason("delete");
    int64_t revision = 0;
    if (auto s = rpma::cluster::PutRegion(*cluster->etcd, cluster->keys, deleting, read->revision,
                                          &revision);
        !s.ok())
        return Fail(FromEtcd(s));
    auto nodes = LiveNodes(*cluster);
    if (!nodes.ok())
        return Fail(nodes.status());
    std::vector<int> left;
    const auto statuses = DeleteReplicas(settings, deleting, *nodes, force, &left);
    if (left.empty()) {
        bool applied = false;
        if (auto s =
                cluster->etcd->CompareAndDelete(cluster->keys.Region(name), revision, &applied);
            !s.ok())
            return Fail(FromEtcd(s));
        if (!applied)
            return Fail(Status(
                StatusCode::kFailedPrecondition,
                "region " + name + " changed in etcd while it was deleted: run the delete again"));
        // What its writers left (a new region of the name starts clean).
        (void)cluster->etcd->Delete(cluster->keys.Activity(name));
        (void)cluster->etcd->Delete(cluster->keys.Maintenance(name));
        if (settings.json)
            PrintJson(Json{{"deleted", name}});
        else
            printf("deleted region %s from %d node(s)\n", name.c_str(),
                   read->record.replica_set().members_size());
        return kExitOk;
    }
    // What is left stays listed, so that a later delete finishes it.
    const RegionRecord rest =
        Keeping(deleting, left, RegionRecord::STATE_DELETING, "delete: replicas left");
    (void)rpma::cluster::PutRegion(*cluster->etcd, cluster->keys, rest, revision);
    ExitCode code = kExitOk;
    for (const Status &s : statuses)
        code = Worse(code, ExitCodeFor(s));
    PrintError(Status(StatusCode::kUnavailable,
                      "region " + name + ": " + Describe(statuses, deleting) +
                          "; it stays 'deleting' with those replicas until `rpmactl region "
                          "delete " +
                          name + "` reaches them" +
                          (force ? "" : " (--force closes open sessions)")));
    return code;
}

int ClusterRegionList(const Settings &settings) {
    auto cluster = OpenCluster(settings);
    if (!cluster.ok())
        return Fail(cluster.status());
    std::vector<Versioned<RegionRecord>> regions;
    if (auto s = rpma::cluster::ListRegions(*cluster->etcd, cluster->keys, &regions); !s.ok())
        return Fail(FromEtcd(s));
    if (settings.json) {
        Json array = Json::array();
        for (const auto &r : regions)
            array.push_back(ToJson(r.record));
        PrintJson(array);
        return kExitOk;
    }
    Table table({"name", "size", "state", "in sync", "generation", "writer epoch", "nodes"});
    for (const auto &[r, revision] : regions) {
        int in_sync = 0;
        std::string nodes;
        for (const auto &m : r.replica_set().members()) {
            in_sync += m.state() == v1::ReplicaSetMember::STATE_IN_SYNC;
            nodes += (nodes.empty() ? "" : ",") + m.daemon_id().substr(0, 8);
        }
        table.AddRow(
            {r.name(), FormatSizeRounded(r.size_bytes()), StateName(r.state()),
             std::to_string(in_sync) + "/" + std::to_string(r.replica_set().members_size()),
             std::to_string(r.replica_set().generation()), std::to_string(r.writer_epoch()),
             nodes});
    }
    table.Print();
    return kExitOk;
}

int ClusterRegionInfo(const Settings &settings, const std::string &name) {
    auto cluster = OpenCluster(settings);
    if (!cluster.ok())
        return Fail(cluster.status());
    auto read = ReadRegion(*cluster, name);
    if (!read.ok())
        return Fail(read.status());
    auto nodes = LiveNodes(*cluster);
    if (!nodes.ok())
        return Fail(nodes.status());
    const RegionRecord &r = read->record;
    // Its writer, the writer's activity log, what the controller asks of
    // it and the controller's decisions about it.
    std::optional<rpma::cluster::KeyValue> writer, activity, asked, kept;
    for (auto [key, into] : {std::pair{cluster->keys.Writer(name), &writer},
                             {cluster->keys.Activity(name), &activity},
                             {cluster->keys.Maintenance(name), &asked},
                             {cluster->keys.ControllerStatus(), &kept}})
        if (auto s = cluster->etcd->Get(key, into); !s.ok())
            return Fail(FromEtcd(s));
    rpma::cluster::v1::ActivityLog log;
    rpma::cluster::v1::MaintenanceRequest request;
    rpma::cluster::v1::ControllerStatus status;
    if (activity)
        (void)rpma::cluster::FromJson(activity->value, activity->key, &log);
    if (asked)
        (void)rpma::cluster::FromJson(asked->value, asked->key, &request);
    if (kept)
        (void)rpma::cluster::FromJson(kept->value, kept->key, &status);
    std::vector<std::string> history;
    for (const auto &h : status.history())
        if (h.find(" region " + name + ": ") != std::string::npos)
            history.push_back(h);
    // A repair's progress, from the daemon it copies into.
    std::vector<std::string> states;
    std::vector<std::string> repairing;
    for (const auto &m : r.replica_set().members()) {
        states.push_back(MemberStateName(m.state()));
        auto node = nodes->find(m.daemon_id());
        if (m.state() == ::rpmad::v1::ReplicaSetMember::STATE_REPAIRING && node != nodes->end())
            repairing.push_back(node->second.control_address());
    }
    std::vector<::rpmad::v1::Region> answers(repairing.size());
    size_t asked_index = 0;
    std::map<std::string, size_t> by_address;
    for (const auto &a : repairing)
        by_address[a] = asked_index++;
    OnEach(settings, repairing, [&](ControlPlane &d, grpc::ClientContext *c) {
        ::rpmad::v1::GetRegionRequest get;
        get.set_name(name);
        return d.regions().GetRegion(c, get, &answers[by_address[d.address()]]);
    });
    for (int i = 0; i < r.replica_set().members_size(); ++i) {
        auto node = nodes->find(r.replica_set().members(i).daemon_id());
        if (node == nodes->end() || !by_address.count(node->second.control_address()))
            continue;
        const auto &p = answers[by_address[node->second.control_address()]].repair_progress();
        if (p.total_bytes() > 0)
            states[i] += " " + std::to_string(p.bytes_compared() * 100 / p.total_bytes()) + "%";
    }
    if (settings.json) {
        Json j{{"region", ToJson(r)}, {"revision", read->revision}};
        j["writer"] = writer ? writer->value : "";
        if (activity)
            j["activity"] = ToJson(log);
        if (asked)
            j["maintenance"] = ToJson(request);
        j["history"] = history;
        PrintJson(j);
        return kExitOk;
    }
    printf("region %s: %s, %s, replica set generation %llu, writer epoch %llu\n", name.c_str(),
           FormatSizeRounded(r.size_bytes()).c_str(), StateName(r.state()).c_str(),
           static_cast<unsigned long long>(r.replica_set().generation()),
           static_cast<unsigned long long>(r.writer_epoch()));
    printf("created %s; last change by %s (%s)\n", FormatUnixTime(r.created_unix_seconds()).c_str(),
           r.changed_by().c_str(), r.reason().c_str());
    printf("writer: %s\n", writer ? writer->value.c_str() : "none");
    if (activity)
        printf("activity log: %d extent(s) of %s hot, writer epoch %llu\n", log.extents_size(),
               FormatSizeRounded(log.extent_bytes()).c_str(),
               static_cast<unsigned long long>(log.writer_epoch()));
    Table table({"replica", "node", "zone", "control", "node state", "state"});
    for (int i = 0; i < r.replica_set().members_size(); ++i) {
        const auto &m = r.replica_set().members(i);
        auto node = nodes->find(m.daemon_id());
        const bool live = node != nodes->end();
        table.AddRow({std::to_string(i), m.daemon_id(), live ? node->second.zone() : "-",
                      live ? node->second.control_address() : m.address(),
                      live ? (node->second.draining() ? "draining" : "live") : "dead", states[i]});
    }
    table.Print();
    for (const auto &a : request.actions())
        printf("asked of its writer: %s\n", a.reason().c_str());
    printf("controller's decisions (oldest first):%s\n", history.empty() ? " none" : "");
    for (const auto &h : history)
        PrintDecision(h);
    return kExitOk;
}

rpma::client::Result<std::vector<std::string>> ClusterRegionServers(const Settings &settings,
                                                                    const std::string &name) {
    auto cluster = OpenCluster(settings);
    if (!cluster.ok())
        return cluster.status();
    auto region = ReadRegion(*cluster, name);
    if (!region.ok())
        return region.status();
    auto live = LiveNodes(*cluster);
    if (!live.ok())
        return live.status();
    std::vector<std::string> servers;
    for (const auto &m : region->record.replica_set().members()) {
        auto node = live->find(m.daemon_id());
        servers.push_back(node != live->end() ? node->second.control_address() : m.address());
    }
    return servers;
}

int ClusterNodeList(const Settings &settings) {
    auto cluster = OpenCluster(settings);
    if (!cluster.ok())
        return Fail(cluster.status());
    auto nodes = LiveNodes(*cluster);
    if (!nodes.ok())
        return Fail(nodes.status());
    std::vector<Versioned<RegionRecord>> regions;
    if (auto s = rpma::cluster::ListRegions(*cluster->etcd, cluster->keys, &regions); !s.ok())
        return Fail(FromEtcd(s));
    // Replicas per node; a node that holds replicas but no live record is dead.
    std::map<std::string, int> held;
    std::map<std::string, std::string> last_address;
    for (const auto &r : regions)
        for (const auto &m : r.record.replica_set().members()) {
            ++held[m.daemon_id()];
            last_address[m.daemon_id()] = m.address();
        }
    if (settings.json) {
        Json array = Json::array();
        for (const auto &[id, node] : *nodes)
            array.push_back(Json{{"node", ToJson(node)}, {"state", "live"}, {"regions", held[id]}});
        for (const auto &[id, count] : held)
            if (!nodes->count(id))
                array.push_back(
                    Json{{"node", Json{{"node_id", id}}}, {"state", "dead"}, {"regions", count}});
        PrintJson(array);
        return kExitOk;
    }
    Table table(
        {"node", "state", "zone", "control", "data", "provider", "capacity", "free", "regions"});
    for (const auto &[id, node] : *nodes)
        table.AddRow({id, node.draining() ? "draining" : "live", node.zone(),
                      node.control_address(), node.data_address(), node.provider(),
                      FormatSizeRounded(node.capacity_bytes()),
                      FormatSizeRounded(node.free_bytes()), std::to_string(held[id])});
    for (const auto &[id, count] : held)
        if (!nodes->count(id))
            table.AddRow(
                {id, "dead", "-", last_address[id], "-", "-", "-", "-", std::to_string(count)});
    table.Print();
    return kExitOk;
}

int ClusterNodeDrain(const Settings &settings, const std::string &id, bool undo) {
    auto cluster = OpenCluster(settings);
    if (!cluster.ok())
        return Fail(cluster.status());
    auto nodes = LiveNodes(*cluster);
    if (!nodes.ok())
        return Fail(nodes.status());
    if (!undo && !nodes->count(id))
        return Fail(Status(StatusCode::kNotFound,
                           "node " + id +
                               " is not live: `rpmactl node list` shows the nodes (a "
                               "dead node's replicas are re-placed by themselves)"));
    const auto s = undo ? cluster->etcd->Delete(cluster->keys.Drain(id))
                        : cluster->etcd->Put(cluster->keys.Drain(id),
                                             Who() + " at " + FormatUnixTime(NowUnix()));
    if (!s.ok())
        return Fail(FromEtcd(s));
    if (settings.json)
        PrintJson(Json{{"node", id}, {"draining", !undo}});
    else if (undo)
        printf("node %s: no longer draining\n", id.c_str());
    else
        printf(
            "node %s: draining: the controller moves its replicas to other nodes; `rpmactl "
            "node list` shows how many it still holds\n",
            id.c_str());
    return kExitOk;
}

int ClusterStatus(const Settings &settings) {
    auto cluster = OpenCluster(settings);
    if (!cluster.ok())
        return Fail(cluster.status());
    std::optional<rpma::cluster::KeyValue> leader, kept;
    if (auto s = cluster->etcd->Get(cluster->keys.Controller(), &leader); !s.ok())
        return Fail(FromEtcd(s));
    if (auto s = cluster->etcd->Get(cluster->keys.ControllerStatus(), &kept); !s.ok())
        return Fail(FromEtcd(s));
    rpma::cluster::v1::ControllerStatus status;
    if (kept)
        if (auto s = rpma::cluster::FromJson(kept->value, kept->key, &status); !s.ok())
            return Fail(FromEtcd(s));
    auto nodes = LiveNodes(*cluster);
    if (!nodes.ok())
        return Fail(nodes.status());
    if (settings.json) {
        PrintJson(Json{{"controller", leader ? leader->value : ""},
                       {"live_nodes", nodes->size()},
                       {"status", ToJson(status)}});
        return kExitOk;
    }
    printf("controller: %s\n",
           leader ? ("node " + leader->value).c_str() : "none (no rpmad in cluster mode is up)");
    printf("live nodes: %zu\n", nodes->size());
    printf("waiting:%s\n", status.waiting().empty() ? " nothing" : "");
    for (const auto &w : status.waiting())
        printf("  %s\n", w.c_str());
    printf("history (oldest first):%s\n", status.history().empty() ? " none" : "");
    for (const auto &h : status.history())
        PrintDecision(h);
    return kExitOk;
}

void AddClusterCommands(CLI::App &app, Run *run) {
    CLI::App *node = app.add_subcommand("node", "the cluster's nodes (needs --etcd)");
    node->require_subcommand(1);
    node->add_subcommand("list", "list the nodes: live or dead, zone, capacity, regions held")
        ->callback([run] { *run = ClusterNodeList; });
    auto id = std::make_shared<std::string>();
    auto undo = std::make_shared<bool>(false);
    CLI::App *drain = node->add_subcommand(
        "drain", "move every replica off node ID (the controller copies them elsewhere)");
    drain->add_option("ID", *id, "the node's id, as node list shows it")->required();
    drain->add_flag("--undo", *undo, "let the node take replicas again");
    drain->callback([run, id, undo] {
        *run = [id, undo](const Settings &s) { return ClusterNodeDrain(s, *id, *undo); };
    });
    CLI::App *cluster = app.add_subcommand("cluster", "the cluster as a whole (needs --etcd)");
    cluster->require_subcommand(1);
    cluster
        ->add_subcommand("status",
                         "the controller: which node leads it, what it waits for, what it did")
        ->callback([run] { *run = ClusterStatus; });
}

}  // namespace rpmactl
