// How a subcommand plugs into main: it registers itself on the CLI11 app
// and, when the command line chooses it, leaves in *run what to do once the
// global settings are resolved. *run returns the exit code.
#ifndef CLIENT_RPMACTL_COMMAND_H
#define CLIENT_RPMACTL_COMMAND_H

#include <CLI/CLI.hpp>
#include <functional>

#include "client/rpmactl/settings.h"

namespace rpmactl {

using Run = std::function<int(const Settings &)>;

// region, session, stats, health, config (control plane only).
void AddAdminCommands(CLI::App &app, Run *run);

// put, get, bench (the data plane, through the client library).
void AddDataCommands(CLI::App &app, Run *run);

// verify (daemon-side checksums) and region repair (the library's Repair);
// after AddAdminCommands, whose "region" it adds to.
void AddReplicaCommands(CLI::App &app, Run *run);

// node list, cluster mode's region create/list/info/delete (--etcd);
// after AddAdminCommands, whose region commands it routes to etcd.
void AddClusterCommands(CLI::App &app, Run *run);

// bench: write + persist latency and bandwidth (bench.cc).
void AddBenchCommand(CLI::App &app, Run *run);

}  // namespace rpmactl

#endif  // CLIENT_RPMACTL_COMMAND_H
