// One version everywhere (issue #23): what rpmad, rpmactl, GetStats, the
// pkg-config files, the manual pages and the packages' changelog say is
// version.bzl's, which the build hands to the programs as RPMA_VERSION (the
// packages' own version is checked by //packaging:debs_test against the
// same constant).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "rpma_version.h"
#include "tests/integration/process.h"
#include "tests/integration/rpmad_harness.h"

namespace rpma::testing {
namespace {

using ::testing::HasSubstr;

constexpr auto kTimeout = std::chrono::seconds(10);

std::string ReadRunfile(const std::string &path) {
    std::ifstream file(Runfile(path));
    EXPECT_TRUE(file.good()) << "cannot read " << path;
    std::stringstream text;
    text << file.rdbuf();
    return text.str();
}

// The first capture of `pattern` in `text` (multi-line), "" when none.
std::string Find(const std::string &text, const std::string &pattern) {
    std::smatch match;
    const std::regex re(pattern, std::regex::multiline);
    return std::regex_search(text, match, re) ? match[1].str() : "";
}

// What `program --version` prints.
std::string VersionOutput(const std::string &program) {
    std::string error;
    auto process = Process::Start({Runfile(program), "--version"}, {}, &error);
    if (process == nullptr)
        return error;
    auto status = process->Wait(kTimeout);
    EXPECT_TRUE(status && status->Success()) << process->Describe();
    return process->Stdout();
}

TEST(VersionTest, RpmadAndRpmactlPrintIt) {
    EXPECT_EQ(VersionOutput("daemon/rpmad"), "rpmad " RPMA_VERSION "\n");
    EXPECT_EQ(VersionOutput("client/rpmactl/rpmactl"), "rpmactl " RPMA_VERSION "\n");
}

TEST(VersionTest, GetStatsReportsIt) {
    RpmadOptions options;
    options.pool_dir = TempPath("pool");
    std::string error;
    auto rpmad = Rpmad::Start(options, &error);
    ASSERT_NE(rpmad, nullptr) << error;
    v1::Stats stats;
    const grpc::Status status = rpmad->Daemon()->GetStats(Rpmad::Context().get(), {}, &stats);
    ASSERT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(stats.version(), RPMA_VERSION);
}

TEST(VersionTest, PkgConfigFilesSayIt) {
    for (const char *pc : {"rpma_core/librpma.pc", "client/rpma-client.pc"})
        EXPECT_EQ(Find(ReadRunfile(pc), R"(^Version: (.*)$)"), RPMA_VERSION) << pc;
}

// librpma.pc is a drop-in for Debian's librpma 1.2: a program that asks for
// `librpma >= 1.2` (and < 2, the ABI of librpma.so.0) must find it.
TEST(VersionTest, LibrpmaPcStaysALibrpma1Point2OrLater) {
    const std::string version = Find(ReadRunfile("rpma_core/librpma.pc"), R"(^Version: (.*)$)");
    const std::string major = Find(version, R"(^(\d+)\.)");
    const std::string minor = Find(version, R"(^\d+\.(\d+))");
    EXPECT_EQ(major, "1") << version;
    EXPECT_GE(std::stoi(minor.empty() ? "0" : minor), 2) << version;
}

TEST(VersionTest, ManualPagesAndChangelogSayIt) {
    for (const char *page :
         {"daemon/man/rpmad.8", "daemon/man/rpmad.yaml.5", "client/rpmactl/rpmactl.1"})
        EXPECT_EQ(Find(ReadRunfile(page), R"re(^\.TH .* "rpma ([^"]*)")re"), RPMA_VERSION)
            << page << ": its .TH line names another version; make it version.bzl's";
    EXPECT_EQ(Find(ReadRunfile("packaging/changelog"), R"(^rpma \(([^)]*)\))"), RPMA_VERSION)
        << "packaging/changelog's top entry is for another version: add one for version.bzl's";
}

}  // namespace
}  // namespace rpma::testing
