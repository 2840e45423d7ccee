// rpmad's configuration: what the YAML file (config/rpmad.yaml documents
// every key) and the command line can set, and the checks that turn a
// mistake into a message naming the key and the fix. Nothing here starts
// anything; main.cc hands a validated Config to the parts it wires together.
#ifndef DAEMON_CONFIG_H
#define DAEMON_CONFIG_H

#include <sys/types.h>

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/status.h"
#include "util/host_port.h"
#include "util/sizes.h"

namespace rpmad {

// gRPC transport security of the control plane. Empty cert_file and key_file
// mean plaintext, which is only sensible on a loopback or otherwise private
// listen address.
struct TlsConfig {
    std::string cert_file;       // PEM server certificate (chain)
    std::string key_file;        // PEM private key of cert_file
    std::string client_ca_file;  // PEM CA bundle; set = client certificates are requested
    bool require_client_cert = false;

    bool enabled() const { return !cert_file.empty() || !key_file.empty(); }
    bool operator==(const TlsConfig &) const = default;
};

// How a client makes its writes durable (see ARCHITECTURE.md): kAuto lets
// the daemon pick APM where the medium and provider allow it, else GPSPM.
enum class Persistence { kAuto, kApm, kGpspm };

// A region on device DAX (storage.devdax_regions): a whole /dev/daxX.Y or a
// range of it. Configured rather than created: rpmad maps it at start and
// refuses to delete it (see region_store.h).
struct DevdaxRegionConfig {
    std::string name;     // a region name, unique among all regions
    std::string path;     // the device-DAX character device, /dev/daxX.Y
    uint64_t offset = 0;  // bytes into the device; a multiple of its alignment
    uint64_t size = 0;    // bytes, a multiple of its alignment; 0 = to the end

    bool operator==(const DevdaxRegionConfig &) const = default;
};

// A client allowed to open sessions, from sessions.client_tokens_file: its
// name is its identity, for the quotas and the log.
struct ClientToken {
    std::string name;
    std::string token;

    bool operator==(const ClientToken &) const = default;
};

// The tcp provider's knobs (data.tcp.*), which rpmad hands to rpma_core
// with rpma_ext_tcp_set_options; the defaults are the provider's.
struct TcpConfig {
    uint32_t timeout_ms = 4000;  // 0: a silent peer never breaks a connection
    uint32_t max_handshaking = 128;
    uint32_t max_pending = 128;
    uint32_t persist_threads = 2;
    uint32_t inline_linger_us = 1000;  // 0: off

    bool operator==(const TcpConfig &) const = default;
};

// Cluster mode (README "Cluster mode"): where etcd is and how this node
// presents itself there. No endpoints: a standalone daemon.
struct ClusterConfig {
    // Comma-separated host:port (or https://host:port) of etcd's members.
    std::string etcd_endpoints;
    std::string etcd_ca_file;
    std::string etcd_cert_file;
    std::string etcd_key_file;
    std::string prefix = "/rpma/";
    std::string zone;
    // host:port clients reach this node's control and data planes at; empty:
    // control.listen and data.listen (which must then not be wildcards).
    std::string advertise_control;
    std::string advertise_data;
    uint32_t lease_ttl_seconds = 10;
    // How long a node may be dead before the controller re-places its
    // replicas.
    uint32_t replace_after_seconds = 300;

    bool enabled() const { return !etcd_endpoints.empty(); }
    bool operator==(const ClusterConfig &) const = default;
};

struct Config {
    std::string control_listen = "127.0.0.1:7300";
    std::string admin_token;  // resolved: from admin_token or read from admin_token_file
    std::string admin_token_file;
    TlsConfig tls;
    std::string data_listen = "127.0.0.1:7301";
    std::string provider = "auto";
    TcpConfig tcp;
    Persistence persistence = Persistence::kAuto;
    std::string pool_dir;   // resolved absolute path after DefaultConfig()/LoadConfigFile
    uint64_t capacity = 0;  // bytes; 0 = limited only by the filesystem
    std::vector<DevdaxRegionConfig> devdax_regions;
    uint32_t max_regions = 1024;
    uint64_t max_region_size = 64ull << 30;
    uint32_t max_sessions = 256;
    uint32_t token_ttl_seconds = 60;
    // Empty: OpenSession needs no token. Resolved into client_tokens.
    std::string client_tokens_file;
    std::vector<ClientToken> client_tokens;
    uint32_t max_sessions_per_identity = 0;  // 0: only limits.max_sessions
    uint32_t max_pending_per_peer = 0;       // 0: only limits.max_sessions
    std::string log_level = "info";
    std::string log_target = "auto";
    // host:port of the Prometheus metrics listener; empty: none.
    std::string metrics_listen;
    ClusterConfig cluster;

