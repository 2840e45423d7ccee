// The admin subcommands: one control-plane call asked of every --server,
// answered as a table or as JSON.
#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <set>

#include "client/rpmactl/cluster_commands.h"
#include "client/rpmactl/command.h"
#include "client/rpmactl/daemons.h"
#include "client/rpmactl/health.h"
#include "client/rpmactl/set_view.h"
#include "client/rpmactl/sizes.h"

namespace rpmactl {
namespace {

namespace v1 = ::rpmad::v1;
using rpma::client::ControlPlane;

// Arguments of the admin subcommands, filled in by CLI11.
struct AdminArgs {
    std::string name;
    std::string size;
    bool force = false;
    std::string region;
    std::string session_id;
    std::string service;
    bool local = false;
    size_t replicas = 3;
};

std::string PersistenceName(v1::Persistence persistence) {
    switch (persistence) {
        case v1::PERSISTENCE_APM:
            return "apm";
        case v1::PERSISTENCE_GPSPM:
            return "gpspm";
        default:
            return "-";
    }
}

// A data-plane counter, or "unknown" where the daemon's provider cannot see
// one-sided operations (verbs: the NIC applies them).
std::string Counter(bool available, uint64_t value, bool bytes) {
    if (!available)
        return "unknown";
    return bytes ? FormatSizeRounded(value) + " (" + std::to_string(value) + ")"
                 : std::to_string(value);
}

// The region's row; `state` is the replica's state among the daemons
// given (set_view.h), never "ok" for a replica that missed writes.
void AddRegionRow(Table &table, const std::string &server, const v1::Region &region,
                  const std::string &state) {
    table.AddRow({server, region.name(), FormatSizeRounded(region.size()),
                  PersistenceName(region.persistence()), region.granularity(),
                  std::to_string(region.open_sessions()),
                  FormatUnixTime(region.created_unix_seconds()), state});
}

Table RegionTable() {
    return Table(
        {"server", "name", "size", "persistence", "granularity", "sessions", "created", "state"});
}

// A region just created (or any region no writer opened yet) has no
// replica-set record: its state is "unrecorded".
std::string FreshState(const v1::Region &region) {
    return StateCell(region, DecideReplicaStates({RecordOf(region)}).replicas[0]);
}

void PrintWarning(const std::string &warning) {
    if (!warning.empty())
        fprintf(stderr, "rpmactl: warning: %s\n", warning.c_str());
}

// Runs `body` with the daemons of `settings`; a TLS file that cannot be read
// is a usage error.
int WithDaemons(const Settings &settings, const std::function<int(Daemons &)> &body) {
    auto daemons = ConnectDaemons(settings);
    if (!daemons.ok()) {
        PrintError(daemons.status());
        return kExitUsage;
    }
    return body(*daemons);
}

// --- region ------------------------------------------------------------------

int RegionCreate(const Settings &settings, const AdminArgs &args) {
    std::string error;
    const auto size = ParseSizeArgument("SIZE", args.size, &error);
    if (!size || *size == 0) {
        PrintError(rpma::client::Status(
            rpma::client::StatusCode::kInvalidArgument,
            size ? "SIZE: 0 is not a region size: write a multiple of 4096 such as 1MiB" : error));
        return kExitUsage;
    }
    if (settings.cluster.enabled())
        return ClusterRegionCreate(settings, args.name, *size, args.replicas);
    return WithDaemons(settings, [&](Daemons &daemons) {
        v1::CreateRegionRequest request;
        request.set_name(args.name);
        request.set_size(*size);
        auto answers = AskEach<v1::Region>(
            daemons, [&](ControlPlane &d, grpc::ClientContext *c, v1::Region *out) {
                return d.regions().CreateRegion(c, request, out);
            });
        return Report<v1::Region>(
            settings, answers,
            [](const v1::Region &r) {
                return Json{{"region", ToJson(r)}};
            },
            [](const auto &ok) {
                Table table = RegionTable();
                for (const auto *answer : ok)
                    AddRegionRow(table, answer->daemon->address(), answer->response,
                                 FreshState(answer->response));
                table.Print();
            });
    });
}

int RegionDelete(const Settings &settings, const AdminArgs &args) {
    if (settings.cluster.enabled())
        return ClusterRegionDelete(settings, args.name, args.force);
    return WithDaemons(settings, [&](Daemons &daemons) {
        v1::DeleteRegionRequest request;
        request.set_name(args.name);
        request.set_force(args.force);
        auto answers = AskEach<v1::DeleteRegionResponse>(
            daemons, [&](ControlPlane &d, grpc::ClientContext *c, v1::DeleteRegionResponse *out) {
                return d.regions().DeleteRegion(c, request, out);
            });
        return Report<v1::DeleteRegionResponse>(
            settings, answers, [](const v1::DeleteRegionResponse &r) { return ToJson(r); },
            [&](const auto &ok) {
                for (const auto *answer : ok)
                    printf("%s: deleted region %s (%u sessions closed)\n",
                           answer->daemon->address().c_str(), args.name.c_str(),
                           answer->response.closed_sessions());
            });
    });
}

int RegionList(const Settings &settings) {
    if (settings.cluster.enabled())
        return ClusterRegionList(settings);
    return WithDaemons(settings, [&](Daemons &daemons) {
        auto answers = AskEach<v1::ListRegionsResponse>(
            daemons, [](ControlPlane &d, grpc::ClientContext *c, v1::ListRegionsResponse *out) {
                return d.regions().ListRegions(c, v1::ListRegionsRequest(), out);
            });
        // Each region's replicas are judged together: every daemon's record
        // of it counts (one daemon's own record can be stale itself).
        std::map<std::string, SetVerdict> verdicts;
        {
            std::set<std::string> names;
            for (const auto &answer : answers)
                if (answer.status.ok())
                    for (const v1::Region &region : answer.response.regions())
                        names.insert(region.name());
            for (const std::string &name : names) {
                std::vector<ReplicaRecord> records;
                for (const auto &answer : answers) {
                    ReplicaRecord record;
                    if (answer.status.ok())
                        for (const v1::Region &region : answer.response.regions())
                            if (region.name() == name)
                                record = RecordOf(region);
                    records.push_back(record);
                }
                verdicts[name] = DecideReplicaStates(records);
                PrintWarning(VerdictWarning(name, verdicts[name]));
            }
        }
        auto index_of = [&](const v1::ListRegionsResponse &response) {
            for (size_t i = 0; i < answers.size(); ++i)
                if (&answers[i].response == &response)
                    return i;
            return size_t{0};
        };
        return Report<v1::ListRegionsResponse>(
            settings, answers,
            [&](const v1::ListRegionsResponse &r) {
                Json json = ToJson(r);
                const size_t server = index_of(r);
                for (int i = 0; i < r.regions_size(); ++i) {
                    const SetVerdict &verdict = verdicts[r.regions(i).name()];
                    json["regions"][i]["replica_state"] =
                        StateJson(r.regions(i), verdict.replicas[server], verdict);
                }
                return json;
            },
            [&](const auto &ok) {
                Table table = RegionTable();
                for (const auto *answer : ok) {
                    const size_t server = index_of(answer->response);
                    for (const v1::Region &region : answer->response.regions())
                        AddRegionRow(table, answer->daemon->address(), region,
                                     StateCell(region, verdicts[region.name()].replicas[server]));
                }
                if (table.empty())
                    printf("no regions\n");
                else
                    table.Print();
            });
    });
}

std::string MemberState(const v1::ReplicaSetMember &member) {
    switch (member.state()) {
        case v1::ReplicaSetMember::STATE_IN_SYNC:
            return "IN_SYNC";
        case v1::ReplicaSetMember::STATE_STALE:
            return "STALE since generation " + std::to_string(member.stale_since());
        case v1::ReplicaSetMember::STATE_REPAIRING:
            return "REPAIRING (stale since generation " + std::to_string(member.stale_since()) +
                   ")";
        default:
            return "-";
    }
}

int RegionInfo(const Settings &settings, const AdminArgs &args) {
    if (settings.cluster.enabled())
        return ClusterRegionInfo(settings, args.name);
    return WithDaemons(settings, [&](Daemons &daemons) {
        SetView view = ReadSetView(daemons, args.name);
        const SetVerdict &verdict = view.verdict;
        PrintWarning(VerdictWarning(args.name, verdict));
        auto index_of = [&](const v1::Region &region) {
            for (size_t i = 0; i < view.answers.size(); ++i)
                if (&view.answers[i].response == &region)
                    return i;
            return size_t{0};
        };
        return Report<v1::Region>(
            settings, view.answers,
            [&](const v1::Region &r) {
                return Json{{"region", ToJson(r)},
                            {"replica_state", StateJson(r, verdict.replicas[index_of(r)], verdict)},
                            {"newest_replica_set", ToJson(verdict.newest)}};
            },
            [&](const auto &ok) {
                // One column per daemon: replicas side by side.
                std::vector<std::string> header = {"field"};
                for (const auto *answer : ok)
                    header.push_back(answer->daemon->address());
                Table table(header);
                auto row = [&](const std::string &field,
                               const std::function<std::string(const v1::Region &)> &value) {
                    std::vector<std::string> cells = {field};
                    for (const auto *answer : ok)
                        cells.push_back(value(answer->response));
                    table.AddRow(cells);
                };
                row("name", [](const v1::Region &r) { return r.name(); });
                row("id", [](const v1::Region &r) { return std::to_string(r.id()); });
                row("size", [](const v1::Region &r) {
                    return FormatSizeRounded(r.size()) + " (" + std::to_string(r.size()) + ")";
                });
                row("persistence",
                    [](const v1::Region &r) { return PersistenceName(r.persistence()); });
                row("granularity", [](const v1::Region &r) { return r.granularity(); });
                row("persist method", [](const v1::Region &r) {
                    return r.persist_method().empty() ? "-" : r.persist_method();
                });
                row("backing", [](const v1::Region &r) { return r.backing(); });
                row("sessions",
                    [](const v1::Region &r) { return std::to_string(r.open_sessions()); });
                row("bytes written", [](const v1::Region &r) {
                    return Counter(r.data_plane_counters_available(), r.bytes_written(), true);
                });
                row("bytes read", [](const v1::Region &r) {
                    return Counter(r.data_plane_counters_available(), r.bytes_read(), true);
                });
                row("remote flushes", [](const v1::Region &r) {
                    return Counter(r.data_plane_counters_available(), r.remote_flushes(), false);
                });
                row("bytes persisted", [](const v1::Region &r) {
                    return Counter(r.data_plane_counters_available(), r.bytes_persisted(), true);
                });
                row("created",
                    [](const v1::Region &r) { return FormatUnixTime(r.created_unix_seconds()); });
                row("daemon id", [](const v1::Region &r) {
                    return r.daemon_id().empty() ? "-" : r.daemon_id();
                });
                // The replica set as this daemon's own record has it (it may
                // be behind: the state row says what counts).
                row("generation", [](const v1::Region &r) {
                    return std::to_string(r.replica_set().generation());
                });
                row("writer", [](const v1::Region &r) {
                    const auto &set = r.replica_set();
                    if (set.generation() == 0)
                        return std::string("-");
                    return (set.writer().empty() ? "?" : set.writer()) + ", " +
                           FormatUnixTime(set.updated_unix_seconds()) +
                           (set.reason().empty() ? "" : " (" + set.reason() + ")");
                });
                row("state", [&](const v1::Region &r) {
                    return StateCell(r, verdict.replicas[index_of(r)]);
                });
                table.Print();
                const auto &newest = verdict.newest;
                if (newest.generation() == 0) {
                    printf(
                        "\nno replica set recorded: no writer opened %s with a replica set "
                        "yet\n",
                        args.name.c_str());
                    return;
                }
                printf(
                    "\nreplica set %s, generation %llu (the newest of the daemons reached), "
                    "quorum %u, written by %s at %s%s:\n",
                    newest.set_id().c_str(), static_cast<unsigned long long>(newest.generation()),
                    newest.quorum(), newest.writer().empty() ? "?" : newest.writer().c_str(),
                    FormatUnixTime(newest.updated_unix_seconds()).c_str(),
                    newest.reason().empty() ? "" : (" (" + newest.reason() + ")").c_str());
                Table members({"member", "address", "daemon id", "recorded state"});
                for (int i = 0; i < newest.members_size(); ++i)
                    members.AddRow({std::to_string(i), newest.members(i).address(),
                                    newest.members(i).daemon_id(), MemberState(newest.members(i))});
                members.Print();
            });
    });
}

// --- session -----------------------------------------------------------------

std::string SessionState(v1::Session::State state) {
    switch (state) {
        case v1::Session::STATE_PENDING:
            return "pending";
        case v1::Session::STATE_CONNECTED:
            return "connected";
        default:
            return "-";
    }
}

int SessionList(const Settings &settings, const AdminArgs &args) {
    return WithDaemons(settings, [&](Daemons &daemons) {
        v1::ListSessionsRequest request;
        request.set_region(args.region);
        auto answers = AskEach<v1::ListSessionsResponse>(
            daemons, [&](ControlPlane &d, grpc::ClientContext *c, v1::ListSessionsResponse *out) {
                return d.sessions().ListSessions(c, request, out);
            });
        return Report<v1::ListSessionsResponse>(
            settings, answers, [](const v1::ListSessionsResponse &r) { return ToJson(r); },
            [](const auto &ok) {
                Table table({"server", "session", "region", "state", "peer", "opened", "flushes",
                             "flushed"});
                for (const auto *answer : ok)
                    for (const v1::Session &s : answer->response.sessions())
                        table.AddRow({answer->daemon->address(), s.session_id(), s.region(),
                                      SessionState(s.state()), s.peer().empty() ? "-" : s.peer(),
                                      FormatUnixTime(s.opened_unix_seconds()),
                                      std::to_string(s.flushes()),
                                      FormatSizeRounded(s.bytes_flushed())});
                if (table.empty())
                    printf("no sessions\n");
                else
                    table.Print();
            });
    });
}

// A session id belongs to one daemon: the close succeeds when the daemon
// that has it closed it; "not found" elsewhere is expected, not an error.
int SessionClose(const Settings &settings, const AdminArgs &args) {
    return WithDaemons(settings, [&](Daemons &daemons) {
        v1::CloseSessionRequest request;
        request.set_session_id(args.session_id);
        auto answers = AskEach<v1::CloseSessionResponse>(
            daemons, [&](ControlPlane &d, grpc::ClientContext *c, v1::CloseSessionResponse *out) {
                return d.sessions().CloseSession(c, request, out);
            });
        const auto not_found = [](const auto &answer) {
            return answer.status.code() == rpma::client::StatusCode::kNotFound;
        };
        const bool closed = std::any_of(answers.begin(), answers.end(),
                                        [](const auto &answer) { return answer.status.ok(); });
        if (closed) {
            std::erase_if(answers, not_found);
        } else if (std::all_of(answers.begin(), answers.end(), not_found)) {
            PrintError(rpma::client::Status(rpma::client::StatusCode::kNotFound,
                                            "no daemon has session " + args.session_id +
                                                " (rpmactl session list shows the open sessions)"));
            if (settings.json)
                PrintJson(Json::array());
            return kExitFailure;
        }
        return Report<v1::CloseSessionResponse>(
            settings, answers,
            [&](const v1::CloseSessionResponse &) {
                return Json{{"closed", args.session_id}};
            },
            [&](const auto &ok) {
                for (const auto *answer : ok)
                    printf("%s: closed session %s\n", answer->daemon->address().c_str(),
                           args.session_id.c_str());
            });
    });
}

// --- daemon ------------------------------------------------------------------

int Stats(const Settings &settings) {
    return WithDaemons(settings, [&](Daemons &daemons) {
        auto answers = AskEach<v1::Stats>(
            daemons, [](ControlPlane &d, grpc::ClientContext *c, v1::Stats *out) {
                return d.daemon().GetStats(c, v1::GetStatsRequest(), out);
            });
        return Report<v1::Stats>(
            settings, answers,
            [](const v1::Stats &s) {
                return Json{{"stats", ToJson(s)}};
            },
            [](const auto &ok) {
                // The message's own fields, in .proto order, one row each.
                std::vector<std::string> header = {"stat"};
                std::vector<Json> values;
                for (const auto *answer : ok) {
                    header.push_back(answer->daemon->address());
                    values.push_back(ToJson(answer->response));
                }
                // What one-sided operations did, where the provider sees them.
                const std::set<std::string> data_plane = {"bytes_written", "bytes_read",
                                                          "remote_flushes", "bytes_persisted"};
                Table table(header);
                for (const auto &[key, unused] : values.front().items()) {
                    std::vector<std::string> cells = {key};
                    for (const Json &value : values) {
                        if (data_plane.count(key) &&
                            !value.value("data_plane_counters_available", false))
                            cells.push_back("unknown");
                        else
                            cells.push_back(value[key].is_string()
                                                ? value[key].template get<std::string>()
                                                : value[key].dump());
                    }
                    table.AddRow(cells);
                }
                table.Print();
            });
    });
}

int ConfigShow(const Settings &settings, const AdminArgs &args) {
    if (args.local) {
        // rpmactl's own resolved settings; the tokens are never shown.
        const auto &c = settings.connect;
        if (settings.json) {
            PrintJson(Json{{"servers", settings.servers},
                           {"servers_origin", settings.servers_origin},
                           {"config_file", settings.config_file},
                           {"tls", c.tls || !c.ca_file.empty() || !c.cert_file.empty()},
                           {"ca_file", c.ca_file},
                           {"cert_file", c.cert_file},
                           {"key_file", c.key_file},
                           {"admin_token", c.admin_token.empty() ? "" : "(set)"},
                           {"client_token", c.client_token.empty() ? "" : "(set)"},
                           {"timeout_seconds", c.timeout.count() / 1000.0}});
            return kExitOk;
        }
        Table table({"setting", "value"});
        std::string servers;
        for (const auto &s : settings.servers)
            servers += (servers.empty() ? "" : ",") + s;
        table.AddRow({"servers", servers + " (from " + settings.servers_origin + ")"});
        table.AddRow({"config_file", settings.config_file.empty() ? "-" : settings.config_file});
        table.AddRow(
            {"tls", c.tls || !c.ca_file.empty() || !c.cert_file.empty() ? "true" : "false"});
        table.AddRow({"ca_file", c.ca_file.empty() ? "-" : c.ca_file});
        table.AddRow({"cert_file", c.cert_file.empty() ? "-" : c.cert_file});
        table.AddRow({"key_file", c.key_file.empty() ? "-" : c.key_file});
        table.AddRow({"admin_token", c.admin_token.empty() ? "-" : "(set)"});
        table.AddRow({"client_token", c.client_token.empty() ? "-" : "(set)"});
        char seconds[32];
        snprintf(seconds, sizeof(seconds), "%g", static_cast<double>(c.timeout.count()) / 1000.0);
        table.AddRow({"timeout_seconds", seconds});
        table.Print();
        return kExitOk;
    }
    return WithDaemons(settings, [&](Daemons &daemons) {
        auto answers = AskEach<v1::EffectiveConfig>(
            daemons, [](ControlPlane &d, grpc::ClientContext *c, v1::EffectiveConfig *out) {
                return d.daemon().GetConfig(c, v1::GetConfigRequest(), out);
            });
        return Report<v1::EffectiveConfig>(
            settings, answers,
            [](const v1::EffectiveConfig &c) {
                return Json{{"config", ToJson(c)}};
            },
            [](const auto &ok) {
                for (const auto *answer : ok) {
                    printf("# %s: %s\n", answer->daemon->address().c_str(),
                           answer->response.origin().c_str());
                    const std::string &yaml = answer->response.yaml();
                    printf("%s%s", yaml.c_str(), !yaml.empty() && yaml.back() == '\n' ? "" : "\n");
                }
            });
    });
}

int HealthCheck(const Settings &settings, const AdminArgs &args) {
    return WithDaemons(settings, [&](Daemons &daemons) {
        auto answers = AskEach<HealthAnswer>(
            daemons, [&](ControlPlane &d, grpc::ClientContext *c, HealthAnswer *out) {
                return CheckHealth(d, c, args.service, out);
            });
        ExitCode code = Report<HealthAnswer>(
            settings, answers,
            [&](const HealthAnswer &h) {
                return Json{{"service", args.service}, {"status", h.status}};
            },
            [](const auto &ok) {
                Table table({"server", "status"});
                for (const auto *answer : ok)
                    table.AddRow({answer->daemon->address(), answer->response.status});
                table.Print();
            });
        // A daemon that answers but does not serve is a failure.
        for (const auto &answer : answers)
            if (answer.status.ok() && answer.response.status != "SERVING")
                code = Worse(code, kExitFailure);
        return code;
    });
}

}  // namespace

void AddAdminCommands(CLI::App &app, Run *run) {
    auto args = std::make_shared<AdminArgs>();
    auto set = [run, args](std::function<int(const Settings &, const AdminArgs &)> body) {
        return [run, args, body] {
            *run = [args, body](const Settings &s) { return body(s, *args); };
        };
    };

    CLI::App *region = app.add_subcommand("region", "create, delete, list and inspect regions");
    region->require_subcommand(1);
    CLI::App *create = region->add_subcommand(
        "create", "create region NAME of SIZE bytes on every server (needs the admin token)");
    create->add_option("NAME", args->name, "1 to 64 of [A-Za-z0-9._-]")->required();
    create->add_option("SIZE", args->size, "bytes, a multiple of 4096; suffixes KiB, MiB, GiB")
        ->required();
    create
        ->add_option("--replicas", args->replicas,
                     "cluster mode (--etcd): how many nodes hold a replica (default 3)")
        ->type_name("N");
    create->callback(set(RegionCreate));
    CLI::App *remove = region->add_subcommand(
        "delete", "delete region NAME on every server (needs the admin token)");
    remove->add_option("NAME", args->name, "the region")->required();
    remove->add_flag("--force", args->force,
                     "close the region's open sessions instead of refusing");
    remove->callback(set(RegionDelete));
    region->add_subcommand("list", "list the regions of every server")
        ->callback(set([](const Settings &s, const AdminArgs &) { return RegionList(s); }));
    CLI::App *info =
        region->add_subcommand("info", "show region NAME on every server, side by side");
    info->add_option("NAME", args->name, "the region")->required();
    info->callback(set(RegionInfo));

    CLI::App *session = app.add_subcommand("session", "list and close sessions");
    session->require_subcommand(1);
    CLI::App *list = session->add_subcommand("list", "list the open sessions of every server");
    list->add_option("--region", args->region, "only the sessions of this region");
    list->callback(set(SessionList));
    CLI::App *close = session->add_subcommand(
        "close", "close session ID, disconnecting its client (needs the admin token)");
    close->add_option("ID", args->session_id, "as session list shows it")->required();
    close->callback(set(SessionClose));

    app.add_subcommand("stats", "show every server's counters")
        ->callback(set([](const Settings &s, const AdminArgs &) { return Stats(s); }));
    CLI::App *health =
        app.add_subcommand("health", "ask every server's grpc.health.v1 service whether it serves");
    health->add_option("--service", args->service,
                       "a service's full name (default: the server as a whole)");
    health->callback(set(HealthCheck));

    CLI::App *config = app.add_subcommand("config", "show configuration");
    config->require_subcommand(1);
    CLI::App *show = config->add_subcommand(
        "show", "show every server's effective configuration (secrets redacted)");
    show->add_flag("--local", args->local,
                   "show rpmactl's own settings instead (servers, TLS, where they came from)");
    show->callback(set(ConfigShow));
}

}  // namespace rpmactl
