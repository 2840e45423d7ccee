// rpmad's configuration: the shipped file, every key, every error a person
// can make in the file and the message that tells them what to do.
#include "daemon/config.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "tests/unit/daemon/test_files.h"

namespace rpmad {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

// A fresh directory per test under Bazel's TEST_TMPDIR.
class ConfigTest : public testing::FileTest {
  protected:
    // The message of ParseConfig's error for `yaml`, read as "rpmad.yaml".
    std::string ErrorFor(const std::string &yaml) {
        StatusOr<Config> config = ParseConfig(yaml, "rpmad.yaml");
        EXPECT_FALSE(config.ok()) << "accepted:\n" << yaml;
        return config.ok() ? "" : config.status().message();
    }
};

TEST_F(ConfigTest, ShippedFileParsesToDefaultConfig) {
    // The test runs in the runfiles tree, where //config:rpmad.yaml is data.
    StatusOr<Config> shipped = LoadConfigFile("config/rpmad.yaml");
    ASSERT_TRUE(shipped.ok()) << shipped.status().message();
    // pool_dir is empty in the file, which means the same rule DefaultConfig
    // uses; the file turns the metrics on, which are off by default.
    Config expected = DefaultConfig();
    EXPECT_EQ(expected.metrics_listen, "");
    expected.metrics_listen = "127.0.0.1:9300";
    EXPECT_EQ(*shipped, expected);
    std::ifstream file("config/rpmad.yaml");
    std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    EXPECT_THAT(text, HasSubstr("pool_dir: \"\""));
}

// The dotted names of the leaf keys of a YAML mapping.
void CollectKeys(const YAML::Node &node, const std::string &prefix, std::set<std::string> *keys) {
    for (auto it = node.begin(); it != node.end(); ++it) {
        std::string path = prefix + it->first.Scalar();
        if (it->second.IsMap()) {
            CollectKeys(it->second, path + ".", keys);
        } else {
            keys->insert(path);
        }
    }
}

TEST_F(ConfigTest, ShippedFileDocumentsEveryKey) {
    std::set<std::string> shipped, known;
    CollectKeys(YAML::LoadFile("config/rpmad.yaml"), "", &shipped);
    CollectKeys(YAML::Load(RedactedYaml(DefaultConfig())), "", &known);
    EXPECT_EQ(shipped, known);
    EXPECT_EQ(known.size(), 38u);
}

TEST_F(ConfigTest, EmptyTextAndEmptySectionsKeepDefaults) {
    StatusOr<Config> empty = ParseConfig("", "empty.yaml");
    ASSERT_TRUE(empty.ok()) << empty.status().message();
    EXPECT_EQ(*empty, DefaultConfig());
    StatusOr<Config> sections = ParseConfig("control:\nlimits:\n  max_regions: 7\n", "x.yaml");
    ASSERT_TRUE(sections.ok()) << sections.status().message();
    Config expected = DefaultConfig();
    expected.max_regions = 7;
    EXPECT_EQ(*sections, expected);
}

TEST_F(ConfigTest, EveryKeyIsParsed) {
    std::string cert = Write("server.pem", "cert");
    std::string key = Write("server.key", "key");
    std::string ca = Write("ca.pem", "ca");
    std::string pool = (dir_ / "pool").string();
    StatusOr<Config> config = ParseConfig(
        "control:\n"
        "  listen: \"[::1]:9000\"\n"
        "  admin_token: s3cret\n"
        "  admin_token_file: \"\"\n"
        "  tls:\n"
        "    cert_file: " +
            cert +
            "\n"
            "    key_file: " +
            key +
            "\n"
            "    client_ca_file: " +
            ca +
            "\n"
            "    require_client_cert: true\n"
            "data:\n"
            "  listen: 0.0.0.0:9001\n"
            "  provider: verbs\n"
            "  persistence: gpspm\n"
            "storage:\n"
            "  pool_dir: " +
            pool +
            "\n"
            "  capacity: 2GiB\n"
            "limits:\n"
            "  max_regions: 3\n"
            "  max_region_size: \"1MiB\"\n"
            "  max_sessions: 5\n"
            "sessions:\n"
            "  token_ttl_seconds: 9\n"
            "logging:\n"
            "  level: debug\n"
            "  target: journal\n"
            "metrics:\n"
            "  listen: \"[::1]:9300\"\n",
        "full.yaml");
    ASSERT_TRUE(config.ok()) << config.status().message();
    EXPECT_EQ(config->control_listen, "[::1]:9000");
    EXPECT_EQ(config->admin_token, "s3cret");
    EXPECT_EQ(config->admin_token_file, "");
    EXPECT_EQ(config->tls.cert_file, cert);
    EXPECT_EQ(config->tls.key_file, key);
    EXPECT_EQ(config->tls.client_ca_file, ca);
    EXPECT_TRUE(config->tls.require_client_cert);
    EXPECT_TRUE(config->tls.enabled());
    EXPECT_EQ(config->data_listen, "0.0.0.0:9001");
    EXPECT_EQ(config->provider, "verbs");
    EXPECT_EQ(config->persistence, Persistence::kGpspm);
    EXPECT_EQ(config->pool_dir, pool);
    EXPECT_EQ(config->capacity, 2ull << 30);
    EXPECT_EQ(config->max_regions, 3u);
    EXPECT_EQ(config->max_region_size, 1ull << 20);
    EXPECT_EQ(config->max_sessions, 5u);
    EXPECT_EQ(config->token_ttl_seconds, 9u);
    EXPECT_EQ(config->log_level, "debug");
    EXPECT_EQ(config->log_target, "journal");
    EXPECT_EQ(config->metrics_listen, "[::1]:9300");
}

TEST_F(ConfigTest, TcpKnobsAreParsedAndRangeChecked) {
    StatusOr<Config> config = ParseConfig(
        "data:\n  tcp:\n    timeout_ms: 0\n    persist_threads: 8\n    inline_linger_us: 0\n",
        "t.yaml");
    ASSERT_TRUE(config.ok()) << config.status().message();
    EXPECT_EQ(config->tcp.timeout_ms, 0u);
    EXPECT_EQ(config->tcp.persist_threads, 8u);
    EXPECT_EQ(config->tcp.inline_linger_us, 0u);
    EXPECT_EQ(config->tcp.max_pending, 128u);
    for (const std::string bad : {"timeout_ms: 5", "persist_threads: 65", "max_pending: 0",
                                  "max_handshaking: 70000", "inline_linger_us: 10000001"}) {
        StatusOr<Config> wrong = ParseConfig("data:\n  tcp:\n    " + bad + "\n", "t.yaml");
        ASSERT_FALSE(wrong.ok()) << bad;
        EXPECT_NE(wrong.status().message().find("data.tcp." + bad.substr(0, bad.find(':'))),
                  std::string::npos)
            << wrong.status().message();
    }
}

TEST_F(ConfigTest, ClusterSectionIsParsedAndChecked) {
    const std::string base =
        "cluster:\n"
        "  etcd:\n"
        "    endpoints: \"http://127.0.0.1:2379,[::1]:2380\"\n"
        "  prefix: /team/\n"
        "  zone: rack-1\n"
        "  lease_ttl_seconds: 6\n"
        "  replace_after_seconds: 60\n";
    StatusOr<Config> config = ParseConfig(base, "c.yaml");
    ASSERT_TRUE(config.ok()) << config.status().message();
    EXPECT_TRUE(config->cluster.enabled());
    EXPECT_EQ(config->cluster.etcd_endpoints, "http://127.0.0.1:2379,[::1]:2380");
    EXPECT_EQ(config->cluster.prefix, "/team/");
    EXPECT_EQ(config->cluster.zone, "rack-1");
    EXPECT_EQ(config->cluster.lease_ttl_seconds, 6u);
    EXPECT_EQ(config->cluster.replace_after_seconds, 60u);
    EXPECT_TRUE(ValidateConfig(*config).ok());

    const struct {
        std::string extra, key;
    } bad[] = {
        {"  prefix: rpma\n", "cluster.prefix"},
        {"  lease_ttl_seconds: 1\n", "cluster.lease_ttl_seconds"},
        {"  replace_after_seconds: 2\n", "cluster.replace_after_seconds"},
        {"  advertise_control: \"0.0.0.0:7300\"\n", "cluster.advertise_control"},
    };
    for (const auto &b : bad) {
        StatusOr<Config> wrong = ParseConfig(base + b.extra, "c.yaml");
        ASSERT_FALSE(wrong.ok()) << b.extra;
        EXPECT_NE(wrong.status().message().find(b.key), std::string::npos)
            << wrong.status().message();
    }
    StatusOr<Config> endpoint =
        ParseConfig("cluster:\n  etcd:\n    endpoints: etcd-without-port\n", "c.yaml");
    ASSERT_FALSE(endpoint.ok());
    EXPECT_NE(endpoint.status().message().find("cluster.etcd.endpoints"), std::string::npos);
    // A node listening on every address must say where clients reach it.
    StatusOr<Config> wildcard = ParseConfig(base + "data:\n  listen: 0.0.0.0:7301\n", "c.yaml");
    ASSERT_FALSE(wildcard.ok());
    EXPECT_NE(wildcard.status().message().find("cluster.advertise_data"), std::string::npos)
        << wildcard.status().message();
}

TEST_F(ConfigTest, AdminTokenIsReadFromTheFirstLineOfItsFile) {
    std::string token_file = Write("token", "  tok-123 \t\nsecond line\n");
    StatusOr<Config> config =
        ParseConfig("control:\n  admin_token_file: " + token_file + "\n", "t.yaml");
    ASSERT_TRUE(config.ok()) << config.status().message();
    EXPECT_EQ(config->admin_token, "tok-123");
    EXPECT_EQ(config->admin_token_file, token_file);
    EXPECT_TRUE(ValidateConfig(*config).ok());
}

TEST_F(ConfigTest, ClientTokensAreNamedLinesOfTheirFileAndSessionQuotasAreCounts) {
    std::string tokens = Write("clients", "# who may open sessions\n\nalice  t-a\n\tbob t-b \n");
    StatusOr<Config> config = ParseConfig("sessions:\n  client_tokens_file: " + tokens +
                                              "\n  max_per_identity: 8\n"
                                              "  max_pending_per_peer: 2\n",
                                          "t.yaml");
    ASSERT_TRUE(config.ok()) << config.status().message();
    EXPECT_EQ(config->client_tokens, (std::vector<ClientToken>{{"alice", "t-a"}, {"bob", "t-b"}}));
    EXPECT_EQ(config->max_sessions_per_identity, 8u);
    EXPECT_EQ(config->max_pending_per_peer, 2u);
    // The tokens stay in their file: the effective config names the file only.
    const std::string shown = RedactedYaml(*config);
    EXPECT_THAT(shown, AllOf(HasSubstr(tokens), Not(HasSubstr("t-a")), Not(HasSubstr("t-b"))));
    StatusOr<Config> again = ParseConfig(shown, "shown.yaml");
    ASSERT_TRUE(again.ok()) << again.status().message();
    EXPECT_EQ(*again, *config);
}

TEST_F(ConfigTest, AMalformedClientTokensFileNamesTheKeyAndTheLine) {
    const struct {
        std::string text, expected;
    } cases[] = {
        {"alice\n", "line 1: expected NAME TOKEN"},
        {"alice t-a extra\n", "line 1: expected NAME TOKEN"},
        {"alice t-a\nalice t-b\n", "line 2: the name \"alice\" is given twice"},
        {"alice t-a\nbob t-a\n", "line 2: the token of \"bob\" is also \"alice\"'s"},
        {"# nobody\n\n", "holds no token"},
    };
    for (const auto &c : cases) {
        std::string file = Write("clients", c.text);
        std::string message = ErrorFor("sessions:\n  client_tokens_file: " + file + "\n");
        EXPECT_THAT(message, AllOf(StartsWith("rpmad.yaml:2: sessions.client_tokens_file"),
                                   HasSubstr(c.expected)))
            << c.text;
    }
    EXPECT_THAT(ErrorFor("sessions:\n  client_tokens_file: /nonexistent/clients\n"),
                HasSubstr("sessions.client_tokens_file: cannot read"));
}

TEST_F(ConfigTest, RelativePoolDirIsMadeAbsolute) {
    StatusOr<Config> config = ParseConfig("storage:\n  pool_dir: pool/./a/\n", "p.yaml");
    ASSERT_TRUE(config.ok()) << config.status().message();
    EXPECT_EQ(config->pool_dir, (std::filesystem::current_path() / "pool/a").string());
}

TEST_F(ConfigTest, UnknownTopLevelKeyNamesLineKeyAndSuggestion) {
    std::string message = ErrorFor("logging:\n  level: info\ncontrl:\n  listen: x\n");
    EXPECT_THAT(message, StartsWith("rpmad.yaml:3: contrl: unknown key"));
    EXPECT_THAT(message, HasSubstr("did you mean \"control\"?"));
    EXPECT_THAT(message, HasSubstr("control, data, storage, limits, sessions, logging"));
}

TEST_F(ConfigTest, UnknownNestedKeyNamesTheDottedKey) {
    std::string message = ErrorFor(
        "control:\n"
        "  listen: \"127.0.0.1:7300\"\n"
        "  tls:\n"
        "    cert: a.pem\n");
    EXPECT_THAT(message, StartsWith("rpmad.yaml:4: control.tls.cert: unknown key"));
    EXPECT_THAT(message, HasSubstr("cert_file, key_file, client_ca_file, require_client_cert"));
}

TEST_F(ConfigTest, KeyGivenTwiceIsAnError) {
    std::string message = ErrorFor("limits:\n  max_regions: 1\n  max_regions: 2\n");
    EXPECT_THAT(message, StartsWith("rpmad.yaml:3: limits.max_regions: given twice (first on line "
                                    "2)"));
}

TEST_F(ConfigTest, StringsThatAreNotUtf8AreErrors) {
    for (const char *bad : {"/tmp/r\xbcpool", "/tmp/\xc0\xafx", "/tmp/\xed\xa0\x80",
                            "/tmp/\xf4\x90\x80\x80", "/tmp/\xe2\x82"})
        EXPECT_THAT(ErrorFor(std::string("storage:\n  pool_dir: \"") + bad + "\"\n"),
                    StartsWith("rpmad.yaml:2: storage.pool_dir: not valid UTF-8"))
            << bad;
    auto config = ParseConfig("storage:\n  pool_dir: /tmp/p\xc3\xa4\xe2\x82\xac\xf0\x9f\x98\x80\n",
                              "rpmad.yaml");
    ASSERT_TRUE(config.ok()) << config.status().message();
    EXPECT_EQ(config->pool_dir, "/tmp/p\xc3\xa4\xe2\x82\xac\xf0\x9f\x98\x80");
}

TEST_F(ConfigTest, WrongTypesAreErrors) {
    EXPECT_THAT(ErrorFor("limits:\n  max_regions: many\n"),
                StartsWith("rpmad.yaml:2: limits.max_regions: expected a whole number"));
    EXPECT_THAT(ErrorFor("limits:\n  max_sessions: -1\n"),
                StartsWith("rpmad.yaml:2: limits.max_sessions: expected a whole number"));
    EXPECT_THAT(ErrorFor("limits:\n  max_sessions: 4294967296\n"),
                HasSubstr("limits.max_sessions: expected a whole number from 0 to 4294967295"));
    EXPECT_THAT(ErrorFor("control:\n  tls:\n    require_client_cert: maybe\n"),
                StartsWith("rpmad.yaml:3: control.tls.require_client_cert: expected true or "
                           "false, got \"maybe\""));
    EXPECT_THAT(ErrorFor("control:\n  listen: [a, b]\n"),
                StartsWith("rpmad.yaml:2: control.listen: expected a string"));
    EXPECT_THAT(ErrorFor("control: 5\n"),
                AllOf(StartsWith("rpmad.yaml:1: control: expected a mapping of listen, "
                                 "admin_token, admin_token_file, tls, got \"5\""),
                      HasSubstr("indent its keys")));
    EXPECT_THAT(ErrorFor("- a\n- b\n"), HasSubstr("the top level: expected a mapping of control"));
    EXPECT_THAT(ErrorFor("data:\n  persistence: [apm]\n"),
                StartsWith("rpmad.yaml:2: data.persistence: expected one of auto, apm, gpspm, "
                           "got a list"));
    EXPECT_THAT(ErrorFor("data:\n  persistence: fast\n"),
                StartsWith("rpmad.yaml:2: data.persistence: \"fast\" is not a valid value; use "
                           "one of auto, apm, gpspm"));
}

TEST_F(ConfigTest, BadSizesNameTheKeyAndTheFix) {
    EXPECT_THAT(ErrorFor("limits:\n  max_region_size: 64MB\n"),
                AllOf(StartsWith("rpmad.yaml:2: limits.max_region_size: \"64MB\" is ambiguous"),
                      HasSubstr("write \"64MiB\"")));
    EXPECT_THAT(ErrorFor("storage:\n  capacity: 3 parsecs\n"),
                AllOf(StartsWith("rpmad.yaml:2: storage.capacity: \"3 parsecs\" has an unknown "
                                 "unit"),
                      HasSubstr("KiB, MiB, GiB or TiB")));
    EXPECT_THAT(ErrorFor("storage:\n  capacity: lots\n"),
                StartsWith("rpmad.yaml:2: storage.capacity: \"lots\" is not a size"));
}

TEST_F(ConfigTest, BadChoicesListTheAllowedValues) {
    EXPECT_THAT(ErrorFor("logging:\n  level: loud\n"),
                StartsWith("rpmad.yaml:2: logging.level: \"loud\" is not a valid value; use one "
                           "of trace, debug, info, warn, error, critical, off"));
    EXPECT_THAT(ErrorFor("logging:\n  level: debgu\n"), HasSubstr("did you mean \"debug\"?"));
    EXPECT_THAT(ErrorFor("logging:\n  target: syslog\n"),
                StartsWith("rpmad.yaml:2: logging.target: \"syslog\" is not a valid value; use "
                           "one of auto, stderr, journal"));
    EXPECT_THAT(ErrorFor("# provider\ndata:\n  provider: rdma\n"),
                StartsWith("rpmad.yaml:3: data.provider: \"rdma\" is not a valid value; use one "
                           "of auto, tcp, verbs"));
}

TEST_F(ConfigTest, BadListenAddressesShowTheForm) {
    EXPECT_THAT(ErrorFor("control:\n  listen: localhost\n"),
                AllOf(StartsWith("rpmad.yaml:2: control.listen: \"localhost\" has no port"),
                      HasSubstr("\"[::1]:7300\"")));
    EXPECT_THAT(ErrorFor("data:\n  listen: \"::1:7301\"\n"),
                StartsWith("rpmad.yaml:2: data.listen: \"::1:7301\" is an IPv6 address without "
                           "brackets"));
    EXPECT_THAT(ErrorFor("data:\n  listen: \"127.0.0.1:70000\"\n"),
                HasSubstr("data.listen: \"127.0.0.1:70000\" has no port number from 0 to 65535"));
    EXPECT_THAT(ErrorFor("data:\n  listen: \"127.0.0.1:7300\"\n"),
                StartsWith("rpmad.yaml:2: data.listen: \"127.0.0.1:7300\" is also "
                           "control.listen"));
    EXPECT_THAT(ErrorFor("metrics:\n  listen: \"127.0.0.1\"\n"),
                StartsWith("rpmad.yaml:2: metrics.listen: \"127.0.0.1\" has no port"));
    EXPECT_THAT(ErrorFor("metrics:\n  listen: \"127.0.0.1:7301\"\n"),
                StartsWith("rpmad.yaml:2: metrics.listen: \"127.0.0.1:7301\" is also "
                           "data.listen"));
}

TEST_F(ConfigTest, HalfConfiguredTlsIsRefused) {
    std::string cert = Write("server.pem", "cert");
    EXPECT_THAT(ErrorFor("control:\n  tls:\n    cert_file: " + cert + "\n"),
                StartsWith("rpmad.yaml:3: control.tls.key_file: empty while "
                           "control.tls.cert_file is set; give both"));
    EXPECT_THAT(ErrorFor("control:\n  tls:\n    require_client_cert: true\n"),
                StartsWith("rpmad.yaml:3: control.tls.require_client_cert: true needs "
                           "control.tls.client_ca_file"));
    std::string ca = Write("ca.pem", "ca");
    EXPECT_THAT(ErrorFor("control:\n  tls:\n    client_ca_file: " + ca + "\n"),
                HasSubstr("control.tls.client_ca_file: client certificates need TLS"));
    std::string missing = (dir_ / "missing.key").string();
    EXPECT_THAT(
        ErrorFor("control:\n  tls:\n    cert_file: " + cert + "\n    key_file: " + missing + "\n"),
        StartsWith("rpmad.yaml:4: control.tls.key_file: cannot read \"" + missing +
                   "\": No such file or directory"));
}

TEST_F(ConfigTest, UnreadableOrEmptyTokenFileIsRefused) {
    std::string missing = (dir_ / "no-token").string();
    StatusOr<Config> config =
        ParseConfig("control:\n  admin_token_file: " + missing + "\n", "rpmad.yaml");
    ASSERT_FALSE(config.ok());
    EXPECT_EQ(config.status().code(), StatusCode::kNotFound);
    EXPECT_THAT(config.status().message(),
                StartsWith("rpmad.yaml:2: control.admin_token_file: cannot read \"" + missing +
                           "\": No such file or directory"));
    // A directory opens but cannot be read; tests run as root, so a mode
    // of 000 would not stop them.
    EXPECT_THAT(ErrorFor("control:\n  admin_token_file: " + dir_.string() + "\n"),
                HasSubstr("Is a directory"));
    std::string blank = Write("blank", "\n\nlater\n");
    EXPECT_THAT(ErrorFor("control:\n  admin_token_file: " + blank + "\n"),
                HasSubstr("holds no token on its first line"));
}

TEST_F(ConfigTest, BothTokenFormsAreRefused) {
    std::string token_file = Write("token", "abc\n");
    EXPECT_THAT(ErrorFor("control:\n  admin_token: abc\n  admin_token_file: " + token_file + "\n"),
                StartsWith("rpmad.yaml:3: control.admin_token_file: set together with "
                           "control.admin_token; give the token in one of them"));
    Config config = DefaultConfig();
    config.admin_token = "other";
    config.admin_token_file = token_file;
    EXPECT_THAT(ValidateConfig(config).message(),
                StartsWith("control.admin_token: set together with control.admin_token_file"));
    EXPECT_FALSE(ResolveAdminToken(&config).ok());
}

TEST_F(ConfigTest, YamlSyntaxErrorNamesTheLine) {
    EXPECT_THAT(ErrorFor("logging:\n  level: info\n  target: auto: stderr\n"),
                StartsWith("rpmad.yaml:3: not valid YAML: illegal map value; check the "
                           "indentation and quoting"));
    EXPECT_THAT(ErrorFor("control:\n  listen: a\n  - x\n"),
                StartsWith("rpmad.yaml:3: not valid YAML"));
}

TEST_F(ConfigTest, LoadConfigFileReportsAMissingFile) {
    std::string path = (dir_ / "nope.yaml").string();
    StatusOr<Config> config = LoadConfigFile(path);
    ASSERT_FALSE(config.ok());
    EXPECT_EQ(config.status().code(), StatusCode::kNotFound);
    EXPECT_THAT(config.status().message(), HasSubstr(path));
    EXPECT_THAT(config.status().message(), HasSubstr("No such file or directory"));
}

TEST_F(ConfigTest, LoadConfigFileNamesTheFileInErrors) {
    std::string path = Write("bad.yaml", "logging:\n  levle: info\n");
    StatusOr<Config> config = LoadConfigFile(path);
    ASSERT_FALSE(config.ok());
    EXPECT_THAT(config.status().message(),
                AllOf(StartsWith(path + ":2: logging.levle: unknown key"),
                      HasSubstr("did you mean \"level\"?")));
}

TEST_F(ConfigTest, ValidateConfigChecksLimitsAndPoolDir) {
    EXPECT_TRUE(ValidateConfig(DefaultConfig()).ok());
    Config config = DefaultConfig();
    config.max_region_size = 4095;
    EXPECT_THAT(ValidateConfig(config).message(),
                StartsWith("limits.max_region_size: 4095 is too small"));
    config = DefaultConfig();
    config.max_regions = 0;
    EXPECT_THAT(ValidateConfig(config).message(), StartsWith("limits.max_regions: 0 is too small"));
    config = DefaultConfig();
    config.token_ttl_seconds = 0;
    EXPECT_THAT(ValidateConfig(config).message(), StartsWith("sessions.token_ttl_seconds: 0"));
    config = DefaultConfig();
    config.pool_dir = "relative";
    EXPECT_THAT(ValidateConfig(config).message(),
                StartsWith("storage.pool_dir: \"relative\" is not an absolute path"));
    // The same rule reads with the file's line when the value came from a file.
    EXPECT_THAT(ErrorFor("limits:\n  max_region_size: 1KiB\n"),
                StartsWith("rpmad.yaml:2: limits.max_region_size: 1024 is too small"));
}

TEST_F(ConfigTest, ValidateConfigWantsTheTokenFileRead) {
    Config config = DefaultConfig();
    config.admin_token_file = Write("token", "abc\n");
    Status status = ValidateConfig(config);
    EXPECT_EQ(status.code(), StatusCode::kFailedPrecondition);
    ASSERT_TRUE(ResolveAdminToken(&config).ok());
    EXPECT_EQ(config.admin_token, "abc");
    EXPECT_TRUE(ValidateConfig(config).ok());
}

// The syntax itself is rpma::util's (tests/unit/util); what is pinned here
// is that rpmad's errors name the key.
TEST(SplitHostPortTest, RefusesAnythingElseNamingTheKey) {
    for (const char *text : {"", "7300", ":7300", "host:", "host:http", "[::1]7300", "[::1:7300",
                             "[]:7300", "::1:7300", "host:-1", "host:65536"}) {
        StatusOr<HostPort> split = SplitHostPort(text, "control.listen");
        ASSERT_FALSE(split.ok()) << text;
        EXPECT_THAT(split.status().message(), StartsWith("control.listen: \"" + std::string(text)));
        EXPECT_THAT(split.status().message(), HasSubstr("write host:port"));
    }
}

TEST(DefaultPoolDirTest, RootUsesVarLib) {
    EXPECT_EQ(DefaultPoolDirFor(0, "/xdg", "/home/u"), "/var/lib/rpmad");
}

TEST(DefaultPoolDirTest, UserUsesXdgDataHomeThenHome) {
    EXPECT_EQ(DefaultPoolDirFor(1000, "/xdg/data/", "/home/u"), "/xdg/data/rpmad");
    EXPECT_EQ(DefaultPoolDirFor(1000, nullptr, "/home/u"), "/home/u/.local/share/rpmad");
    // The XDG spec: a relative XDG_DATA_HOME is ignored.
    EXPECT_EQ(DefaultPoolDirFor(1000, "relative", "/home/u"), "/home/u/.local/share/rpmad");
}

TEST(DefaultPoolDirTest, ReadsTheEnvironment) {
    const char *home = std::getenv("HOME");
    std::string saved_home = home != nullptr ? home : "";
    ASSERT_EQ(setenv("XDG_DATA_HOME", "/env/xdg", 1), 0);
    ASSERT_EQ(setenv("HOME", "/env/home", 1), 0);
    std::string expected = geteuid() == 0 ? "/var/lib/rpmad" : "/env/xdg/rpmad";
    EXPECT_EQ(DefaultPoolDir(), expected);
    EXPECT_EQ(DefaultConfig().pool_dir, expected);
    ASSERT_EQ(unsetenv("XDG_DATA_HOME"), 0);
    EXPECT_EQ(DefaultPoolDir(), geteuid() == 0 ? "/var/lib/rpmad" : "/env/home/.local/share/rpmad");
    if (home != nullptr) {
        setenv("HOME", saved_home.c_str(), 1);
    } else {
        unsetenv("HOME");
    }
}

TEST_F(ConfigTest, RedactedYamlHidesTheTokenAndParsesBack) {
    std::string cert = Write("server.pem", "cert");
    std::string key = Write("server.key", "key");
    Config config = DefaultConfig();
    config.admin_token = "very-secret-token";
    config.tls.cert_file = cert;
    config.tls.key_file = key;
    config.persistence = Persistence::kApm;
    config.capacity = 1000;
    config.max_region_size = 1ull << 30;
    ASSERT_TRUE(ValidateConfig(config).ok());

    std::string yaml = RedactedYaml(config);
    EXPECT_THAT(yaml, Not(HasSubstr("very-secret-token")));
    EXPECT_THAT(yaml, HasSubstr("admin_token: \"<redacted>\""));
    EXPECT_THAT(yaml, HasSubstr("key_file: \"" + key + "\""));
    EXPECT_THAT(yaml, HasSubstr("max_region_size: \"1GiB\""));

    StatusOr<Config> reparsed = ParseConfig(yaml, "redacted");
    ASSERT_TRUE(reparsed.ok()) << reparsed.status().message() << "\n" << yaml;
    Config expected = config;
    expected.admin_token = "<redacted>";
    EXPECT_EQ(*reparsed, expected);
}

TEST_F(ConfigTest, RedactedYamlOfATokenFileShowsOnlyThePath) {
    Config config = DefaultConfig();
    config.admin_token_file = Write("token", "file-secret\n");
    ASSERT_TRUE(ResolveAdminToken(&config).ok());
    std::string yaml = RedactedYaml(config);
    EXPECT_THAT(yaml, Not(HasSubstr("file-secret")));
    EXPECT_THAT(yaml, HasSubstr(config.admin_token_file));
    StatusOr<Config> reparsed = ParseConfig(yaml, "redacted");
    ASSERT_TRUE(reparsed.ok()) << reparsed.status().message() << "\n" << yaml;
    EXPECT_EQ(*reparsed, config);
}

TEST(RedactedYamlTest, ChoicesAreWrittenBareAndRoundTrip) {
    Config config = DefaultConfig();
    config.log_level = "off";
    config.provider = "tcp";
    config.persistence = Persistence::kGpspm;
    std::string yaml = RedactedYaml(config);
    EXPECT_THAT(yaml, HasSubstr("  level: off\n"));
    EXPECT_THAT(yaml, HasSubstr("  provider: tcp\n"));
    EXPECT_THAT(yaml, HasSubstr("  persistence: gpspm\n"));
    StatusOr<Config> reparsed = ParseConfig(yaml, "redacted");
    ASSERT_TRUE(reparsed.ok()) << reparsed.status().message();
    EXPECT_EQ(*reparsed, config);
}

// ---- storage.devdax_regions --------------------------------------------------

TEST_F(ConfigTest, DevdaxRegionsAreParsedWithTheirDefaults) {
    StatusOr<Config> config = ParseConfig(
        "storage:\n"
        "  devdax_regions:\n"
        "    - {name: journal, path: /dev/dax0.0, size: 1GiB}\n"
        "    - name: tables\n"
        "      path: /dev/dax0.0\n"
        "      offset: \"1GiB\"\n"
        "    - {name: whole, path: /dev/dax1.0}\n",
        "rpmad.yaml");
    ASSERT_TRUE(config.ok()) << config.status().message();
    const std::vector<DevdaxRegionConfig> expected = {
        {"journal", "/dev/dax0.0", 0, 1ull << 30},
        {"tables", "/dev/dax0.0", 1ull << 30, 0},
        {"whole", "/dev/dax1.0", 0, 0},
    };
    EXPECT_EQ(config->devdax_regions, expected);
    StatusOr<Config> none = ParseConfig("storage:\n  devdax_regions:\n", "rpmad.yaml");
    ASSERT_TRUE(none.ok()) << none.status().message();
    EXPECT_TRUE(none->devdax_regions.empty());
}

TEST_F(ConfigTest, BadDevdaxRegionsNameTheEntryAndTheFix) {
    EXPECT_THAT(ErrorFor("storage:\n  devdax_regions: /dev/dax0.0\n"),
                StartsWith("rpmad.yaml:2: storage.devdax_regions: expected a list of regions, "
                           "each {name, path, offset, size}, got \"/dev/dax0.0\""));
    EXPECT_THAT(ErrorFor("storage:\n  devdax_regions:\n    - /dev/dax0.0\n"),
                StartsWith("rpmad.yaml:3: storage.devdax_regions[0]: expected a mapping"));
    EXPECT_THAT(
        ErrorFor("storage:\n  devdax_regions:\n    - {name: a, path: /dev/dax0.0, sise: 4KiB}\n"),
        AllOf(StartsWith("rpmad.yaml:3: storage.devdax_regions[0].sise: unknown key; did you "
                         "mean \"size\"?"),
              HasSubstr("name, path, offset and size")));
    EXPECT_THAT(
        ErrorFor("storage:\n  devdax_regions:\n    - {name: a, path: /dev/dax0.0, size: 1GB}\n"),
        StartsWith("rpmad.yaml:3: storage.devdax_regions[0].size: \"1GB\" is ambiguous"));
    EXPECT_THAT(ErrorFor("storage:\n  devdax_regions:\n    - {path: /dev/dax0.0}\n"),
                AllOf(StartsWith("rpmad.yaml:2: storage.devdax_regions[0].name: missing"),
                      HasSubstr("needs a name")));
    EXPECT_THAT(ErrorFor("storage:\n  devdax_regions:\n    - {name: a, path: dax0.0}\n"),
                AllOf(HasSubstr("storage.devdax_regions[0].path: \"dax0.0\" is not an absolute "
                                "path"),
                      HasSubstr("/dev/dax0.0")));
    EXPECT_THAT(ErrorFor("storage:\n  devdax_regions:\n"
                         "    - {name: a, path: /dev/dax0.0, size: 2MiB}\n"
                         "    - {name: a, path: /dev/dax0.0, offset: 2MiB}\n"),
                HasSubstr("storage.devdax_regions[1].name: \"a\" is also the name of "
                          "storage.devdax_regions[0]; give each region its own"));
    Config config = DefaultConfig();
    config.devdax_regions = {{"a", "relative", 0, 0}};
    EXPECT_THAT(ValidateConfig(config).message(),
                HasSubstr("storage.devdax_regions[0].path: \"relative\" is not an absolute path"));
}

TEST(RedactedYamlTest, DevdaxRegionsRoundTrip) {
    Config config = DefaultConfig();
    config.devdax_regions = {{"journal", "/dev/dax0.0", 0, 1ull << 30},
                             {"tables", "/dev/dax0.0", 1ull << 30, 12345 * 4096}};
    std::string yaml = RedactedYaml(config);
    EXPECT_THAT(yaml, HasSubstr("name: \"journal\""));
    EXPECT_THAT(yaml, HasSubstr("offset: \"1GiB\""));
    StatusOr<Config> reparsed = ParseConfig(yaml, "redacted");
    ASSERT_TRUE(reparsed.ok()) << reparsed.status().message() << "\n" << yaml;
    EXPECT_EQ(*reparsed, config);
    EXPECT_THAT(RedactedYaml(DefaultConfig()), HasSubstr("devdax_regions: []"));
}

TEST(RedactedYamlTest, DefaultConfigRoundTrips) {
    StatusOr<Config> reparsed = ParseConfig(RedactedYaml(DefaultConfig()), "default");
    ASSERT_TRUE(reparsed.ok()) << reparsed.status().message();
    EXPECT_EQ(*reparsed, DefaultConfig());
}

}  // namespace
}  // namespace rpmad
