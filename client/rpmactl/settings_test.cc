#include "client/rpmactl/settings.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

#include <gtest/gtest.h>

namespace rpmactl {
namespace {

using rpma::client::StatusCode;

class SettingsTest : public ::testing::Test {
  protected:
    void SetUp() override {
        dir_ = std::filesystem::path(getenv("TEST_TMPDIR")) /
               ::testing::UnitTest::GetInstance()->current_test_info()->name();
        std::filesystem::remove_all(dir_);
        std::filesystem::create_directories(dir_ / ".config/rpmactl");
        env_["HOME"] = dir_.string();
    }

    std::string Write(const std::string &relative, const std::string &text) {
        const auto path = dir_ / relative;
        std::ofstream(path) << text;
        return path.string();
    }

    rpma::client::Result<Settings> Resolve(const Flags &flags) {
        return ResolveSettings(flags, [this](const char *name) -> const char * {
            auto it = env_.find(name);
            return it == env_.end() ? nullptr : it->second.c_str();
        });
    }

    std::filesystem::path dir_;
    std::map<std::string, std::string> env_;
};

TEST_F(SettingsTest, DefaultsToTheLocalDaemonWithoutTls) {
    auto settings = Resolve(Flags());
    ASSERT_TRUE(settings.ok()) << settings.status().ToString();
    EXPECT_EQ(settings->servers, std::vector<std::string>{"127.0.0.1:7300"});
    EXPECT_EQ(settings->servers_origin, "default");
    EXPECT_FALSE(settings->connect.tls);
    EXPECT_EQ(settings->connect.admin_token, "");
    EXPECT_EQ(settings->connect.timeout, std::chrono::seconds(10));
}

TEST_F(SettingsTest, FlagsBeatTheEnvironmentWhichBeatsTheFile) {
    Write(".config/rpmactl/config.yaml", "servers: [10.0.0.1:7300, 10.0.0.2:7300]\n");
    auto from_file = Resolve(Flags());
    ASSERT_TRUE(from_file.ok()) << from_file.status().ToString();
    EXPECT_EQ(from_file->servers, (std::vector<std::string>{"10.0.0.1:7300", "10.0.0.2:7300"}));

    env_["RPMACTL_SERVER"] = "10.0.0.3:7300,10.0.0.4:7300";
    auto from_env = Resolve(Flags());
    ASSERT_TRUE(from_env.ok());
    EXPECT_EQ(from_env->servers, (std::vector<std::string>{"10.0.0.3:7300", "10.0.0.4:7300"}));
    EXPECT_EQ(from_env->servers_origin, "RPMACTL_SERVER");

    Flags flags;
    flags.servers = {"10.0.0.5:7300"};
    auto from_flags = Resolve(flags);
    ASSERT_TRUE(from_flags.ok());
    EXPECT_EQ(from_flags->servers, std::vector<std::string>{"10.0.0.5:7300"});
}

TEST_F(SettingsTest, XdgConfigHomeIsWhereTheFileIsLookedFor) {
    std::filesystem::create_directories(dir_ / "xdg/rpmactl");
    Write("xdg/rpmactl/config.yaml", "servers: 10.1.1.1:7300\n");
    env_["XDG_CONFIG_HOME"] = (dir_ / "xdg").string();
    auto settings = Resolve(Flags());
    ASSERT_TRUE(settings.ok()) << settings.status().ToString();
    EXPECT_EQ(settings->servers, std::vector<std::string>{"10.1.1.1:7300"});
}

TEST_F(SettingsTest, FileSetsTlsTimeoutAndTokenFileRelativeToItself) {
    Write("token", "  s3cret \nsecond line\n");
    const std::string config = Write("rpmactl.yaml",
                                     "tls: true\nca_file: ca.pem\n"
                                     "admin_token_file: token\ntimeout_seconds: 2.5\n");
    Flags flags;
    flags.config_file = config;
    auto settings = Resolve(flags);
    ASSERT_TRUE(settings.ok()) << settings.status().ToString();
    EXPECT_TRUE(settings->connect.tls);
    EXPECT_EQ(settings->connect.ca_file, (dir_ / "ca.pem").string());
    EXPECT_EQ(settings->connect.admin_token, "s3cret");
    EXPECT_EQ(settings->connect.timeout, std::chrono::milliseconds(2500));
    EXPECT_EQ(settings->config_file, config);
}

TEST_F(SettingsTest, TheFileSetsEtcdWhichTheEnvironmentAndFlagsOverride) {
    const std::string config = Write("rpmactl.yaml",
                                     "etcd: [10.0.0.1:2379, 10.0.0.2:2379]\n"
                                     "etcd_ca_file: ca.pem\ncluster_prefix: /other/\n");
    Flags flags;
    flags.config_file = config;
    auto from_file = Resolve(flags);
    ASSERT_TRUE(from_file.ok()) << from_file.status().ToString();
    EXPECT_EQ(from_file->cluster.endpoints, "10.0.0.1:2379,10.0.0.2:2379");
    EXPECT_EQ(from_file->cluster.ca_file, (dir_ / "ca.pem").string());
    EXPECT_EQ(from_file->cluster.prefix, "/other/");

    env_["RPMACTL_ETCD"] = "10.0.0.3:2379";
    auto from_env = Resolve(flags);
    ASSERT_TRUE(from_env.ok());
    EXPECT_EQ(from_env->cluster.endpoints, "10.0.0.3:2379");

    flags.etcd = "10.0.0.4:2379";
    flags.cluster_prefix = "/mine/";
    auto from_flags = Resolve(flags);
    ASSERT_TRUE(from_flags.ok());
    EXPECT_EQ(from_flags->cluster.endpoints, "10.0.0.4:2379");
    EXPECT_EQ(from_flags->cluster.prefix, "/mine/");

    flags.config_file = Write("bad.yaml", "cluster_prefix: [a, b]\n");
    auto wrong = Resolve(flags);
    ASSERT_FALSE(wrong.ok());
    EXPECT_NE(wrong.status().message().find("'cluster_prefix'"), std::string::npos)
        << wrong.status().message();
}

TEST_F(SettingsTest, UnknownKeysAndWrongTypesNameTheKey) {
    Flags flags;
    flags.config_file = Write("bad.yaml", "server: 1.2.3.4:7300\n");
    auto unknown = Resolve(flags);
    ASSERT_FALSE(unknown.ok());
    EXPECT_EQ(unknown.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(unknown.status().message().find("unknown key 'server'"), std::string::npos)
        << unknown.status().message();

    flags.config_file = Write("bad2.yaml", "tls: maybe\n");
    auto wrong = Resolve(flags);
    ASSERT_FALSE(wrong.ok());
    EXPECT_NE(wrong.status().message().find("'tls'"), std::string::npos)
        << wrong.status().message();
}

TEST_F(SettingsTest, AnExplicitConfigFileMustExist) {
    Flags flags;
    flags.config_file = (dir_ / "missing.yaml").string();
    auto settings = Resolve(flags);
    ASSERT_FALSE(settings.ok());
    EXPECT_NE(settings.status().message().find("cannot be read"), std::string::npos);
}

TEST_F(SettingsTest, ServersMustBeHostPortAndDistinct) {
    Flags flags;
    flags.servers = {"localhost"};
    EXPECT_FALSE(Resolve(flags).ok());
    // An IPv6 literal needs its brackets: its last colon is not the port's.
    flags.servers = {"[::1]:7300"};
    EXPECT_TRUE(Resolve(flags).ok());
    flags.servers = {"::1:7300"};
    auto bare = Resolve(flags);
    ASSERT_FALSE(bare.ok());
    EXPECT_NE(bare.status().message().find("IPv6 address without brackets"), std::string::npos)
        << bare.status().message();
    flags.servers = {"127.0.0.1:7300", "127.0.0.1:7300"};
    auto twice = Resolve(flags);
    ASSERT_FALSE(twice.ok());
    EXPECT_NE(twice.status().message().find("given twice"), std::string::npos);
}

TEST_F(SettingsTest, TokenAndTokenFileTogetherAreRefusedAndAnEmptyTokenFileToo) {
    Flags flags;
    flags.admin_token = "a";
    flags.admin_token_file = Write("token", "b\n");
    EXPECT_FALSE(Resolve(flags).ok());
    flags.admin_token.clear();
    flags.admin_token_file = Write("empty", "\n");
    auto empty = Resolve(flags);
    ASSERT_FALSE(empty.ok());
    EXPECT_NE(empty.status().message().find("holds no token"), std::string::npos);
}

TEST_F(SettingsTest, TheClientTokenComesFromItsFlagElseTheFileAndIsNamedInErrors) {
    Write("client-token", " from-file \n");
    Flags flags;
    flags.config_file = Write("rpmactl.yaml", "client_token_file: client-token\n");
    auto settings = Resolve(flags);
    ASSERT_TRUE(settings.ok()) << settings.status().ToString();
    EXPECT_EQ(settings->connect.client_token, "from-file");
    EXPECT_EQ(settings->connect.admin_token, "");
    flags.client_token_file = Write("flag-token", "from-flag\n");
    settings = Resolve(flags);
    ASSERT_TRUE(settings.ok()) << settings.status().ToString();
    EXPECT_EQ(settings->connect.client_token, "from-flag");
    flags.client_token_file = Write("empty", "\n");
    auto empty = Resolve(flags);
    ASSERT_FALSE(empty.ok());
    EXPECT_NE(empty.status().message().find("client token file"), std::string::npos)
        << empty.status().message();
}

}  // namespace
}  // namespace rpmactl
