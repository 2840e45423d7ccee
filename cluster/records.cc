#include "cluster/records.h"

#include <google/protobuf/util/json_util.h>

namespace rpma::cluster {

grpc::Status CheckPrefix(const std::string &prefix) {
    if (prefix.size() < 2 || prefix.front() != '/' || prefix.back() != '/')
        return grpc::Status(
            grpc::StatusCode::INVALID_ARGUMENT,
            "cluster prefix '" + prefix + "' must start and end with '/' (for example /rpma/)");
    return grpc::Status::OK;
}

std::string ToJson(const google::protobuf::Message &message) {
    std::string json;
    google::protobuf::util::JsonPrintOptions options;
    options.preserve_proto_field_names = true;
    (void)google::protobuf::util::MessageToJsonString(message, &json, options);
    return json;
}

grpc::Status FromJson(const std::string &json, const std::string &key,
                      google::protobuf::Message *message) {
    google::protobuf::util::JsonParseOptions options;
    // Records written by a newer version may carry fields this one lacks.
    options.ignore_unknown_fields = true;
    const auto parsed = google::protobuf::util::JsonStringToMessage(json, message, options);
    if (!parsed.ok())
        return grpc::Status(grpc::StatusCode::DATA_LOSS, "etcd key " + key + " does not hold a " +
                                                             message->GetDescriptor()->name() +
                                                             " (" + std::string(parsed.message()) +
                                                             "): remove or rewrite it");
    return grpc::Status::OK;
}

grpc::Status ListNodes(Etcd &etcd, const Keys &keys, std::vector<NodeRecord> *nodes) {
    std::vector<KeyValue> kvs, drains;
    if (auto s = etcd.List(keys.Nodes(), &kvs); !s.ok())
        return s;
    if (auto s = etcd.List(keys.Drains(), &drains); !s.ok())
        return s;
    nodes->clear();
    for (const KeyValue &kv : kvs) {
        NodeRecord node;
        if (auto s = FromJson(kv.value, kv.key, &node); !s.ok())
            return s;
        for (const KeyValue &d : drains)
            if (d.key == keys.Drain(node.node_id()))
                node.set_draining(true);
        nodes->push_back(std::move(node));
    }
    return grpc::Status::OK;
}

grpc::Status GetRegion(Etcd &etcd, const Keys &keys, const std::string &name,
                       std::optional<Versioned<RegionRecord>> *region) {
    std::optional<KeyValue> kv;
    if (auto s = etcd.Get(keys.Region(name), &kv); !s.ok())
        return s;
    region->reset();
    if (!kv)
        return grpc::Status::OK;
    Versioned<RegionRecord> read;
    read.revision = kv->mod_revision;
    if (auto s = FromJson(kv->value, kv->key, &read.record); !s.ok())
        return s;
    *region = std::move(read);
    return grpc::Status::OK;
}

grpc::Status ListRegions(Etcd &etcd, const Keys &keys,
                         std::vector<Versioned<RegionRecord>> *regions) {
    std::vector<KeyValue> kvs;
    if (auto s = etcd.List(keys.Regions(), &kvs); !s.ok())
        return s;
    regions->clear();
    for (const KeyValue &kv : kvs) {
        Versioned<RegionRecord> read;
        read.revision = kv.mod_revision;
        if (auto s = FromJson(kv.value, kv.key, &read.record); !s.ok())
            return s;
        regions->push_back(std::move(read));
    }
    return grpc::Status::OK;
}

grpc::Status PutRegion(Etcd &etcd, const Keys &keys, const RegionRecord &record, int64_t revision,
                       int64_t *new_revision) {
    bool applied = false;
    if (auto s = etcd.CompareAndPut(keys.Region(record.name()), ToJson(record), revision, &applied,
                                    new_revision);
        !s.ok())
        return s;
    if (!applied)
        return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                            revision == 0
                                ? "region " + record.name() + " exists already in the cluster"
                                : "region " + record.name() +
                                      " changed in etcd meanwhile (another writer, rpmactl or "
                                      "the controller): read it again");
    return grpc::Status::OK;
}

}  // namespace rpma::cluster
