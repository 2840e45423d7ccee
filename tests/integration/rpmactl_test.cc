// rpmactl end to end: the real binary run as a child process against real
// rpmad processes on loopback. Its JSON is parsed and compared with what the
// daemons say over their own control plane; each failure kind is checked
// for its exit code and its advice; put/get/verify replicate a file to three
// daemons and find a replica corrupted behind the client library's back.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include <gtest/gtest.h>

#include "tests/integration/rpmad_harness.h"

namespace rpma::testing {
namespace {

using Json = nlohmann::json;
constexpr char kToken[] = "rpmactl-test-token";
constexpr auto kRunTimeout = std::chrono::seconds(60);

struct Outcome {
    ExitStatus status;
    std::string out;
    std::string err;
    std::string described;

    int code() const { return status.exited ? status.code : -1; }
    // stdout as JSON (discarded: a parse error fails the expectation).
    Json json() const {
        Json value = Json::parse(out, nullptr, /*allow_exceptions=*/false);
        EXPECT_FALSE(value.is_discarded()) << "not JSON: " << described;
        return value;
    }
};

class RpmactlTest : public ::testing::Test {
  protected:
    void SetUp() override {
        name_ = ::testing::UnitTest::GetInstance()->current_test_info()->name();
        home_ = TempPath("home-" + name_);
        std::filesystem::create_directories(home_);
        token_file_ = home_ + "/admin-token";
        std::ofstream(token_file_) << kToken << "\n";
    }

    // A daemon with the admin token (when `with_token`), on a pool of its own.
    std::unique_ptr<Rpmad> Start(bool with_token = true) {
        RpmadOptions options;
        options.pool_dir = TempPath("pool-" + name_ + "-" + std::to_string(started_++));
        if (with_token)
            options.config_yaml = std::string("control:\n  admin_token: \"") + kToken + "\"\n";
        std::string error;
        auto rpmad = Rpmad::Start(options, &error);
        EXPECT_NE(rpmad, nullptr) << error;
        return rpmad;
    }

    // rpmactl with `args`, in a HOME of the test's (no config file unless the
    // test writes one) and `env` added.
    Outcome Run(const std::vector<std::string> &args, std::vector<std::string> env = {}) {
        std::vector<std::string> argv = {Runfile("client/rpmactl/rpmactl")};
        argv.insert(argv.end(), args.begin(), args.end());
        for (std::string fixed :
             {"HOME=" + home_, std::string("XDG_CONFIG_HOME="), std::string("RPMACTL_SERVER=")}) {
            const std::string name = fixed.substr(0, fixed.find('=') + 1);
            if (std::none_of(env.begin(), env.end(),
                             [&](const std::string &e) { return e.rfind(name, 0) == 0; }))
                env.push_back(fixed);
        }
        std::string error;
        auto process = Process::Start(argv, env, &error);
        Outcome outcome;
        if (process == nullptr) {
            ADD_FAILURE() << error;
            return outcome;
        }
        auto status = process->Wait(kRunTimeout);
        if (!status) {
            ADD_FAILURE() << "rpmactl did not finish: " << process->Describe();
            status = process->Kill();
        }
        outcome.status = *status;
        outcome.out = process->Stdout();
        outcome.err = process->Stderr();
        outcome.described = process->Describe();
        return outcome;
    }

    // --server for each daemon.
    static std::vector<std::string> Servers(const std::vector<const Rpmad *> &daemons) {
        std::vector<std::string> args;
        for (const Rpmad *d : daemons)
            args.insert(args.end(), {"--server", d->control()});
        return args;
    }

    static std::vector<std::string> Concat(std::vector<std::string> a,
                                           const std::vector<std::string> &b) {
        a.insert(a.end(), b.begin(), b.end());
        return a;
    }

