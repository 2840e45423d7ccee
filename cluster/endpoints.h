// etcd endpoints as rpmad.yaml, rpmactl --etcd and the client library take
// them: "host:port" (IPv6 in brackets), comma-separated, each optionally
// with "http://" (dropped) or "https://" (kept: it asks for TLS).
#ifndef CLUSTER_ENDPOINTS_H
#define CLUSTER_ENDPOINTS_H

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rpma::cluster {

// nullopt with *error saying what is wrong and how to write it.
std::optional<std::vector<std::string>> ParseEtcdEndpoints(std::string_view text,
                                                           std::string *error);

}  // namespace rpma::cluster

#endif  // CLUSTER_ENDPOINTS_H
