// rpmad's command line: what it prints, the exit codes scripts rely on, and
// that flags win over the config file.
#include "daemon/command_line.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <sstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/unit/daemon/test_files.h"

namespace rpmad {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::StartsWith;

class CommandLineTest : public testing::FileTest {
  protected:
    // Runs ParseInvocation on "rpmad" followed by `args`, capturing both streams.
    Invocation Run(std::initializer_list<std::string> args) {
        std::vector<std::string> words = {"rpmad"};
        words.insert(words.end(), args.begin(), args.end());
        std::vector<const char *> argv;
        for (const std::string &word : words)
            argv.push_back(word.c_str());
        out_.str("");
        err_.str("");
        return ParseInvocation(static_cast<int>(argv.size()), argv.data(), out_, err_);
    }

    std::ostringstream out_, err_;
};

TEST_F(CommandLineTest, NoArgumentsRunsWithTheEmbeddedDefault) {
    Invocation invocation = Run({});
    EXPECT_EQ(invocation.action, Action::kRun);
    EXPECT_EQ(invocation.exit_code, 0);
    EXPECT_EQ(invocation.config, DefaultConfig());
    EXPECT_EQ(invocation.config_origin, "embedded default");
    EXPECT_THAT(err_.str(), IsEmpty());
}

TEST_F(CommandLineTest, HelpReadsLikeAManualAndExitsZero) {
    Invocation invocation = Run({"--help"});
    EXPECT_EQ(invocation.action, Action::kExit);
    EXPECT_EQ(invocation.exit_code, 0);
    std::string help = out_.str();
    EXPECT_THAT(help, StartsWith("rpmad serves persistent-memory regions"));
    for (const char *option :
         {"--config FILE", "--check-config FILE", "--listen HOST:PORT", "--data-listen HOST:PORT",
          "--provider NAME", "--pool-dir DIR", "--log-level LEVEL", "--version", "--help"}) {
        EXPECT_THAT(help, HasSubstr(option));
    }
    EXPECT_THAT(help, HasSubstr("Default: 127.0.0.1:7300"));
    EXPECT_THAT(help, HasSubstr("Default: 127.0.0.1:7301"));
    EXPECT_THAT(help, HasSubstr("Default for this user:"));
    EXPECT_THAT(help, HasSubstr(DefaultConfig().pool_dir));
    EXPECT_THAT(help, HasSubstr("rpmad.yaml(5)"));
    EXPECT_THAT(help, HasSubstr("/etc/rpmad/rpmad.yaml"));
    EXPECT_THAT(err_.str(), IsEmpty());
    // Wrapped for a terminal (a long home directory may stick out on its own).
    std::istringstream lines(help);
    for (std::string line; std::getline(lines, line);) {
        if (line.find(DefaultConfig().pool_dir) == std::string::npos) {
            EXPECT_LE(line.size(), 80u) << line;
        }
    }
}

TEST_F(CommandLineTest, VersionPrintsNameAndVersion) {
    Invocation invocation = Run({"--version"});
    EXPECT_EQ(invocation.action, Action::kExit);
    EXPECT_EQ(invocation.exit_code, 0);
    EXPECT_THAT(out_.str(), StartsWith("rpmad "));
    EXPECT_EQ(out_.str().back(), '\n');
}

TEST_F(CommandLineTest, UnknownFlagIsAUsageError) {
    Invocation invocation = Run({"--bogus"});
    EXPECT_EQ(invocation.action, Action::kExit);
    EXPECT_EQ(invocation.exit_code, 2);
    EXPECT_THAT(err_.str(),
                AllOf(StartsWith("rpmad: "), HasSubstr("--bogus"), HasSubstr("rpmad --help")));
    EXPECT_THAT(out_.str(), IsEmpty());
}

TEST_F(CommandLineTest, MissingFlagValueIsAUsageError) {
    Invocation invocation = Run({"--config"});
    EXPECT_EQ(invocation.exit_code, 2);
    EXPECT_THAT(err_.str(), HasSubstr("--config"));
}

TEST_F(CommandLineTest, BadOverrideValuesAreUsageErrorsNamingTheFlag) {
    Invocation listen = Run({"--listen", "localhost"});
    EXPECT_EQ(listen.exit_code, 2);
    EXPECT_THAT(err_.str(), StartsWith("rpmad: --listen: \"localhost\" has no port"));
    EXPECT_EQ(Run({"--data-listen", "7301"}).exit_code, 2);
    EXPECT_THAT(err_.str(), StartsWith("rpmad: --data-listen: \"7301\" has no host"));
    Invocation provider = Run({"--provider", "rdma"});
    EXPECT_EQ(provider.exit_code, 2);
    EXPECT_THAT(err_.str(), HasSubstr("--provider: \"rdma\" is not a valid value; use one of "
                                      "auto, tcp, verbs"));
    Invocation level = Run({"--log-level", "verbose"});
    EXPECT_EQ(level.exit_code, 2);
    EXPECT_THAT(err_.str(), HasSubstr("--log-level: \"verbose\""));
}

TEST_F(CommandLineTest, CheckConfigAcceptsTheShippedFile) {
    Invocation invocation = Run({"--check-config", "config/rpmad.yaml"});
    EXPECT_EQ(invocation.action, Action::kExit);
    EXPECT_EQ(invocation.exit_code, 0);
    EXPECT_EQ(out_.str(), "config/rpmad.yaml: OK\n");
    EXPECT_THAT(err_.str(), IsEmpty());
}

TEST_F(CommandLineTest, CheckConfigReportsTheKeyAndFixAndExitsOne) {
    std::string path = Write("bad.yaml", "data:\n  provider: tcp\n  listn: \"0.0.0.0:1\"\n");
    Invocation invocation = Run({"--check-config", path});
    EXPECT_EQ(invocation.action, Action::kExit);
    EXPECT_EQ(invocation.exit_code, 1);
    EXPECT_THAT(err_.str(), AllOf(StartsWith("rpmad: " + path + ":3: data.listn: unknown key"),
                                  HasSubstr("did you mean \"listen\"?")));
    EXPECT_THAT(out_.str(), IsEmpty());
}

TEST_F(CommandLineTest, CheckConfigOfAMissingFileExitsOne) {
    std::string path = (dir_ / "absent.yaml").string();
    Invocation invocation = Run({"--check-config", path});
    EXPECT_EQ(invocation.exit_code, 1);
    EXPECT_THAT(err_.str(), AllOf(HasSubstr(path), HasSubstr("No such file or directory")));
}

TEST_F(CommandLineTest, CheckConfigTakesNoOtherOption) {
    Invocation invocation = Run({"--check-config", "config/rpmad.yaml", "--listen", "a:1"});
    EXPECT_EQ(invocation.exit_code, 2);
    EXPECT_THAT(err_.str(), HasSubstr("--check-config takes no other option"));
}

TEST_F(CommandLineTest, ConfigFileIsLoaded) {
    std::string path = Write("rpmad.yaml", "limits:\n  max_sessions: 3\nlogging:\n  level: warn\n");
    Invocation invocation = Run({"-c", path});
    ASSERT_EQ(invocation.action, Action::kRun) << err_.str();
    EXPECT_EQ(invocation.config_origin, path);
    EXPECT_EQ(invocation.config.max_sessions, 3u);
    EXPECT_EQ(invocation.config.log_level, "warn");
}

TEST_F(CommandLineTest, OverridesWinOverTheFile) {
    std::string path = Write("rpmad.yaml",
                             "control:\n  listen: \"127.0.0.1:8000\"\n"
                             "data:\n  listen: \"127.0.0.1:8001\"\n  provider: verbs\n"
                             "storage:\n  pool_dir: /srv/from-file\n"
                             "logging:\n  level: error\n");
    std::string pool = (dir_ / "pool").string();
    Invocation invocation =
        Run({"--config", path, "--listen", "[::1]:9000", "--data-listen", "0.0.0.0:9001",
             "--provider", "tcp", "--pool-dir", pool, "--log-level", "trace"});
    ASSERT_EQ(invocation.action, Action::kRun) << err_.str();
    const Config &config = invocation.config;
    EXPECT_EQ(config.control_listen, "[::1]:9000");
    EXPECT_EQ(config.data_listen, "0.0.0.0:9001");
    EXPECT_EQ(config.provider, "tcp");
    EXPECT_EQ(config.pool_dir, pool);
    EXPECT_EQ(config.log_level, "trace");
}

TEST_F(CommandLineTest, RelativePoolDirFlagIsMadeAbsolute) {
    Invocation invocation = Run({"--pool-dir", "here/pool"});
    ASSERT_EQ(invocation.action, Action::kRun) << err_.str();
    EXPECT_EQ(invocation.config.pool_dir, (std::filesystem::current_path() / "here/pool").string());
}

TEST_F(CommandLineTest, OverrideThatBreaksTheConfigExitsOne) {
    // Each flag is fine alone; together with the file's data.listen they clash.
    std::string path = Write("rpmad.yaml", "data:\n  listen: \"127.0.0.1:8001\"\n");
    Invocation invocation = Run({"--config", path, "--listen", "127.0.0.1:8001"});
    EXPECT_EQ(invocation.action, Action::kExit);
    EXPECT_EQ(invocation.exit_code, 1);
    EXPECT_THAT(err_.str(), StartsWith("rpmad: " + path +
                                       " with the command line: data.listen: "
                                       "\"127.0.0.1:8001\" is also control.listen"));
}

TEST_F(CommandLineTest, BadConfigFileExitsOne) {
    std::string path = Write("rpmad.yaml", "limits:\n  max_region_size: 64GB\n");
    Invocation invocation = Run({"--config", path});
    EXPECT_EQ(invocation.exit_code, 1);
    EXPECT_THAT(err_.str(), HasSubstr(path + ":2: limits.max_region_size: \"64GB\" is ambiguous"));
}

}  // namespace
}  // namespace rpmad
