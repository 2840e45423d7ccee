// Process keeps a child's stderr without the test reading it: a daemon that
// logs more than a pipe holds (64 KiB) while the test is busy elsewhere
// must not block in write(2). (Before, stderr was a pipe drained only while
// the test read stdout or waited; cluster_bench's daemons each blocked on
// their log after about 130 opens and stopped answering.)
#include "tests/integration/process.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <string>

namespace rpma::testing {
namespace {

TEST(ProcessTest, ChildLoggingMoreThanAPipeHoldsIsNotBlocked) {
    constexpr size_t kLogBytes = 1 << 20;
    std::string error;
    auto child = Process::Start(
        {"/bin/sh", "-c", "yes 'a log line' | head -c " + std::to_string(kLogBytes) + " >&2"}, {},
        &error);
    ASSERT_NE(child, nullptr) << error;
    // The child's end, watched without any call into Process (which would
    // read its pipes): it exits once its 1 MiB is written.
    const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, child->pid(), 0));
    ASSERT_GE(pidfd, 0);
    pollfd exited = {pidfd, POLLIN, 0};
    const int ready = poll(&exited, 1, 10000);
    close(pidfd);
    EXPECT_EQ(ready, 1) << "the child is still writing its stderr after 10 s";
    const auto status = child->Wait(std::chrono::seconds(10));
    ASSERT_TRUE(status.has_value());
    EXPECT_TRUE(status->Success()) << status->ToString();
    // All of it is kept, and read again gives the same.
    EXPECT_EQ(child->Stderr().size(), kLogBytes);
    EXPECT_EQ(child->Stderr().substr(0, 11), "a log line\n");
    EXPECT_EQ(child->Stderr().size(), kLogBytes);
}

TEST(ProcessTest, StderrGrowsWhileTheChildRuns) {
    std::string error;
    auto child =
        Process::Start({"/bin/sh", "-c", "echo first >&2; echo ready; read x"}, {}, &error);
    ASSERT_NE(child, nullptr) << error;
    ASSERT_TRUE(child->WaitForLine("ready", std::chrono::seconds(10))) << child->Describe();
    EXPECT_EQ(child->Stderr(), "first\n");
    child->Kill();
    EXPECT_NE(child->Describe().find("first\n"), std::string::npos);
}

}  // namespace
}  // namespace rpma::testing
