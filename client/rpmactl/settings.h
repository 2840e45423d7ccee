// Where rpmactl finds its daemons and how it talks to them, resolved from
// (strongest first) the command line, the environment (RPMACTL_SERVER) and
// the configuration file (--config, else $XDG_CONFIG_HOME/rpmactl/config.yaml,
// else ~/.config/rpmactl/config.yaml), else the defaults.
//
// config.yaml (every key optional; unknown keys are errors):
//   servers: [127.0.0.1:7300, 10.0.0.2:7300]   # or one string
//   tls: true
//   ca_file: /etc/rpmad/ca.pem
//   cert_file: ...                            # with key_file, for mutual TLS
//   key_file: ...
//   admin_token_file: ~/.config/rpmactl/admin-token
//   client_token_file: ~/.config/rpmactl/client-token  # to open sessions
//   timeout_seconds: 10
#ifndef CLIENT_RPMACTL_SETTINGS_H
#define CLIENT_RPMACTL_SETTINGS_H

#include <functional>
#include <string>
#include <vector>

#include "rpma/client/control_plane.h"
#include "rpma/client/status.h"

namespace rpmactl {

inline constexpr char kDefaultServer[] = "127.0.0.1:7300";

// The global flags as given ("" / empty / negative: not given).
struct Flags {
    std::vector<std::string> servers;
    std::string config_file;
    bool tls = false;
    std::string ca_file;
    std::string cert_file;
    std::string key_file;
    std::string admin_token;
    std::string admin_token_file;
    std::string client_token_file;
    double timeout_seconds = -1;
    bool json = false;
    // Cluster mode.
    std::string etcd;
    std::string etcd_ca_file;
    std::string etcd_cert_file;
    std::string etcd_key_file;
    std::string cluster_prefix;
};

// Where the cluster is (--etcd, else RPMACTL_ETCD); endpoints empty: the
// servers are a static set.
struct ClusterSettings {
    std::string endpoints;
    std::string ca_file;
    std::string cert_file;
    std::string key_file;
    std::string prefix = "/rpma/";

    bool enabled() const { return !endpoints.empty(); }
};

struct Settings {
    std::vector<std::string> servers;
    rpma::client::ConnectOptions connect;
    bool json = false;
    // Where `servers` came from: "--server", "RPMACTL_SERVER", a file path
    // or "default"; for messages and `config show --local`.
    std::string servers_origin;
    // The configuration file read, "" if none.
    std::string config_file;
    ClusterSettings cluster;
};

// Reads the environment through `getenv` (tests pass their own). Errors
// (kInvalidArgument, a usage error) name the file, key or flag and the fix.
rpma::client::Result<Settings> ResolveSettings(
    const Flags &flags, const std::function<const char *(const char *)> &getenv);

// The first line of a token file, surrounding whitespace removed (as rpmad
// reads control.admin_token_file); `what` ("admin token") names it in errors.
rpma::client::Result<std::string> ReadTokenFile(const std::string &path,
                                                const std::string &what = "admin token");

}  // namespace rpmactl

#endif  // CLIENT_RPMACTL_SETTINGS_H
