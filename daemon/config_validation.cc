#include "daemon/config_validation.h"

#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "cluster/endpoints.h"
#include "daemon/config_files.h"
#include "daemon/config_text.h"
#include "daemon/did_you_mean.h"

namespace rpmad {
namespace config_text {
namespace {

Status CheckReadable(const std::string &path, std::string_view key) {
    StatusOr<std::string> text = ReadWholeFile(path, key);
    return text.ok() ? Status() : text.status();
}

Status CheckAtLeast(uint64_t value, uint64_t minimum, std::string_view key, std::string what) {
    if (value >= minimum)
        return Status();
    return Invalid(std::string(key) + ": " + std::to_string(value) + " is too small; " + what);
}

Status CheckAdminToken(const Config &config) {
    if (config.admin_token_file.empty())
        return Status();
    StatusOr<std::string> token = ReadAdminTokenFile(config.admin_token_file);
    if (!token.ok())
        return token.status();
    if (config.admin_token.empty()) {
        return Status(StatusCode::kFailedPrecondition,
                      "control.admin_token_file: the token has not been read from " +
                          Quoted(config.admin_token_file) + " (ResolveAdminToken does that)");
    }
    if (config.admin_token != *token) {
        return Invalid(
            "control.admin_token: set together with control.admin_token_file; give the token "
            "in one of them and leave the other empty");
    }
    return Status();
}

Status CheckTls(const TlsConfig &tls, const Locator &where) {
    if (tls.cert_file.empty() != tls.key_file.empty()) {
        std::string missing = tls.cert_file.empty() ? "cert_file" : "key_file";
        std::string present = tls.cert_file.empty() ? "key_file" : "cert_file";
        return where.At("control.tls." + present,
                        Invalid("control.tls." + missing + ": empty while control.tls." + present +
                                " is set; give both (TLS) or neither (plaintext gRPC)"));
    }
    const std::pair<const std::string *, std::string> files[] = {
        {&tls.cert_file, "control.tls.cert_file"},
        {&tls.key_file, "control.tls.key_file"},
        {&tls.client_ca_file, "control.tls.client_ca_file"},
    };
    for (const auto &[file, key] : files) {
        if (!file->empty()) {
            if (Status s = CheckReadable(*file, key); !s.ok())
                return where.At(key, s);
        }
    }
    if (!tls.client_ca_file.empty() && !tls.enabled()) {
        return where.At("control.tls.client_ca_file",
                        Invalid("control.tls.client_ca_file: client certificates need TLS; set "
                                "control.tls.cert_file and control.tls.key_file too"));
    }
    if (tls.require_client_cert && tls.client_ca_file.empty()) {
        return where.At(
            "control.tls.require_client_cert",
            Invalid("control.tls.require_client_cert: true needs control.tls.client_ca_file to "
                    "verify client certificates against; set it, or set this to false"));
    }
    return Status();
}

Status CheckListenAddresses(const Config &config, const Locator &where) {
    StatusOr<HostPort> control = SplitHostPort(config.control_listen, "control.listen");
    if (!control.ok())
        return where.At("control.listen", control.status());
    StatusOr<HostPort> data = SplitHostPort(config.data_listen, "data.listen");
    if (!data.ok())
        return where.At("data.listen", data.status());
    if (control->host == data->host && control->port == data->port && control->port != "0") {
        return where.At("data.listen",
                        Invalid("data.listen: " + Quoted(config.data_listen) +
                                " is also control.listen; give each plane its own port"));
    }
    if (config.metrics_listen.empty())
        return Status();
    StatusOr<HostPort> metrics = SplitHostPort(config.metrics_listen, "metrics.listen");
    if (!metrics.ok())
        return where.At("metrics.listen", metrics.status());
    for (const auto &[other, key] : {std::pair(*control, "control.listen"), {*data, "data.listen"}})
        if (metrics->host == other.host && metrics->port == other.port && metrics->port != "0")
            return where.At("metrics.listen",
                            Invalid("metrics.listen: " + Quoted(config.metrics_listen) +
                                    " is also " + key + "; give the metrics a port of their own"));
    return Status();
}

Status CheckDevdaxRegions(const std::vector<DevdaxRegionConfig> &regions) {
    constexpr std::string_view kKey = "storage.devdax_regions";
    for (size_t i = 0; i < regions.size(); ++i) {
        const DevdaxRegionConfig &region = regions[i];
        const std::string entry = std::string(kKey) + "[" + std::to_string(i) + "]";
        if (region.name.empty())
            return Invalid(entry + ".name: missing; every devdax region needs a name");
        if (region.path.empty() || region.path[0] != '/') {
            return Invalid(entry + ".path: " + Quoted(region.path) +
                           " is not an absolute path; give the device, e.g. /dev/dax0.0");
        }
        for (size_t j = 0; j < i; ++j) {
            if (regions[j].name == region.name) {
                return Invalid(entry + ".name: " + Quoted(region.name) + " is also the name of " +
                               std::string(kKey) + "[" + std::to_string(j) +
                               "]; give each region its own");
            }
        }
    }
    return Status();
}

bool Wildcard(const std::string &host) {
    return host.empty() || host == "0.0.0.0" || host == "::" || host == "[::]";
}

Status CheckTcp(const TcpConfig &tcp, const Locator &where) {
    const struct {
        uint32_t value, low, high;
        const char *key, *what;
    } knobs[] = {
        {tcp.timeout_ms, 10, 3600000, "data.tcp.timeout_ms", "0 (never) or 10 to 3600000 ms"},
        {tcp.max_handshaking, 1, 65536, "data.tcp.max_handshaking", "1 to 65536 connections"},
        {tcp.max_pending, 1, 65536, "data.tcp.max_pending", "1 to 65536 connection requests"},
        {tcp.persist_threads, 1, 64, "data.tcp.persist_threads", "1 to 64 threads"},
        {tcp.inline_linger_us, 0, 10000000, "data.tcp.inline_linger_us", "0 (off) to 10000000 us"},
    };
    for (const auto &k : knobs) {
        const bool never = k.value == 0 && std::string_view(k.key) == "data.tcp.timeout_ms";
        if (!never && (k.value < k.low || k.value > k.high))
            return where.At(k.key, Invalid(std::string(k.key) + ": " + std::to_string(k.value) +
                                           " is out of range; give " + k.what));
    }
    return Status();
}

Status CheckCluster(const Config &config, const Locator &where) {
    const ClusterConfig &cluster = config.cluster;
    if (!cluster.enabled())
        return Status();
    std::string error;
    if (!rpma::cluster::ParseEtcdEndpoints(cluster.etcd_endpoints, &error))
        return where.At("cluster.etcd.endpoints", Invalid("cluster.etcd.endpoints: " + error));
    for (const auto &[file, key] : {std::pair(&cluster.etcd_ca_file, "cluster.etcd.ca_file"),
                                    {&cluster.etcd_cert_file, "cluster.etcd.cert_file"},
                                    {&cluster.etcd_key_file, "cluster.etcd.key_file"}})
        if (!file->empty())
            if (Status s = CheckReadable(*file, key); !s.ok())
                return where.At(key, s);
    if (cluster.etcd_cert_file.empty() != cluster.etcd_key_file.empty())
        return where.At("cluster.etcd.cert_file",
                        Invalid("cluster.etcd.cert_file and cluster.etcd.key_file go together: "
                                "set both or neither"));
    if (cluster.prefix.size() < 2 || cluster.prefix.front() != '/' || cluster.prefix.back() != '/')
        return where.At("cluster.prefix", Invalid("cluster.prefix: " + Quoted(cluster.prefix) +
                                                  " must start and end with '/', e.g. /rpma/"));
    if (cluster.lease_ttl_seconds < 3)
        return where.At("cluster.lease_ttl_seconds",
                        Invalid("cluster.lease_ttl_seconds: at least 3, so that the node can "
                                "renew its lease a few times within it"));
    if (cluster.replace_after_seconds < cluster.lease_ttl_seconds)
        return where.At("cluster.replace_after_seconds",
                        Invalid("cluster.replace_after_seconds: at least "
                                "cluster.lease_ttl_seconds; a node is not dead before its "
                                "lease expired"));
    for (const auto &[advertised, listen, key] :
         {std::tuple(&cluster.advertise_control, &config.control_listen,
                     "cluster.advertise_control"),
          {&cluster.advertise_data, &config.data_listen, "cluster.advertise_data"}}) {
        if (!advertised->empty()) {
            StatusOr<HostPort> split = SplitHostPort(*advertised, key);
            if (!split.ok() || Wildcard(split->host) || split->port == "0")
                return where.At(key, Invalid(std::string(key) + ": " + Quoted(*advertised) +
                                             " is not a host:port clients can reach"));
            continue;
        }
        StatusOr<HostPort> split = SplitHostPort(*listen, key);
        if (split.ok() && Wildcard(split->host))
            return where.At(key, Invalid(std::string(key) + ": " + Quoted(*listen) +
                                         " listens on every address, which a client cannot "
                                         "dial: set " +
                                         key + " to the host:port clients reach this node at"));
    }
    return Status();
}

}  // namespace

Status CheckConfig(const Config &config, const Locator &where) {
    if (Status s = CheckListenAddresses(config, where); !s.ok())
        return s;
    if (Status s = CheckAdminToken(config); !s.ok()) {
        return where.At(
            config.admin_token.empty() ? "control.admin_token_file" : "control.admin_token", s);
    }
    if (Status s = CheckTls(config.tls, where); !s.ok())
        return s;
    if (Status s = CheckChoice(config.provider, kProviders, "data.provider"); !s.ok()) {
        return where.At("data.provider", s);
    }
    if (config.pool_dir.empty() || config.pool_dir[0] != '/') {
        return where.At("storage.pool_dir",
                        Invalid("storage.pool_dir: " + Quoted(config.pool_dir) +
                                " is not an absolute path; give one, or leave it empty for the "
                                "default (" +
                                DefaultPoolDir() + ")"));
    }
    if (Status s = CheckDevdaxRegions(config.devdax_regions); !s.ok()) {
        return where.At("storage.devdax_regions", s);
    }
    const struct {
        uint64_t value, minimum;
        std::string key, what;
    } minimums[] = {
        {config.max_regions, 1, "limits.max_regions", "at least one region must be allowed"},
        {config.max_region_size, kMinRegionSize, "limits.max_region_size",
         "a region is at least one page, 4KiB"},
        {config.max_sessions, 1, "limits.max_sessions", "at least one session must be allowed"},
        {config.token_ttl_seconds, 1, "sessions.token_ttl_seconds",
         "a client needs at least a second to connect with its token"},
    };
    for (const auto &m : minimums) {
        if (Status s = CheckAtLeast(m.value, m.minimum, m.key, m.what); !s.ok()) {
            return where.At(m.key, s);
        }
    }
    if (Status s = CheckChoice(config.log_level, kLogLevels, "logging.level"); !s.ok()) {
        return where.At("logging.level", s);
    }
    if (Status s = CheckChoice(config.log_target, kLogTargets, "logging.target"); !s.ok()) {
        return where.At("logging.target", s);
    }
    if (Status s = CheckTcp(config.tcp, where); !s.ok())
        return s;
    if (Status s = CheckCluster(config, where); !s.ok())
        return s;
    return Status();
}

}  // namespace config_text

using config_text::Invalid;
using config_text::Quoted;

Status CheckChoice(std::string_view value, std::span<const std::string_view> choices,
                   std::string_view key) {
    if (std::find(choices.begin(), choices.end(), value) != choices.end())
        return Status();
    return Invalid(std::string(key) + ": " + Quoted(value) + " is not a valid value" +
                   DidYouMean(value, choices) + "; use one of " + JoinNames(choices));
}

Status ValidateConfig(const Config &config) {
    return CheckConfig(config, config_text::Locator());
}

}  // namespace rpmad
