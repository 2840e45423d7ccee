#include "cluster/endpoints.h"

#include "util/host_port.h"

namespace rpma::cluster {

std::optional<std::vector<std::string>> ParseEtcdEndpoints(std::string_view text,
                                                           std::string *error) {
    std::vector<std::string> endpoints;
    while (!text.empty()) {
        const size_t comma = text.find(',');
        std::string_view endpoint = text.substr(0, comma);
        text = comma == std::string_view::npos ? "" : text.substr(comma + 1);
        if (endpoint.empty())
            continue;
        if (endpoint.starts_with("http://"))
            endpoint.remove_prefix(7);
        const bool https = endpoint.starts_with("https://");
        std::string why;
        const auto split = rpma::util::SplitHostPort(https ? endpoint.substr(8) : endpoint, &why);
        if (!split || split->port == "0") {
            *error = "etcd endpoint '" + std::string(endpoint) + "' is not host:port (" +
                     (split ? "port 0" : why) +
                     "): write it like 127.0.0.1:2379, [::1]:2379 or https://etcd1:2379";
            return std::nullopt;
        }
        endpoints.emplace_back(endpoint);
    }
    if (endpoints.empty()) {
        *error =
            "no etcd endpoint given: list host:port of each member, comma-separated "
            "(for example 127.0.0.1:2379)";
        return std::nullopt;
    }
    return endpoints;
}

}  // namespace rpma::cluster
