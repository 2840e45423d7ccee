// The daemon's identity file: made once, durably, read back unchanged, and
// a malformed one stops the start with the file's name and the fix.
#include "daemon/daemon_id.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cerrno>
#include <filesystem>
#include <string>
#include <vector>

#include "daemon/durable_file.h"
#include "tests/unit/daemon/test_files.h"

namespace rpmad {
namespace {

using ::rpmad::testing::FreshTestDirectory;
using ::rpmad::testing::ReadFileOrEmpty;
using ::rpmad::testing::WriteFile;
using ::testing::HasSubstr;

std::vector<std::string> &Steps() {
    static std::vector<std::string> steps;
    return steps;
}

TEST(DaemonIdTest, IsCreatedDurablyOnceAndThenReused) {
    const std::string dir = FreshTestDirectory();
    Steps().clear();
    SetStepHookForTesting([](const std::string &step) {
        Steps().push_back(step);
        return 0;
    });
    auto first = LoadOrCreateDaemonId(dir);
    SetStepHookForTesting(nullptr);
    ASSERT_TRUE(first.ok()) << first.status().message();
    EXPECT_TRUE(IsDaemonId(*first)) << *first;
    EXPECT_EQ(ReadFileOrEmpty(dir + "/daemon-id"), *first + "\n");
    // Written aside, renamed into place, the directory synced.
    EXPECT_EQ(Steps(),
              (std::vector<std::string>{"write " + dir + "/daemon-id.tmp",
                                        "rename " + dir + "/daemon-id.tmp to " + dir + "/daemon-id",
                                        "sync " + dir}));
    EXPECT_FALSE(std::filesystem::exists(dir + "/daemon-id.tmp"));

    auto again = LoadOrCreateDaemonId(dir);
    ASSERT_TRUE(again.ok()) << again.status().message();
    EXPECT_EQ(*again, *first);

    // Another pool, another daemon.
    std::filesystem::create_directories(dir + "/other-pool");
    auto second = LoadOrCreateDaemonId(dir + "/other-pool");
    ASSERT_TRUE(second.ok()) << second.status().message();
    EXPECT_NE(*second, *first);
}

TEST(DaemonIdTest, AFileWithoutItsNewlineIsReadToo) {
    const std::string dir = FreshTestDirectory();
    WriteFile(dir + "/daemon-id", "00112233445566778899aabbccddeeff");
    auto id = LoadOrCreateDaemonId(dir);
    ASSERT_TRUE(id.ok()) << id.status().message();
    EXPECT_EQ(*id, "00112233445566778899aabbccddeeff");
}

TEST(DaemonIdTest, AMalformedFileIsAnErrorNamingItAndTheFix) {
    const std::string dir = FreshTestDirectory();
    for (const std::string &content :
         {std::string(""), std::string("00112233445566778899AABBCCDDEEFF\n"),
          std::string("0011223344556677\n"), std::string("00112233445566778899aabbccddeeff\n\n"),
          std::string("00112233445566778899aabbccddeeff00\n"), std::string("not an id")}) {
        WriteFile(dir + "/daemon-id", content);
        auto id = LoadOrCreateDaemonId(dir);
        ASSERT_FALSE(id.ok()) << "accepted '" << content << "'";
        EXPECT_EQ(id.status().code(), StatusCode::kFailedPrecondition);
        EXPECT_THAT(id.status().message(), HasSubstr(dir + "/daemon-id is malformed"));
        EXPECT_THAT(id.status().message(), HasSubstr("remove it"));
        // Left as it was: a person decides.
        EXPECT_EQ(ReadFileOrEmpty(dir + "/daemon-id"), content);
    }
}

TEST(DaemonIdTest, AFailedWriteIsAnErrorAndLeavesNoFile) {
    const std::string dir = FreshTestDirectory();
    SetStepHookForTesting(
        [](const std::string &step) { return step.starts_with("write ") ? ENOSPC : 0; });
    auto id = LoadOrCreateDaemonId(dir);
    SetStepHookForTesting(nullptr);
    ASSERT_FALSE(id.ok());
    EXPECT_EQ(id.status().code(), StatusCode::kResourceExhausted);
    EXPECT_THAT(id.status().message(), HasSubstr("daemon identity"));
    EXPECT_FALSE(std::filesystem::exists(dir + "/daemon-id"));
}

}  // namespace
}  // namespace rpmad