    std::string name_;
    std::string home_;
    std::string token_file_;
    int started_ = 0;
};

v1::Region GetRegion(const Rpmad &rpmad, const std::string &name, grpc::Status *status) {
    v1::GetRegionRequest request;
    request.set_name(name);
    v1::Region region;
    *status = rpmad.Regions()->GetRegion(Rpmad::Context().get(), request, &region);
    return region;
}

// --- the admin subcommands against two live daemons --------------------------

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

// A self-signed certificate for 127.0.0.1, its own CA; "" or openssl's output.
std::string SelfSignedCertificate(const std::string &cert, const std::string &key) {
    std::string error;
    auto openssl =
        Process::Start({"/usr/bin/openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                        "ec_paramgen_curve:P-256", "-nodes", "-keyout", key, "-out", cert, "-days",
                        "2", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"},
                       {}, &error);
    if (openssl == nullptr)
        return error + " (is openssl installed? tools/install-deps.sh)";
    const auto status = openssl->Wait(std::chrono::seconds(30));
    return status && status->Success() ? "" : openssl->Describe();
}

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
size_t LinesWith(const std::string &text, const std::string &word) {
    size_t count = 0;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
        count += line.find(word) != std::string::npos;
    return count;
}

// put, get and verify open the region through the client library; a
// daemon's refusal reaches the user with the same advice as an admin
// command's (TLS, the admin token, an unreachable address), once per server.
TEST_F(RpmactlTest, DataCommandsSayWhatToDoOncePerServer) {
    const std::string cert = home_ + "/server.pem", key = home_ + "/server.key";
    ASSERT_EQ(SelfSignedCertificate(cert, key), "");
    RpmadOptions options;
    options.pool_dir = TempPath("pool-" + name_);
    options.config_yaml = std::string("control:\n  admin_token: \"") + kToken +
                          "\"\n  tls:\n    cert_file: \"" + cert + "\"\n    key_file: \"" + key +
                          "\"\n";
    std::string error;
    auto secure = Rpmad::Start(options, &error);
    ASSERT_NE(secure, nullptr) << error;
    auto plain = Start();
    ASSERT_NE(plain, nullptr);
    const std::string file = home_ + "/input";
    std::ofstream(file) << std::string(10000, 'x');

    // Plaintext against the TLS port: TLS named, and the flag that fixes it.
    Outcome plaintext =
        Run(Concat(Servers({secure.get()}), {"--timeout", "5", "put", file, "r", "--create"}));
    EXPECT_EQ(plaintext.code(), 3) << plaintext.described;
    EXPECT_NE(plaintext.err.find("--tls"), std::string::npos) << plaintext.err;
    EXPECT_EQ(LinesWith(plaintext.err, secure->control()), 1u) << plaintext.err;
    // TLS with a CA that did not sign the daemon's certificate.
    Outcome untrusted = Run(Concat(Servers({secure.get()}), {"--tls", "--timeout", "5", "verify",
                                                             "r", "--server", plain->control()}));
    EXPECT_EQ(untrusted.code(), 3) << untrusted.described;
    EXPECT_NE(untrusted.err.find("--ca"), std::string::npos) << untrusted.err;
    // --create without the admin token: how to give it.
    Outcome no_token = Run(Concat(Servers({plain.get()}), {"put", file, "r", "--create"}));
    EXPECT_EQ(no_token.code(), 1) << no_token.described;
    EXPECT_NE(no_token.err.find("--admin-token-file"), std::string::npos) << no_token.err;
    EXPECT_EQ(LinesWith(no_token.err, plain->control()), 1u) << no_token.err;
    // One server down among two: its address and what to check, once.
    const std::string nowhere = "127.0.0.1:" + std::to_string(FreePort());
    Outcome down = Run(Concat(Servers({plain.get()}), {"--server", nowhere, "--admin-token-file",
                                                       token_file_, "put", file, "r", "--create"}));
    EXPECT_EQ(down.code(), 3) << down.described;
    EXPECT_NE(down.err.find("check that rpmad runs"), std::string::npos) << down.err;
    EXPECT_EQ(LinesWith(down.err, nowhere), 1u) << down.err;
    EXPECT_EQ(LinesWith(down.err, plain->control()), 0u) << down.err;
}

// --- the data plane: put, get, verify on three replicas ----------------------

TEST_F(RpmactlTest, PutReplicatesAFileGetReadsItBackFromEachAndVerifyFindsCorruption) {
    std::vector<std::unique_ptr<Rpmad>> daemons;
    for (int i = 0; i < 3; ++i) {
        daemons.push_back(Start(/*with_token=*/false));
        ASSERT_NE(daemons.back(), nullptr);
    }
    const auto servers = Servers({daemons[0].get(), daemons[1].get(), daemons[2].get()});
    // Three and a bit chunks, so that the last one is partial.
    const auto bytes = Pattern((3 << 20) + 12345, 3);
    const std::string file = home_ + "/input";
    std::ofstream(file, std::ios::binary)
        .write(reinterpret_cast<const char *>(bytes.data()),
               static_cast<std::streamsize>(bytes.size()));

    Outcome put = Run(Concat(servers, {"--json", "put", file, "replicated", "--size", "4MiB"}));
    ASSERT_EQ(put.code(), 0) << put.described;
    // Held: a loop over put.json()["replicas"] would read a destroyed
    // temporary (json() parses a new one each call).
    const Json put_json = put.json();
    EXPECT_EQ(put_json["bytes"], bytes.size());
    ASSERT_EQ(put_json["replicas"].size(), 3u);
    for (const Json &replica : put_json["replicas"])
        EXPECT_EQ(replica["state"], "live") << put.out;
    // Not a terminal: progress comes as plain lines on stderr.
    EXPECT_NE(put.err.find("(100%)"), std::string::npos) << put.err;
    EXPECT_EQ(put.err.find('\r'), std::string::npos);

    for (int r = 0; r < 3; ++r) {
        const std::string out = home_ + "/output" + std::to_string(r);
        Outcome get = Run(Concat(servers, {"get", "replicated", std::to_string(bytes.size()), out,
                                           "--replica", std::to_string(r)}));
        ASSERT_EQ(get.code(), 0) << get.described;
        std::ifstream in(out, std::ios::binary);
        std::vector<char> read((std::istreambuf_iterator<char>(in)),
                               std::istreambuf_iterator<char>());
        ASSERT_EQ(read.size(), bytes.size()) << "replica " << r;
        EXPECT_EQ(memcmp(read.data(), bytes.data(), bytes.size()), 0) << "replica " << r;
    }

    // region info shows what the data plane did on each replica: the file
    // written once and read back once.
    Outcome info = Run(Concat(servers, {"region", "info", "replicated"}));
    ASSERT_EQ(info.code(), 0) << info.described;
    for (const char *row : {"bytes written ", "bytes read "}) {
        const size_t at = info.out.find(row);
        ASSERT_NE(at, std::string::npos) << row << "\n" << info.out;
        const std::string line = info.out.substr(at, info.out.find('\n', at) - at);
        const std::string exact = "(" + std::to_string(bytes.size()) + ")";
        size_t replicas = 0;
        for (size_t p = line.find(exact); p != std::string::npos; p = line.find(exact, p + 1))
            ++replicas;
        EXPECT_EQ(replicas, 3u) << line;
    }

    // get --json: one object, the server read from among the replicas.
    Outcome got = Run(Concat(servers, {"--json", "get", "replicated:4096", "100",
                                       home_ + "/json-out", "--replica", "2"}));
    ASSERT_EQ(got.code(), 0) << got.described;
    EXPECT_EQ(got.json()["region"], "replicated");
    EXPECT_EQ(got.json()["offset"], 4096);
    EXPECT_EQ(got.json()["bytes"], 100);
    // Every replica is opened (read-only), to tell which are in sync; the
    // one read from is named.
    ASSERT_EQ(got.json()["replicas"].size(), 3u) << got.out;
    EXPECT_EQ(got.json()["replica"], 2);
    EXPECT_EQ(got.json()["server"], daemons[2]->control());

    // An offset: the second half lands where asked.
    Outcome at_offset = Run(Concat(servers, {"put", file, "replicated:65536"}));
    ASSERT_EQ(at_offset.code(), 0) << at_offset.described;
    Outcome get_back = Run(Concat(servers, {"get", "replicated:65536", "4096", home_ + "/at"}));
    ASSERT_EQ(get_back.code(), 0) << get_back.described;
    std::ifstream at(home_ + "/at", std::ios::binary);
    std::vector<char> head((std::istreambuf_iterator<char>(at)), std::istreambuf_iterator<char>());
    ASSERT_EQ(head.size(), 4096u);
    EXPECT_EQ(memcmp(head.data(), bytes.data(), 4096), 0);

    Outcome same = Run(Concat(servers, {"--json", "verify", "replicated"}));
    ASSERT_EQ(same.code(), 0) << same.described;
    EXPECT_EQ(same.json()["identical"], true);
    EXPECT_EQ(same.json()["ranges"].size(), 0u);

    // Corrupt replica 1 behind the library's back: a session of its own.
    constexpr uint64_t kCorruptAt = (2 << 20) + 100;
    const auto garbage = Pattern(300, 200);
    {
        v1::OpenSessionResponse session;
        ASSERT_TRUE(daemons[1]->OpenSession("replicated", &session).ok());
        rpma_conn_event event;
        auto client = SessionClient::Connect(session, &event);
        ASSERT_NE(client, nullptr) << rpma_utils_conn_event_2str(event);
        ASSERT_EQ(client->Write(kCorruptAt, garbage), IBV_WC_SUCCESS);
        ASSERT_EQ(client->Flush(kCorruptAt, garbage.size()), IBV_WC_SUCCESS);
        EXPECT_TRUE(client->Disconnect());
    }
    // The garbage bytes that differ from what put wrote.
    std::vector<std::byte> written(bytes.size() + 65536);
    std::copy(bytes.begin(), bytes.begin() + 65536, written.begin());
    std::copy(bytes.begin(), bytes.end(), written.begin() + 65536);
    uint64_t differing = 0;
    for (uint64_t i = 0; i < garbage.size(); ++i)
        differing += garbage[i] != written[kCorruptAt + i];
    ASSERT_NE(differing, 0u);

    // The daemons' 1 MiB extent checksums: the extent that holds the
    // garbage, replica 1 against the other two.
    Outcome differ = Run(Concat(servers, {"--json", "verify", "replicated"}));
    EXPECT_EQ(differ.code(), 1) << differ.described;
    Json report = differ.json();
    EXPECT_EQ(report["identical"], false);
    ASSERT_EQ(report["ranges"].size(), 1u) << differ.out;
    EXPECT_EQ(report["ranges"][0]["offset"], 2 << 20);
    EXPECT_EQ(report["ranges"][0]["length"], 1 << 20);
    EXPECT_EQ(report["ranges"][0]["differing"], Json::array({1}));
    EXPECT_EQ(report["ranges"][0]["agreeing"], Json::array({0, 2}));
    EXPECT_EQ(report["ranges"][0]["differing_bytes"][0]["bytes"], differing) << differ.out;
    EXPECT_EQ(report["replicas"][1]["server"], daemons[1]->control());

    Outcome table = Run(Concat(servers, {"verify", "replicated"}));
    EXPECT_EQ(table.code(), 1) << table.described;
    EXPECT_NE(table.out.find("[2 MiB, 3 MiB)"), std::string::npos) << table.out;
    EXPECT_NE(table.out.find("replica 1 (" + daemons[1]->control() + ")"), std::string::npos)
        << table.out;
}

// With --quorum 2 of 3 and one daemon gone, put still makes the file
// durable on the other two, names the failed replica, and exits 1 so that a
// script knows a resync is due.
// A daemon that wants a client token to open sessions: put and get pass
// --client-token-file's token on OpenSession (and the admin token on
// CreateRegion); without it the refusal says which flag gives it.
TEST_F(RpmactlTest, DataCommandsPassTheClientTokenAndWithoutItSayHowToGiveIt) {
    const std::string clients = home_ + "/clients";
    std::ofstream(clients) << "backup t-backup\n";
    const std::string client_token = home_ + "/client-token";
    std::ofstream(client_token) << "t-backup\n";
    RpmadOptions options;
    options.pool_dir = TempPath("pool-" + name_);
    options.config_yaml = std::string("control:\n  admin_token: \"") + kToken +
                          "\"\nsessions:\n  client_tokens_file: " + clients + "\n";
    std::string error;
    auto rpmad = Rpmad::Start(options, &error);
    ASSERT_NE(rpmad, nullptr) << error;
    const auto servers = Servers({rpmad.get()});
    const auto bytes = Pattern(10000, 7);
    const std::string file = home_ + "/input";
    std::ofstream(file, std::ios::binary)
        .write(reinterpret_cast<const char *>(bytes.data()),
               static_cast<std::streamsize>(bytes.size()));

    Outcome put = Run(Concat(servers, {"--admin-token-file", token_file_, "--client-token-file",
                                       client_token, "put", file, "r", "--size", "1MiB"}));
    ASSERT_EQ(put.code(), 0) << put.described;

    const std::string out = home_ + "/output";
    Outcome refused = Run(Concat(servers, {"get", "r", std::to_string(bytes.size()), out}));
    EXPECT_NE(refused.code(), 0) << refused.described;
    EXPECT_NE(refused.err.find("--client-token-file"), std::string::npos) << refused.err;

    Outcome get = Run(Concat(servers, {"--client-token-file", client_token, "get", "r",
                                       std::to_string(bytes.size()), out}));
    ASSERT_EQ(get.code(), 0) << get.described;
    std::ifstream in(out, std::ios::binary);
    std::vector<char> read((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ASSERT_EQ(read.size(), bytes.size());
    EXPECT_EQ(memcmp(read.data(), bytes.data(), bytes.size()), 0);
}

TEST_F(RpmactlTest, PutWithAQuorumReportsADeadReplicaAndStillReplicates) {
    std::vector<std::unique_ptr<Rpmad>> daemons;
    for (int i = 0; i < 3; ++i) {
        daemons.push_back(Start(/*with_token=*/false));
        ASSERT_NE(daemons.back(), nullptr);
    }
    for (const auto &daemon : daemons)
        ASSERT_TRUE(daemon->CreateRegion("q", 1 << 20).ok());
    const auto servers = Servers({daemons[0].get(), daemons[1].get(), daemons[2].get()});
    daemons[2]->process().Kill();

    const auto bytes = Pattern(100000, 9);
    const std::string file = home_ + "/input";
    std::ofstream(file, std::ios::binary)
        .write(reinterpret_cast<const char *>(bytes.data()),
               static_cast<std::streamsize>(bytes.size()));
    Outcome put = Run(Concat(servers, {"--json", "put", file, "q", "--quorum", "2"}));
    EXPECT_EQ(put.code(), 1) << put.described;
    const Json report = put.json();
    ASSERT_EQ(report["replicas"].size(), 3u) << put.out;
    EXPECT_EQ(report["replicas"][0]["state"], "live");
    EXPECT_EQ(report["replicas"][1]["state"], "live");
    // Not reached when the put opened the region: stale (recorded so).
    EXPECT_EQ(report["replicas"][2]["state"], "stale") << put.out;
    EXPECT_NE(report["replicas"][2]["error"].get<std::string>().find(daemons[2]->control()),
              std::string::npos)
        << put.out;
    EXPECT_NE(put.err.find(daemons[2]->control()), std::string::npos) << put.err;

    for (int r = 0; r < 2; ++r) {
        const std::string out = home_ + "/out" + std::to_string(r);
        Outcome get = Run(Concat(servers, {"get", "q", std::to_string(bytes.size()), out,
                                           "--replica", std::to_string(r)}));
        ASSERT_EQ(get.code(), 0) << get.described;
        std::ifstream in(out, std::ios::binary);
        std::vector<char> read((std::istreambuf_iterator<char>(in)),
                               std::istreambuf_iterator<char>());
        ASSERT_EQ(read.size(), bytes.size());
        EXPECT_EQ(memcmp(read.data(), bytes.data(), bytes.size()), 0) << "replica " << r;
    }
    // Without the quorum, all three must answer: the put fails as unreachable.
    Outcome all = Run(Concat(servers, {"put", file, "q"}));
    EXPECT_EQ(all.code(), 3) << all.described;
}

TEST_F(RpmactlTest, PutOfAnUnknownRegionSaysHowToCreateItAndAFileThatDoesNotFitIsRefused) {
    auto a = Start(/*with_token=*/false);
    ASSERT_TRUE(a);
    const std::string file = home_ + "/small";
    std::ofstream(file) << std::string(10000, 'x');
    Outcome unknown = Run(Concat(Servers({a.get()}), {"put", file, "absent"}));
    EXPECT_EQ(unknown.code(), 1) << unknown.described;
    EXPECT_NE(unknown.err.find("absent"), std::string::npos) << unknown.err;
    EXPECT_NE(unknown.err.find("--create"), std::string::npos) << unknown.err;

    ASSERT_TRUE(a->CreateRegion("tiny", 4096).ok());
    Outcome too_big = Run(Concat(Servers({a.get()}), {"put", file, "tiny"}));
    EXPECT_EQ(too_big.code(), 1) << too_big.described;
    EXPECT_NE(too_big.err.find("does not fit"), std::string::npos) << too_big.err;
}

// bench measures with 1, 2, ... up to every server (issue #11: "1..N
// replicas"), in the table, the CSV and the JSON.
TEST_F(RpmactlTest, BenchMeasuresEachReplicaCountAndWritesACsvThatPlotShReads) {
    auto a = Start(/*with_token=*/false), b = Start(/*with_token=*/false),
         c = Start(/*with_token=*/false);
    ASSERT_TRUE(a && b && c);
    const auto servers = Servers({a.get(), b.get(), c.get()});
    const std::vector<std::string> small = {"bench",   "--iterations",  "20",
                                            "--sizes", "64,4KiB",       "--stream",
                                            "4MiB",    "--region-size", "4MiB"};
    const std::string csv = home_ + "/bench.csv";
    Outcome bench = Run(Concat(Concat(servers, small), {"--csv", csv}));
    ASSERT_EQ(bench.code(), 0) << bench.described;
    for (const char *column : {"1 REPLICA ", "2 REPLICAS", "3 REPLICAS"})
        EXPECT_NE(bench.out.find(column), std::string::npos) << column << "\n" << bench.out;
    EXPECT_NE(bench.out.find("write+persist (us)  4.0 KiB"), std::string::npos) << bench.out;
    std::ifstream in(csv);
    std::string line;
    std::vector<std::string> lines;
    while (std::getline(in, line))
        lines.push_back(line);
    ASSERT_EQ(lines.size(), 4u);
    // bench/plot.sh reads the write_flush_latency rows: size, then two
    // median/p99 pairs (the whole set, one replica); the counts between
    // follow the ratio.
    EXPECT_EQ(lines[0],
              "workload,size,replicated,replicated_p99,single,single_p99,ratio,replicas_2,"
              "replicas_2_p99");
    EXPECT_EQ(lines[1].rfind("write_flush_latency,64,", 0), 0u) << lines[1];
    EXPECT_EQ(lines[2].rfind("write_flush_latency,4096,", 0), 0u) << lines[2];
    EXPECT_EQ(std::count(lines[2].begin(), lines[2].end(), ','), 8) << lines[2];
    EXPECT_EQ(lines[3].rfind("stream_bandwidth,1048576,", 0), 0u) << lines[3];
    EXPECT_EQ(std::count(lines[3].begin(), lines[3].end(), ','), 8) << lines[3];
    // And it plots, each replica count a series of its own.
    std::string error;
    auto plot = Process::Start({"/bin/bash", Runfile("bench/plot.sh"), csv, home_ + "/bench.png"},
                               {}, &error);
    ASSERT_NE(plot, nullptr) << error;
    auto plotted = plot->Wait(kRunTimeout);
    ASSERT_TRUE(plotted && plotted->Success()) << plot->Describe();
    for (const char *series :
         {"series: all replicas\n", "series: 1 replica\n", "series: 2 replicas\n", "wrote "})
        EXPECT_NE(plot->Stdout().find(series), std::string::npos) << series << plot->Describe();

    Outcome json = Run(Concat(Concat(servers, small), {"--json"}));
    ASSERT_EQ(json.code(), 0) << json.described;
    std::map<std::pair<std::string, uint64_t>, std::vector<size_t>> counts;
    const Json report = json.json();
    for (const Json &result : report["results"])
        counts[{result["workload"].get<std::string>(), result["size"].get<uint64_t>()}].push_back(
            result["replicas"].get<size_t>());
    const std::vector<size_t> each = {1, 2, 3};
    EXPECT_EQ((counts[{"write_persist_latency", 64}]), each) << json.out;
    EXPECT_EQ((counts[{"write_persist_latency", 4096}]), each) << json.out;
    EXPECT_EQ((counts[{"stream_bandwidth", 1 << 20}]), each) << json.out;
    // The region bench created is gone again.
    for (const Rpmad *daemon : {a.get(), b.get(), c.get()}) {
        grpc::Status status;
        GetRegion(*daemon, "rpmactl-bench", &status);
        EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
    }

    // --depth keeps that many write + persists outstanding (issue #25) and
    // reports latency and IOPS at that depth for each replica count.
    Outcome deep = Run(Concat(Concat(servers, small), {"--depth", "4"}));
    ASSERT_EQ(deep.code(), 0) << deep.described;
    EXPECT_NE(deep.out.find("depth 4,"), std::string::npos) << deep.out;
    EXPECT_NE(deep.out.find("write+persist (us)  4.0 KiB"), std::string::npos) << deep.out;
    EXPECT_NE(deep.out.find("write+persist IOPS  4.0 KiB"), std::string::npos) << deep.out;
    Outcome deep_json = Run(Concat(Concat(servers, small), {"--depth", "4", "--json"}));
    ASSERT_EQ(deep_json.code(), 0) << deep_json.described;
    // Kept: a range-for over a member of the temporary json() would outlive it.
    const Json parsed = deep_json.json();
    EXPECT_EQ(parsed["depth"].get<int>(), 4) << deep_json.out;
    for (const Json &result : parsed["results"]) {
        if (result["workload"] == "write_persist_latency") {
            EXPECT_GT(result["iops"].get<double>(), 0) << deep_json.out;
        }
    }
    Outcome zero = Run(Concat(Concat(servers, small), {"--depth", "0"}));
    EXPECT_EQ(zero.code(), 2) << zero.described;
    EXPECT_NE(zero.err.find("--depth"), std::string::npos) << zero.err;
}

}  // namespace
}  // namespace rpma::testing
