#include "daemon/config_schema.h"

#include <algorithm>

namespace rpmad::config_schema {
namespace {

// uint32_t fields are counts, uint64_t fields are sizes in bytes.
const Key kKeys[] = {
    {"control.listen", [](Config &c) -> FieldRef { return &c.control_listen; }},
    {"control.admin_token", [](Config &c) -> FieldRef { return &c.admin_token; }},
    {"control.admin_token_file", [](Config &c) -> FieldRef { return &c.admin_token_file; }},
    {"control.tls.cert_file", [](Config &c) -> FieldRef { return &c.tls.cert_file; }},
    {"control.tls.key_file", [](Config &c) -> FieldRef { return &c.tls.key_file; }},
    {"control.tls.client_ca_file", [](Config &c) -> FieldRef { return &c.tls.client_ca_file; }},
    {"control.tls.require_client_cert",
     [](Config &c) -> FieldRef { return &c.tls.require_client_cert; }},
    {"data.listen", [](Config &c) -> FieldRef { return &c.data_listen; }},
    {"data.provider", [](Config &c) -> FieldRef { return &c.provider; }, kProviders},
    {"data.persistence", [](Config &c) -> FieldRef { return &c.persistence; }, kPersistenceNames},
    {"data.tcp.timeout_ms", [](Config &c) -> FieldRef { return &c.tcp.timeout_ms; }},
    {"data.tcp.max_handshaking", [](Config &c) -> FieldRef { return &c.tcp.max_handshaking; }},
    {"data.tcp.max_pending", [](Config &c) -> FieldRef { return &c.tcp.max_pending; }},
    {"data.tcp.persist_threads", [](Config &c) -> FieldRef { return &c.tcp.persist_threads; }},
    {"data.tcp.inline_linger_us", [](Config &c) -> FieldRef { return &c.tcp.inline_linger_us; }},
    {"storage.pool_dir", [](Config &c) -> FieldRef { return &c.pool_dir; }},
    {"storage.capacity", [](Config &c) -> FieldRef { return &c.capacity; }},
    {"storage.devdax_regions", [](Config &c) -> FieldRef { return &c.devdax_regions; }},
    {"limits.max_regions", [](Config &c) -> FieldRef { return &c.max_regions; }},
    {"limits.max_region_size", [](Config &c) -> FieldRef { return &c.max_region_size; }},
    {"limits.max_sessions", [](Config &c) -> FieldRef { return &c.max_sessions; }},
    {"sessions.token_ttl_seconds", [](Config &c) -> FieldRef { return &c.token_ttl_seconds; }},
    {"sessions.client_tokens_file", [](Config &c) -> FieldRef { return &c.client_tokens_file; }},
    {"sessions.max_per_identity",
     [](Config &c) -> FieldRef { return &c.max_sessions_per_identity; }},
    {"sessions.max_pending_per_peer",
     [](Config &c) -> FieldRef { return &c.max_pending_per_peer; }},
    {"logging.level", [](Config &c) -> FieldRef { return &c.log_level; }, kLogLevels},
    {"logging.target", [](Config &c) -> FieldRef { return &c.log_target; }, kLogTargets},
    {"metrics.listen", [](Config &c) -> FieldRef { return &c.metrics_listen; }},
    {"cluster.etcd.endpoints", [](Config &c) -> FieldRef { return &c.cluster.etcd_endpoints; }},
    {"cluster.etcd.ca_file", [](Config &c) -> FieldRef { return &c.cluster.etcd_ca_file; }},
    {"cluster.etcd.cert_file", [](Config &c) -> FieldRef { return &c.cluster.etcd_cert_file; }},
    {"cluster.etcd.key_file", [](Config &c) -> FieldRef { return &c.cluster.etcd_key_file; }},
    {"cluster.prefix", [](Config &c) -> FieldRef { return &c.cluster.prefix; }},
    {"cluster.zone", [](Config &c) -> FieldRef { return &c.cluster.zone; }},
    {"cluster.advertise_control",
     [](Config &c) -> FieldRef { return &c.cluster.advertise_control; }},
    {"cluster.advertise_data", [](Config &c) -> FieldRef { return &c.cluster.advertise_data; }},
    {"cluster.lease_ttl_seconds",
     [](Config &c) -> FieldRef { return &c.cluster.lease_ttl_seconds; }},
    {"cluster.replace_after_seconds",
     [](Config &c) -> FieldRef { return &c.cluster.replace_after_seconds; }},
};

}  // namespace

std::span<const Key> Keys() {
    return kKeys;
}

const Key *FindKey(std::string_view path) {
    for (const Key &key : kKeys) {
        if (key.path == path)
            return &key;
    }
    return nullptr;
}

std::vector<std::string_view> ChildrenOf(std::string_view section) {
    std::vector<std::string_view> children;
    for (const Key &key : kKeys) {
        std::string_view rest = key.path;
        if (!section.empty()) {
            if (!rest.starts_with(section) || rest.size() <= section.size() ||
                rest[section.size()] != '.') {
                continue;
            }
            rest.remove_prefix(section.size() + 1);
        }
        std::string_view name = rest.substr(0, rest.find('.'));
        if (std::find(children.begin(), children.end(), name) == children.end()) {
            children.push_back(name);
        }
    }
    return children;
}

std::vector<std::string_view> SplitPath(std::string_view path) {
    std::vector<std::string_view> parts;
    for (size_t dot; (dot = path.find('.')) != std::string_view::npos;) {
        parts.push_back(path.substr(0, dot));
        path.remove_prefix(dot + 1);
    }
    parts.push_back(path);
    return parts;
}

}  // namespace rpmad::config_schema
