#include "client/rpmactl/settings.h"

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <optional>
#include <set>
#include <sstream>
#include <string_view>

#include "util/files.h"
#include "util/host_port.h"

namespace rpmactl {
namespace {

using rpma::client::Result;
using rpma::client::Status;
using rpma::client::StatusCode;

Status Usage(std::string message) {
    return Status(StatusCode::kInvalidArgument, std::move(message));
}

// What config.yaml may set.
struct FileSettings {
    std::vector<std::string> servers;
    bool tls = false;
    std::string ca_file, cert_file, key_file, admin_token_file, client_token_file;
    double timeout_seconds = -1;
    // Cluster mode: etcd's endpoints (comma-joined), its TLS files, the prefix.
    std::string etcd, etcd_ca_file, etcd_cert_file, etcd_key_file, cluster_prefix;
};

std::string ExpandHome(const std::string &path,
                       const std::function<const char *(const char *)> &getenv) {
    if (path.rfind("~/", 0) != 0)
        return path;
    const char *home = getenv("HOME");
    return home ? std::string(home) + path.substr(1) : path;
}

std::string DefaultConfigPath(const std::function<const char *(const char *)> &getenv) {
    const char *xdg = getenv("XDG_CONFIG_HOME");
    if (xdg && *xdg)
        return std::string(xdg) + "/rpmactl/config.yaml";
    const char *home = getenv("HOME");
    if (home && *home)
        return std::string(home) + "/.config/rpmactl/config.yaml";
    return "";
}

Result<FileSettings> ReadConfigFile(const std::string &path,
                                    const std::function<const char *(const char *)> &getenv) {
    static const std::set<std::string> kKeys = {"servers",
                                                "tls",
                                                "ca_file",
                                                "cert_file",
                                                "key_file",
                                                "admin_token_file",
                                                "client_token_file",
                                                "timeout_seconds",
                                                "etcd",
                                                "etcd_ca_file",
                                                "etcd_cert_file",
                                                "etcd_key_file",
                                                "cluster_prefix"};
    FileSettings file;
    YAML::Node root;
    try {
        root = YAML::LoadFile(path);
    } catch (const YAML::BadFile &) {
        return Usage(path + ": cannot be read: check the path and its permissions");
    } catch (const YAML::Exception &e) {
        return Usage(path + ":" + std::to_string(e.mark.line + 1) + ": not valid YAML: " + e.msg);
    }
    if (root.IsNull())
        return file;
    if (!root.IsMap())
        return Usage(path + ": expected a mapping of keys (servers, tls, ...) at the top level");
    // yaml-cpp throws on a value of the wrong type; each key says what it wants.
    std::string key;
    std::vector<std::string> etcd;
    try {
        for (const auto &entry : root) {
            key = entry.first.as<std::string>();
            const YAML::Node &value = entry.second;
            if (!kKeys.count(key))
                return Usage(path + ": unknown key '" + key +
                             "': the keys are servers, tls, ca_file, cert_file, key_file, "
                             "admin_token_file, client_token_file, timeout_seconds, etcd, "
                             "etcd_ca_file, etcd_cert_file, etcd_key_file, cluster_prefix (see "
                             "rpmactl(1))");
            if (key == "servers" || key == "etcd") {
                std::vector<std::string> &list = key == "servers" ? file.servers : etcd;
                if (value.IsSequence()) {
                    for (const auto &server : value)
                        list.push_back(server.as<std::string>());
                } else {
                    list.push_back(value.as<std::string>());
                }
            } else if (key == "cluster_prefix") {
                file.cluster_prefix = value.as<std::string>();
            } else if (key == "tls") {
                file.tls = value.as<bool>();
            } else if (key == "timeout_seconds") {
                file.timeout_seconds = value.as<double>();
                if (!(file.timeout_seconds > 0))
                    return Usage(path + ": timeout_seconds must be a positive number of seconds");
            } else {
                std::string text = ExpandHome(value.as<std::string>(), getenv);
                // Relative paths are relative to the file, not to where rpmactl runs.
                if (!text.empty() && text[0] != '/')
                    text = (std::filesystem::path(path).parent_path() / text).string();
                (key == "ca_file"            ? file.ca_file
                 : key == "cert_file"        ? file.cert_file
                 : key == "key_file"         ? file.key_file
                 : key == "admin_token_file" ? file.admin_token_file
                 : key == "etcd_ca_file"     ? file.etcd_ca_file
                 : key == "etcd_cert_file"   ? file.etcd_cert_file
                 : key == "etcd_key_file"    ? file.etcd_key_file
                                             : file.client_token_file) = text;
            }
        }
    } catch (const YAML::Exception &) {
        return Usage(path + ": key '" + key + "' has a value of the wrong type: " +
                     (key == "servers" || key == "etcd" ? "write a list of host:port strings"
                      : key == "cluster_prefix"         ? "write a prefix such as /rpma/"
                      : key == "tls"                    ? "write true or false"
                      : key == "timeout_seconds"        ? "write a number of seconds"
                                                        : "write a file path"));
    }
    for (const std::string &endpoint : etcd)
        file.etcd += (file.etcd.empty() ? "" : ",") + endpoint;
    return file;
}

std::vector<std::string> SplitList(const std::string &text) {
    std::vector<std::string> items;
    std::stringstream in(text);
    std::string item;
    while (std::getline(in, item, ','))
        if (!item.empty())
            items.push_back(item);
    return items;
}

}  // namespace

Result<std::string> ReadTokenFile(const std::string &path, const std::string &what) {
    int error = 0;
    const std::optional<std::string> text = rpma::util::ReadWholeFile(path, &error);
    if (!text)
        return Usage("cannot read the " + what + " file " + path + ": " + std::strerror(error) +
                     "; check the path and that you may read it");
    const std::string_view token = rpma::util::TrimmedFirstLine(*text);
    if (token.empty())
        return Usage("the " + what + " file " + path +
                     " holds no token on its first line: write the token there");
    return std::string(token);
}

Result<Settings> ResolveSettings(const Flags &flags,
                                 const std::function<const char *(const char *)> &getenv) {
    Settings settings;
    settings.json = flags.json;
    FileSettings file;
    std::string path = flags.config_file;
    const bool explicit_file = !path.empty();
    if (!explicit_file)
        path = DefaultConfigPath(getenv);
    if (!path.empty() && (explicit_file || std::filesystem::exists(path))) {
        auto read = ReadConfigFile(path, getenv);
        if (!read.ok())
            return read.status();
        file = *read;
        settings.config_file = path;
    }

    const char *env_servers = getenv("RPMACTL_SERVER");
    if (!flags.servers.empty()) {
        settings.servers = flags.servers;
        settings.servers_origin = "--server";
    } else if (env_servers && *env_servers) {
        settings.servers = SplitList(env_servers);
        settings.servers_origin = "RPMACTL_SERVER";
    } else if (!file.servers.empty()) {
        settings.servers = file.servers;
        settings.servers_origin = path;
    } else {
        settings.servers = {kDefaultServer};
        settings.servers_origin = "default";
    }
    std::set<std::string> seen;
    for (const std::string &server : settings.servers) {
        std::string error;
        if (!rpma::util::SplitHostPort(server, &error))
            return Usage("server (from " + settings.servers_origin + ") " + error);
        if (!seen.insert(server).second)
            return Usage("server " + server + " is given twice (from " + settings.servers_origin +
                         "): a replica set names each rpmad once");
    }

    const char *env_etcd = getenv("RPMACTL_ETCD");
    ClusterSettings &cluster = settings.cluster;
    cluster.endpoints = !flags.etcd.empty()     ? flags.etcd
                        : env_etcd && *env_etcd ? env_etcd
                                                : file.etcd;
    cluster.ca_file = !flags.etcd_ca_file.empty() ? flags.etcd_ca_file : file.etcd_ca_file;
    cluster.cert_file = !flags.etcd_cert_file.empty() ? flags.etcd_cert_file : file.etcd_cert_file;
    cluster.key_file = !flags.etcd_key_file.empty() ? flags.etcd_key_file : file.etcd_key_file;
    if (!flags.cluster_prefix.empty())
        cluster.prefix = flags.cluster_prefix;
    else if (!file.cluster_prefix.empty())
        cluster.prefix = file.cluster_prefix;

    auto &connect = settings.connect;
    connect.tls = flags.tls || file.tls;
    connect.ca_file = !flags.ca_file.empty() ? flags.ca_file : file.ca_file;
    connect.cert_file = !flags.cert_file.empty() ? flags.cert_file : file.cert_file;
    connect.key_file = !flags.key_file.empty() ? flags.key_file : file.key_file;
    const double timeout = flags.timeout_seconds > 0  ? flags.timeout_seconds
                           : file.timeout_seconds > 0 ? file.timeout_seconds
                                                      : 10.0;
    connect.timeout = std::chrono::milliseconds(static_cast<int64_t>(std::ceil(timeout * 1000)));

    if (!flags.admin_token.empty() && !flags.admin_token_file.empty())
        return Usage("--admin-token and --admin-token-file both given: give one");
    if (!flags.admin_token.empty()) {
        connect.admin_token = flags.admin_token;
    } else {
        const std::string token_file =
            !flags.admin_token_file.empty() ? flags.admin_token_file : file.admin_token_file;
        if (!token_file.empty()) {
            auto token = ReadTokenFile(token_file);
            if (!token.ok())
                return token.status();
            connect.admin_token = *token;
        }
    }
    const std::string client_token_file =
        !flags.client_token_file.empty() ? flags.client_token_file : file.client_token_file;
    if (!client_token_file.empty()) {
        auto token = ReadTokenFile(client_token_file, "client token");
        if (!token.ok())
            return token.status();
        connect.client_token = *token;
    }
    return settings;
}

}  // namespace rpmactl
