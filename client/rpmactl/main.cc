// rpmactl: the admin CLI of rpmad. Parses the command line (CLI11), resolves
// the global settings (flags, RPMACTL_SERVER, config.yaml, defaults), runs
// the chosen subcommand and exits with its code (exit_code.h).
#include <grpc/support/log.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>

#include "client/rpmactl/command.h"
#include "client/rpmactl/daemons.h"
#include "client/rpmactl/exit_code.h"
#include "client/rpmactl/settings.h"
#include "rpma_version.h"

namespace rpmactl {
namespace {

constexpr char kFooter[] =
    "Servers: --server, else RPMACTL_SERVER (comma-separated), else servers: in\n"
    "~/.config/rpmactl/config.yaml, else 127.0.0.1:7300.\n"
    "Exit status: 0 ok, 1 a daemon refused or an operation failed, 2 bad usage\n"
    "or configuration, 3 a daemon could not be reached. See rpmactl(1).";

// gRPC logs a failed TLS handshake (and the like) on stderr itself; rpmactl
// reports every failed call in its own words, with what to do, so gRPC's
// lines are only said again in terms a user cannot act on. GRPC_VERBOSITY
// brings them back for debugging.
void QuietGrpcLog(gpr_log_func_args *) {}

int Main(int argc, char **argv) {
    if (getenv("GRPC_VERBOSITY") == nullptr)
        gpr_set_log_function(QuietGrpcLog);
    CLI::App app("rpmactl: manage rpmad daemons and replicate data into their regions", "rpmactl");
    app.footer(kFooter);
    app.set_version_flag("--version", "rpmactl " RPMA_VERSION);
    // Global flags are accepted after the subcommand too.
    app.fallthrough();
    app.require_subcommand(1);

    Flags flags;
    app.add_option("-s,--server", flags.servers,
                   "rpmad control plane HOST:PORT; repeat for a replica set")
        ->type_name("HOST:PORT");
    app.add_option("--config", flags.config_file,
                   "rpmactl's configuration file (default ~/.config/rpmactl/config.yaml)")
        ->type_name("FILE");
    app.add_flag("--tls", flags.tls, "talk TLS to the control plane (system CA roots)");
    app.add_option("--ca", flags.ca_file, "PEM CA bundle to trust (implies --tls)")
        ->type_name("FILE");
    app.add_option("--cert", flags.cert_file, "PEM client certificate, for mutual TLS")
        ->type_name("FILE");
    app.add_option("--key", flags.key_file, "PEM key of --cert")->type_name("FILE");
    app.add_option("--admin-token", flags.admin_token,
                   "rpmad's admin token (visible to ps: prefer --admin-token-file)")
        ->type_name("TOKEN");
    app.add_option("--admin-token-file", flags.admin_token_file,
                   "file whose first line is the admin token")
        ->type_name("FILE");
    app.add_option("--client-token-file", flags.client_token_file,
                   "file whose first line is a client token, for daemons that require one to "
                   "open sessions")
        ->type_name("FILE");
    app.add_option("--timeout", flags.timeout_seconds, "deadline of each control call (default 10)")
        ->type_name("SECONDS");
    app.add_flag("--json", flags.json, "print JSON (stable field names) instead of tables");
    app.add_option("--etcd", flags.etcd,
                   "cluster mode: etcd's members, comma-separated host:port (else RPMACTL_ETCD)")
        ->type_name("ENDPOINTS");
    app.add_option("--etcd-ca", flags.etcd_ca_file,
                   "PEM CA bundle that etcd's certificate is "
                   "checked against")
        ->type_name("FILE");
    app.add_option("--etcd-cert", flags.etcd_cert_file,
                   "PEM client certificate for etcd, with --etcd-key")
        ->type_name("FILE");
    app.add_option("--etcd-key", flags.etcd_key_file, "PEM key of --etcd-cert")->type_name("FILE");
    app.add_option("--cluster-prefix", flags.cluster_prefix,
                   "where the cluster's keys live in etcd (default /rpma/)")
        ->type_name("PREFIX");

    Run run;
    AddAdminCommands(app, &run);
    AddDataCommands(app, &run);
    AddReplicaCommands(app, &run);
    AddClusterCommands(app, &run);

    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp &e) {
        return app.exit(e);
    } catch (const CLI::CallForAllHelp &e) {
        return app.exit(e);
    } catch (const CLI::CallForVersion &e) {
        return app.exit(e);
    } catch (const CLI::ParseError &e) {
        app.exit(e);
        return kExitUsage;
    }
    auto settings = ResolveSettings(flags, [](const char *name) { return getenv(name); });
    if (!settings.ok()) {
        PrintError(settings.status());
        return kExitUsage;
    }
    return run ? run(*settings) : kExitUsage;
}

}  // namespace
}  // namespace rpmactl

int main(int argc, char **argv) {
    return rpmactl::Main(argc, argv);
}