    bool operator==(const Config &) const = default;
};

// The values a key accepts, in the order the documentation lists them.
inline constexpr std::array<std::string_view, 3> kProviders = {"auto", "tcp", "verbs"};
inline constexpr std::array<std::string_view, 3> kPersistenceNames = {"auto", "apm", "gpspm"};
inline constexpr std::array<std::string_view, 7> kLogLevels = {"trace", "debug",    "info", "warn",
                                                               "error", "critical", "off"};
inline constexpr std::array<std::string_view, 3> kLogTargets = {"auto", "stderr", "journal"};

// The smallest region the daemon can map: one page.
inline constexpr uint64_t kMinRegionSize = 4096;

// INVALID_ARGUMENT naming `key` (a dotted config key or a flag) unless
// `value` is one of `choices`.
Status CheckChoice(std::string_view value, std::span<const std::string_view> choices,
                   std::string_view key);

std::string_view PersistenceName(Persistence persistence);

// host:port split (rpma::util::SplitHostPort): "[::1]:7300" -> {"::1",
// "7300"}; INVALID_ARGUMENT naming `key` otherwise. Port 0 is accepted (the
// listener picks a free port).
using HostPort = rpma::util::HostPort;
StatusOr<HostPort> SplitHostPort(std::string_view text, std::string_view key);

// rpma::util::ParseSize: "4096", "64MiB", "2GiB", "1TiB" (binary units);
// decimal units (MB, G) are refused rather than guessed at.
StatusOr<uint64_t> ParseSize(std::string_view text);
// "64GiB" when exact in the largest such unit, else the plain number of bytes.
using rpma::util::FormatSize;

// Where regions live when nothing says otherwise: /var/lib/rpmad for root,
// else $XDG_DATA_HOME/rpmad (when absolute) or $HOME/.local/share/rpmad.
std::string DefaultPoolDir();
// The same rule with its inputs spelled out (null = unset variable).
std::string DefaultPoolDirFor(uid_t euid, const char *xdg_data_home, const char *home);
// Empty -> DefaultPoolDir(); relative -> absolute against the working
// directory, so the daemon's meaning does not change if it chdirs later.
StatusOr<std::string> ResolvePoolDir(std::string_view text);

// Config{} with pool_dir resolved: the values config/rpmad.yaml documents.
Config DefaultConfig();

// Reads the admin token from config->admin_token_file (first line, trimmed)
// into config->admin_token. No-op when no file is named; an error when both
// forms are given or the file is unreadable or empty.
Status ResolveAdminToken(Config *config);

// Reads the client tokens from config->client_tokens_file (one "NAME TOKEN"
// per line; blank lines and lines starting with '#' are skipped) into
// config->client_tokens. No-op when no file is named; an error naming the
// line when one is malformed, a name or token repeats, or there is none.
Status ResolveClientTokens(Config *config);

// Parses and validates a config file's text; `origin` (the file name) starts
// every message. Keys the text omits keep their defaults. Resolves pool_dir,
// the admin token and the client tokens.
StatusOr<Config> ParseConfig(std::string_view yaml, const std::string &origin);
// ParseConfig of the file at `path`; NOT_FOUND / PERMISSION_DENIED / ... with
// the path and strerror when it cannot be read.
StatusOr<Config> LoadConfigFile(const std::string &path);

// Every rule a Config must satisfy before the daemon starts: listen syntax,
// choices, limits, TLS cert and key both or neither and readable,
// require_client_cert with client_ca_file, admin_token xor admin_token_file,
// devdax regions with a name (each its own) and an absolute path. Whether a
// devdax path is a device-DAX device, and the range fits it, is the region
// store's to find out when it maps the device.
Status ValidateConfig(const Config &config);

// The effective config as YAML in the file's layout; a set admin_token shows
// as "<redacted>" (one read from admin_token_file shows only the file's path).
// The text parses back with ParseConfig.
std::string RedactedYaml(const Config &config);

}  // namespace rpmad

#endif  // DAEMON_CONFIG_H
