// rpmactl's admin subcommands end to end: the real binary run as a child
// process against real rpmad processes on loopback. Its JSON is parsed and
// compared with what the daemons say over their own control plane; each
// failure kind is checked for its exit code and its advice. The data
// commands: rpmactl_data_test.cc.
#include "tests/integration/rpmactl_fixture.h"

namespace rpma::testing {
namespace {

TEST_F(RpmactlTest, RegionSubcommandsChangeAndReportBothDaemons) {
    auto a = Start(), b = Start();
    ASSERT_TRUE(a && b);
    const auto servers = Servers({a.get(), b.get()});

    Outcome create = Run(Concat(servers, {"--admin-token-file", token_file_, "--json", "region",
                                          "create", "journal", "1MiB"}));
    ASSERT_EQ(create.code(), 0) << create.described;
    Json created = create.json();
    ASSERT_EQ(created.size(), 2u) << create.out;
    for (size_t i = 0; i < 2; ++i) {
        const Rpmad &daemon = i == 0 ? *a : *b;
        EXPECT_EQ(created[i]["server"], daemon.control());
        grpc::Status status;
        const v1::Region region = GetRegion(daemon, "journal", &status);
        ASSERT_TRUE(status.ok()) << status.error_message();
        EXPECT_EQ(created[i]["region"]["name"], "journal");
        // Protobuf's JSON mapping: 64-bit integers as strings, enums by name.
        EXPECT_EQ(created[i]["region"]["size"], "1048576");
        EXPECT_EQ(created[i]["region"]["id"], std::to_string(region.id()));
        EXPECT_EQ(created[i]["region"]["persistence"], "PERSISTENCE_APM");
        EXPECT_EQ(created[i]["region"]["healthy"], true);
    }

    // A second region on one daemon only: list shows each daemon's own.
    ASSERT_TRUE(a->CreateRegion("only-on-a", 4096, nullptr, kToken).ok());
    Outcome list = Run(Concat(servers, {"region", "list", "--json"}));
    ASSERT_EQ(list.code(), 0) << list.described;
    Json listed = list.json();
    ASSERT_EQ(listed.size(), 2u);
    for (size_t i = 0; i < 2; ++i) {
        const Rpmad &daemon = i == 0 ? *a : *b;
        v1::ListRegionsResponse expected;
        ASSERT_TRUE(daemon.Regions()
                        ->ListRegions(Rpmad::Context().get(), v1::ListRegionsRequest(), &expected)
                        .ok());
        ASSERT_EQ(listed[i]["regions"].size(), static_cast<size_t>(expected.regions_size()));
        for (int r = 0; r < expected.regions_size(); ++r) {
            EXPECT_EQ(listed[i]["regions"][r]["name"], expected.regions(r).name());
            EXPECT_EQ(listed[i]["regions"][r]["id"], std::to_string(expected.regions(r).id()));
        }
    }
    EXPECT_EQ(listed[0]["regions"].size(), 2u);
    EXPECT_EQ(listed[1]["regions"].size(), 1u);

    // The table for people: a header and one aligned row per region.
    Outcome table = Run(Concat(servers, {"region", "list"}));
    ASSERT_EQ(table.code(), 0) << table.described;
    EXPECT_EQ(table.out.rfind("SERVER", 0), 0u) << table.out;
    EXPECT_NE(table.out.find("only-on-a"), std::string::npos) << table.out;
    const size_t name_column = table.out.find("NAME");
    const size_t second_line = table.out.find('\n') + 1;
    EXPECT_EQ(table.out.substr(second_line + name_column, 7), "journal") << table.out;

    Outcome info = Run(Concat(servers, {"--json", "region", "info", "journal"}));
    ASSERT_EQ(info.code(), 0) << info.described;
    EXPECT_EQ(info.json()[1]["region"]["name"], "journal");
    EXPECT_EQ(info.json()[1]["region"]["open_sessions"], 0);
    EXPECT_EQ(info.json()[1]["region"]["persist_method"], "msync");
    EXPECT_EQ(info.json()[1]["region"]["backing"], "file");
    // For people: one row per field, the persist method among them.
    Outcome info_table = Run(Concat(servers, {"region", "info", "journal"}));
    ASSERT_EQ(info_table.code(), 0) << info_table.described;
    EXPECT_TRUE(std::regex_search(info_table.out, std::regex("\npersist method +msync +msync\n")))
        << info_table.out;
    // Nothing was written yet: the data plane's counters say 0, not unknown.
    EXPECT_TRUE(std::regex_search(info_table.out, std::regex("\nbytes written +0 B \\(0\\) +0 B")))
        << info_table.out;

    Outcome remove =
        Run(Concat(servers, {"--admin-token", kToken, "--json", "region", "delete", "journal"}));
    ASSERT_EQ(remove.code(), 0) << remove.described;
    EXPECT_EQ(remove.json()[0]["closed_sessions"], 0);
    for (const Rpmad *daemon : {a.get(), b.get()}) {
        grpc::Status status;
        GetRegion(*daemon, "journal", &status);
        EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
    }
}

TEST_F(RpmactlTest, SessionListShowsAnOpenSessionAndCloseEndsIt) {
    auto a = Start(), b = Start();
    ASSERT_TRUE(a && b);
    ASSERT_TRUE(b->CreateRegion("data", 1 << 20, nullptr, kToken).ok());
    v1::OpenSessionResponse session;
    ASSERT_TRUE(b->OpenSession("data", &session).ok());
    const auto servers = Servers({a.get(), b.get()});

    Outcome list = Run(Concat(servers, {"--json", "session", "list", "--region", "data"}));
    ASSERT_EQ(list.code(), 0) << list.described;
    Json listed = list.json();
    EXPECT_EQ(listed[0]["sessions"].size(), 0u);
    ASSERT_EQ(listed[1]["sessions"].size(), 1u) << list.out;
    EXPECT_EQ(listed[1]["sessions"][0]["session_id"], session.session_id());
    EXPECT_EQ(listed[1]["sessions"][0]["region"], "data");
    EXPECT_EQ(listed[1]["sessions"][0]["state"], "STATE_PENDING");

    // The id lives on b only; a's "not found" is no failure.
    Outcome close = Run(Concat(servers, {"--admin-token-file", token_file_, "--json", "session",
                                         "close", session.session_id()}));
    ASSERT_EQ(close.code(), 0) << close.described;
    ASSERT_EQ(close.json().size(), 1u) << close.out;
    EXPECT_EQ(close.json()[0]["server"], b->control());
    v1::ListSessionsResponse left;
    ASSERT_TRUE(
        b->Sessions()->ListSessions(Rpmad::Context().get(), v1::ListSessionsRequest(), &left).ok());
    EXPECT_EQ(left.sessions_size(), 0);

    // Now no daemon has it.
    Outcome again = Run(Concat(
        servers, {"--admin-token-file", token_file_, "session", "close", session.session_id()}));
    EXPECT_EQ(again.code(), 1) << again.described;
    EXPECT_NE(again.err.find("no daemon has session " + session.session_id()), std::string::npos)
        << again.err;
    Outcome one = Run(Concat(Servers({b.get()}), {"--admin-token-file", token_file_, "session",
                                                  "close", session.session_id()}));
    EXPECT_EQ(one.code(), 1) << one.described;
}

TEST_F(RpmactlTest, StatsHealthAndConfigShowReportEachDaemon) {
    auto a = Start(), b = Start();
    ASSERT_TRUE(a && b);
    ASSERT_TRUE(a->CreateRegion("r", 4096, nullptr, kToken).ok());
    const auto servers = Servers({a.get(), b.get()});

    Outcome stats = Run(Concat(servers, {"--json", "stats"}));
    ASSERT_EQ(stats.code(), 0) << stats.described;
    const Json stats_json = stats.json();
    for (size_t i = 0; i < 2; ++i) {
        v1::Stats expected;
        ASSERT_TRUE((i == 0 ? a : b)
                        ->Daemon()
                        ->GetStats(Rpmad::Context().get(), v1::GetStatsRequest(), &expected)
                        .ok());
        const Json &got = stats_json[i]["stats"];
        EXPECT_EQ(got["regions"], expected.regions());
        EXPECT_EQ(got["provider"], expected.provider());
        EXPECT_EQ(got["version"], expected.version());
        EXPECT_EQ(got["pool_used_bytes"], std::to_string(expected.pool_used_bytes()));
        // Zero counters are present too: field names do not come and go.
        EXPECT_TRUE(got.contains("connections_rejected")) << stats.out;
    }
    EXPECT_EQ(stats_json[0]["stats"]["regions"], 1);
    EXPECT_EQ(stats_json[1]["stats"]["regions"], 0);

    Outcome health = Run(Concat(servers, {"health", "--json"}));
    ASSERT_EQ(health.code(), 0) << health.described;
    EXPECT_EQ(health.json()[0]["status"], "SERVING");
    EXPECT_EQ(health.json()[1]["status"], "SERVING");
    Outcome unknown_service = Run(Concat(servers, {"health", "--service", "no.such.Service"}));
    EXPECT_EQ(unknown_service.code(), 1) << unknown_service.described;

    Outcome config = Run(Concat(servers, {"--json", "config", "show"}));
    ASSERT_EQ(config.code(), 0) << config.described;
    for (size_t i = 0; i < 2; ++i) {
        v1::EffectiveConfig expected;
        ASSERT_TRUE((i == 0 ? a : b)
                        ->Daemon()
                        ->GetConfig(Rpmad::Context().get(), v1::GetConfigRequest(), &expected)
                        .ok());
        EXPECT_EQ(config.json()[i]["config"]["yaml"], expected.yaml());
        EXPECT_EQ(config.json()[i]["config"]["origin"], expected.origin());
        // The admin token is redacted by the daemon, and so never shown.
        EXPECT_EQ(config.out.find(kToken), std::string::npos);
    }
}

// --- where the servers and the token come from -------------------------------

TEST_F(RpmactlTest, ServersAndTokenComeFromTheConfigFileAndTheEnvironment) {
    auto a = Start(), b = Start();
    ASSERT_TRUE(a && b);
    std::filesystem::create_directories(home_ + "/.config/rpmactl");
    std::ofstream(home_ + "/.config/rpmactl/config.yaml")
        << "servers: [" << a->control() << ", " << b->control() << "]\n"
        << "admin_token_file: " << token_file_ << "\n";

    Outcome create = Run({"--json", "region", "create", "from-config", "8KiB"});
    ASSERT_EQ(create.code(), 0) << create.described;
    for (const Rpmad *daemon : {a.get(), b.get()}) {
        grpc::Status status;
        EXPECT_EQ(GetRegion(*daemon, "from-config", &status).size(), 8192u);
        EXPECT_TRUE(status.ok()) << status.error_message();
    }

    // RPMACTL_SERVER beats the file.
    Outcome local =
        Run({"config", "show", "--local", "--json"}, {"RPMACTL_SERVER=" + b->control()});
    ASSERT_EQ(local.code(), 0) << local.described;
    EXPECT_EQ(local.json()["servers"], Json::array({b->control()}));
    EXPECT_EQ(local.json()["servers_origin"], "RPMACTL_SERVER");
    EXPECT_EQ(local.json()["admin_token"], "(set)");
    // For people: seconds as written, not "2.500000".
    Outcome table = Run({"config", "show", "--local", "--timeout", "2.5"});
    ASSERT_EQ(table.code(), 0) << table.described;
    EXPECT_NE(table.out.find("timeout_seconds  2.5\n"), std::string::npos) << table.out;
    EXPECT_NE(table.out.find("admin_token      (set)\n"), std::string::npos) << table.out;
    Outcome list = Run({"--json", "region", "list"}, {"RPMACTL_SERVER=" + b->control()});
    ASSERT_EQ(list.code(), 0) << list.described;
    ASSERT_EQ(list.json().size(), 1u);
    EXPECT_EQ(list.json()[0]["server"], b->control());
}

// --- failures: exit codes and advice -----------------------------------------

TEST_F(RpmactlTest, EachFailureKindHasItsExitCodeAndSaysWhatToDo) {
    auto a = Start();
    ASSERT_TRUE(a);
    const auto server = Servers({a.get()});

    // Usage: 2.
    for (const auto &args : std::vector<std::vector<std::string>>{
             {"region"},
             {"no-such-command"},
             {"region", "list", "--no-such-flag"},
             {"region", "create", "r", "lots"},
             {"get", "r", "12", "/dev/null", "--replica", "5"},
             {"--server", "no-port", "region", "list"},
             {"--config", home_ + "/missing.yaml", "region", "list"}}) {
        Outcome usage = Run(Concat(server, args));
        EXPECT_EQ(usage.code(), 2) << usage.described;
    }

    // Unreachable: 3, with the address and the cause.
    const std::string nowhere = "127.0.0.1:" + std::to_string(FreePort());
    Outcome unreachable = Run({"--server", nowhere, "region", "list"});
    EXPECT_EQ(unreachable.code(), 3) << unreachable.described;
    EXPECT_NE(unreachable.err.find("cannot reach rpmad at " + nowhere), std::string::npos)
        << unreachable.err;
    EXPECT_NE(unreachable.err.find("Connection refused"), std::string::npos) << unreachable.err;
    // One of two daemons down: the other still answers, the exit says 3.
    Outcome half = Run(Concat(server, {"--server", nowhere, "--json", "region", "list"}));
    EXPECT_EQ(half.code(), 3) << half.described;
    EXPECT_EQ(half.json()[0]["regions"].size(), 0u);
    EXPECT_EQ(half.json()[1]["error"]["code"], "unavailable");

    // TLS against a plaintext daemon: unreachable, and TLS named as the cause.
    Outcome tls = Run(Concat(server, {"--tls", "--timeout", "5", "region", "list"}));
    EXPECT_EQ(tls.code(), 3) << tls.described;
    EXPECT_NE(tls.err.find("TLS"), std::string::npos) << tls.err;

    // Not found: 1, with the name and where to look.
    Outcome missing = Run(Concat(server, {"region", "info", "nope"}));
    EXPECT_EQ(missing.code(), 1) << missing.described;
    EXPECT_NE(missing.err.find("nope"), std::string::npos) << missing.err;
    EXPECT_NE(missing.err.find("rpmactl region list"), std::string::npos) << missing.err;

    // Missing admin token: 1, and how to give it; nothing created.
    Outcome no_token = Run(Concat(server, {"region", "create", "r", "4096"}));
    EXPECT_EQ(no_token.code(), 1) << no_token.described;
    EXPECT_NE(no_token.err.find("--admin-token-file"), std::string::npos) << no_token.err;
    Outcome wrong_token =
        Run(Concat(server, {"--admin-token", "wrong", "region", "create", "r", "4096"}));
    EXPECT_EQ(wrong_token.code(), 1) << wrong_token.described;
    EXPECT_NE(wrong_token.err.find("admin token was refused"), std::string::npos)
        << wrong_token.err;
    grpc::Status status;
    GetRegion(*a, "r", &status);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
}

// --- TLS ----------------------------------------------------------------------

TEST_F(RpmactlTest, TlsWorksWithTheRightCaAndEachMismatchSaysTls) {
    const std::string cert = home_ + "/server.pem", key = home_ + "/server.key";
    ASSERT_EQ(SelfSignedCertificate(cert, key), "");
    RpmadOptions options;
    options.pool_dir = TempPath("pool-" + name_);
    options.config_yaml =
        "control:\n  tls:\n    cert_file: \"" + cert + "\"\n    key_file: \"" + key + "\"\n";
    std::string error;
    auto rpmad = Rpmad::Start(options, &error);
    ASSERT_NE(rpmad, nullptr) << error;
    const auto server = Servers({rpmad.get()});

    Outcome trusted = Run(Concat(server, {"--ca", cert, "--json", "health"}));
    ASSERT_EQ(trusted.code(), 0) << trusted.described;
    EXPECT_EQ(trusted.json()[0]["status"], "SERVING");

    // TLS, but the certificate is not signed by a CA the client trusts.
    Outcome untrusted = Run(Concat(server, {"--tls", "--timeout", "5", "region", "list"}));
    EXPECT_EQ(untrusted.code(), 3) << untrusted.described;
    EXPECT_NE(untrusted.err.find("TLS"), std::string::npos) << untrusted.err;
    EXPECT_NE(untrusted.err.find("--ca"), std::string::npos) << untrusted.err;
    // rpmactl's words only: gRPC's own log of the failed handshake says it
    // again in a form that tells a user nothing more.
    std::istringstream lines(untrusted.err);
    for (std::string line; std::getline(lines, line);)
        EXPECT_EQ(line.rfind("rpmactl: ", 0), 0u) << untrusted.err;

    // Plaintext against the TLS port.
    Outcome plaintext = Run(Concat(server, {"--timeout", "5", "region", "list"}));
    EXPECT_EQ(plaintext.code(), 3) << plaintext.described;
    EXPECT_NE(plaintext.err.find("--tls"), std::string::npos) << plaintext.err;

    // A CA file that is not there is a usage error, named.
    Outcome no_file = Run(Concat(server, {"--ca", home_ + "/none.pem", "region", "list"}));
    EXPECT_EQ(no_file.code(), 2) << no_file.described;
    EXPECT_NE(no_file.err.find("none.pem"), std::string::npos) << no_file.err;
}

// The lines of `text` that contain `word`.

}  // namespace
}  // namespace rpma::testing
