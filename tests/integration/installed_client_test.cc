// librpma_client.so.1 as a program outside this build uses it: its public
// headers copied into an include directory, the library and its link into
// a lib directory, the examples compiled there with the system's compiler
// (cc, c++ -std=c++20; no Bazel, no gRPC or protobuf headers on the include
// path) and run against three real rpmad processes on loopback. Also: what
// the library exports is its API in its version nodes, nothing more.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "tests/integration/process.h"
#include "tests/integration/rpmad_harness.h"

namespace rpma::testing {
namespace {

namespace fs = std::filesystem;

// Runs argv to its end (60 s at most); its output for the failure message.
::testing::AssertionResult RunToEnd(const std::vector<std::string> &argv, std::string *out,
                                    const std::vector<std::string> &env = {}) {
    std::string error;
    auto process = Process::Start(argv, env, &error);
    if (process == nullptr)
        return ::testing::AssertionFailure() << error;
    const auto status = process->Wait(std::chrono::seconds(60));
    *out = process->Describe();
    if (!status.has_value() || !status->Success())
        return ::testing::AssertionFailure() << *out;
    return ::testing::AssertionSuccess();
}

class InstalledClientTest : public ::testing::Test {
  protected:
    void SetUp() override {
        prefix_ = TempPath(std::string(Name()) + "-prefix");
        fs::create_directories(prefix_ + "/include/rpma/client");
        fs::create_directories(prefix_ + "/lib");
        fs::copy_file(Runfile("client/include/rpma_client.h"), prefix_ + "/include/rpma_client.h");
        for (const char *h :
             {"cluster.h", "connect_options.h", "region.h", "replica_set.h", "status.h"})
            fs::copy_file(Runfile(std::string("client/include/rpma/client/") + h),
                          prefix_ + "/include/rpma/client/" + h);
        fs::copy_file(Runfile("client/librpma_client.so.1"), prefix_ + "/lib/librpma_client.so.1");
        fs::create_symlink("librpma_client.so.1", prefix_ + "/lib/librpma_client.so");
    }

    static const char *Name() {
        return ::testing::UnitTest::GetInstance()->current_test_info()->name();
    }

    void StartThree() {
        for (size_t i = 0; i < 3; ++i) {
            RpmadOptions options;
            options.pool_dir = TempPath(std::string(Name()) + "-pool" + std::to_string(i));
            // One replica persists by GPSPM: the library mixes them.
            if (i == 1)
                options.config_yaml = "data:\n  persistence: gpspm\n";
            std::string error;
            daemons_.push_back(Rpmad::Start(options, &error));
            ASSERT_NE(daemons_.back(), nullptr) << error;
        }
    }

    // Compiles `source` against the prefix only.
    std::string Compile(const std::string &compiler, const std::vector<std::string> &flags,
                        const std::string &source) {
        const std::string exe = prefix_ + "/" + fs::path(source).stem().string();
        std::vector<std::string> argv = {compiler};
        argv.insert(argv.end(), flags.begin(), flags.end());
#if defined(__SANITIZE_ADDRESS__)
        // The installed library is instrumented as this test is (--config=asan):
        // a program loading it must carry the sanitizers' runtime first.
        argv.push_back("-fsanitize=address,undefined");
#elif defined(__SANITIZE_THREAD__)
        // The same under --config=tsan: ThreadSanitizer's runtime must be
        // the program's, initialized before the library runs, and the
        // program carries the suppressions every binary of ours does.
        argv.push_back("-fsanitize=thread");
        const std::string suppressions = prefix_ + "/tsan_suppressions.o";
        std::string built;
        EXPECT_TRUE(RunToEnd({"/usr/bin/c++", "-c", "-fsanitize=thread",
                              Runfile("tools/sanitizers/tsan_suppressions.cc"), "-o", suppressions},
                             &built));
        argv.push_back(suppressions);
#endif
        argv.insert(argv.end(),
                    {"-Wall", "-Wextra", "-Werror", "-I" + prefix_ + "/include", Runfile(source),
                     "-o", exe, "-L" + prefix_ + "/lib", "-lrpma_client"});
        std::string out;
        EXPECT_TRUE(RunToEnd(argv, &out));
        return exe;
    }

    // Runs an example built by Compile with `args` and the three daemons'
    // addresses; each replica must report `bytes` verified.
    void ExpectVerifiedOnEach(std::vector<std::string> argv, size_t bytes) {
        for (const auto &d : daemons_)
            argv.push_back(d->control());
        std::string out;
        ASSERT_TRUE(RunToEnd(argv, &out, {"LD_LIBRARY_PATH=" + prefix_ + "/lib"}));
        for (size_t r = 0; r < daemons_.size(); ++r)
            EXPECT_NE(out.find("replica " + std::to_string(r) + " (" + daemons_[r]->control() +
                               "): " + std::to_string(bytes) + " bytes verified"),
                      std::string::npos)
                << out;
    }

