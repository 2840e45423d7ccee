// Where cluster mode's records live in etcd and how they are read and
// written: keys under the prefix (cluster.proto says which), values in
// protobuf's JSON form.
#ifndef CLUSTER_RECORDS_H
#define CLUSTER_RECORDS_H

#include <google/protobuf/message.h>
#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cluster/cluster.pb.h"
#include "cluster/etcd.h"

namespace rpma::cluster {

using v1::NodeRecord;
using v1::RegionRecord;

inline constexpr const char *kDefaultPrefix = "/rpma/";

// An error unless `prefix` starts and ends with '/' (so that /rpma/ and
// /rpma2/ never see each other's keys).
grpc::Status CheckPrefix(const std::string &prefix);

class Keys {
  public:
    explicit Keys(std::string prefix = kDefaultPrefix) : prefix_(std::move(prefix)) {}
    std::string Nodes() const { return prefix_ + "nodes/"; }
    std::string Node(const std::string &id) const { return Nodes() + id; }
    std::string Regions() const { return prefix_ + "regions/"; }
    std::string Region(const std::string &name) const { return Regions() + name; }
    std::string Writer(const std::string &name) const { return prefix_ + "writers/" + name; }
    std::string Writers() const { return prefix_ + "writers/"; }
    // Set by `rpmactl node drain`; the node's record shows it as draining.
    std::string Drain(const std::string &id) const { return prefix_ + "drain/" + id; }
    std::string Drains() const { return prefix_ + "drain/"; }
    // A writer's hot extents (ActivityLog) and what the controller asks of
    // it (MaintenanceRequest).
    std::string Activity(const std::string &name) const { return Activities() + name; }
    std::string Activities() const { return prefix_ + "activity/"; }
    std::string Maintenance(const std::string &name) const {
        return prefix_ + "maintenance/" + name;
    }
    std::string Maintenances() const { return prefix_ + "maintenance/"; }
    std::string Controller() const { return prefix_ + "controller"; }
    std::string ControllerStatus() const { return prefix_ + "status/controller"; }
    const std::string &prefix() const { return prefix_; }

  private:
    std::string prefix_;
};

std::string ToJson(const google::protobuf::Message &message);
// DATA_LOSS naming `key` when the value is not a record of that type.
grpc::Status FromJson(const std::string &json, const std::string &key,
                      google::protobuf::Message *message);

// A record with the revision it was read at (its key's mod_revision), which
// a change compares against.
template <typename Record>
struct Versioned {
    Record record;
    int64_t revision = 0;
};

// The live nodes (those whose lease holds), in node id order, draining
// where a drain key says so.
grpc::Status ListNodes(Etcd &etcd, const Keys &keys, std::vector<NodeRecord> *nodes);
grpc::Status GetRegion(Etcd &etcd, const Keys &keys, const std::string &name,
                       std::optional<Versioned<RegionRecord>> *region);
grpc::Status ListRegions(Etcd &etcd, const Keys &keys,
                         std::vector<Versioned<RegionRecord>> *regions);
// Writes `record` if the region is still at `revision` (0: absent).
// FAILED_PRECONDITION, saying what changed, when it is not.
grpc::Status PutRegion(Etcd &etcd, const Keys &keys, const RegionRecord &record, int64_t revision,
                       int64_t *new_revision = nullptr);

}  // namespace rpma::cluster

#endif  // CLUSTER_RECORDS_H