    std::string prefix_;
    std::vector<std::unique_ptr<Rpmad>> daemons_;
};

TEST_F(InstalledClientTest, ExportsItsApiInItsVersionNodesAndHasItsSoname) {
    std::string out;
    ASSERT_TRUE(RunToEnd({"/usr/bin/objdump", "-p", prefix_ + "/lib/librpma_client.so.1"}, &out));
    EXPECT_TRUE(std::regex_search(out, std::regex(R"(SONAME\s+librpma_client\.so\.1\n)"))) << out;
    ASSERT_TRUE(RunToEnd(
        {"/usr/bin/readelf", "--dyn-syms", "--wide", prefix_ + "/lib/librpma_client.so.1"}, &out));
    // Value Size Type Bind Vis Ndx Name: the defined ones.
    const std::regex defined(R"(^\s*\d+: [0-9a-f]+\s+\d+ (\w+)\s+(\w+)\s+\w+\s+(\d+|ABS) (\S+))");
    size_t c_api = 0, c_api_1_1 = 0, cpp_api = 0;
    std::istringstream lines(out);
    for (std::string line; std::getline(lines, line);) {
        std::smatch m;
        if (!std::regex_search(line, m, defined) || m[1] == "SECTION")
            continue;
        const std::string name = m[4];
        if (name == "RPMA_CLIENT_1.0" || name == "RPMA_CLIENT_1.1")
            continue;
        // libstdc++'s own inline instantiations (std::string's members) that
        // the library also defines: the dynamic linker binds either copy.
        if ((name.rfind("_ZNSt7__cxx1112basic_string", 0) == 0 ||
             name.rfind("_ZNKSt7__cxx1112basic_string", 0) == 0) &&
            m[2] == "WEAK")
            continue;
        // 1.1: the C calls added since (asynchronous operations, batches,
        // open_ex); a program using them needs that node to load.
        if (name.rfind("rpma_client_", 0) == 0 && name.ends_with("@@RPMA_CLIENT_1.1")) {
            ++c_api_1_1;
            continue;
        }
        ASSERT_TRUE(name.ends_with("@@RPMA_CLIENT_1.0")) << "exported outside the node: " << line;
        if (name.rfind("rpma_client_", 0) == 0)
            ++c_api;
        else if (name.rfind("_ZN4rpma6client", 0) == 0 || name.rfind("_ZNK4rpma6client", 0) == 0)
            ++cpp_api;
        else
            ADD_FAILURE() << "not the library's API: " << line;
    }
    // rpma_client.h's functions (with replica sets: open_flags,
    // replica_state, region_generation); Region's public members,
    // Status::ToString, StatusCodeName.
    EXPECT_EQ(c_api, 13u) << out;
    // open_ex, 4 *_async, poll_fd, poll, 5 batch_*, commit, commit_async.
    EXPECT_EQ(c_api_1_1, 14u) << out;
    EXPECT_GE(cpp_api, 18u) << out;
}

TEST_F(InstalledClientTest, CExampleBuiltWithTheSystemCompilerReplicatesAFile) {
    StartThree();
    const std::string exe =
        Compile("/usr/bin/cc", {"-std=c11"}, "client/examples/replicate_file.c");
    const std::string file = TempPath("input.bin");
    std::ofstream(file, std::ios::binary) << std::string(300000, 'r') << "end";
    ExpectVerifiedOnEach({exe, file, "from-installed-c"}, 300003);
}

TEST_F(InstalledClientTest, CppExampleBuiltWithTheSystemCompilerReplicatesABuffer) {
    StartThree();
    const std::string exe =
        Compile("/usr/bin/c++", {"-std=c++20"}, "client/examples/replicate_buffer.cc");
    ExpectVerifiedOnEach({exe, "from-installed-cpp"}, 1 << 20);
    // A daemon that is not there: the example says so and fails.
    std::string error;
    auto refused =
        Process::Start({exe, "from-installed-cpp", "127.0.0.1:" + std::to_string(FreePort())},
                       {"LD_LIBRARY_PATH=" + prefix_ + "/lib"}, &error);
    ASSERT_NE(refused, nullptr) << error;
    const auto status = refused->Wait(std::chrono::seconds(60));
    ASSERT_TRUE(status.has_value()) << refused->Describe();
    EXPECT_FALSE(status->Success()) << refused->Describe();
    EXPECT_NE(refused->Stderr().find("unreachable"), std::string::npos) << refused->Describe();
}

}  // namespace
}  // namespace rpma::testing
