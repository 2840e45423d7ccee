// Remote access violations across processes: a client writing where the server's region
// does not allow it gets IBV_WC_REM_ACCESS_ERR, and the server -- which checks its whole
// buffer, registered page and the unregistered page after it -- finds not one byte changed.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <infiniband/verbs.h>

#include <string>

#include "tests/integration/process.h"
#include "tests/integration/process_expectations.h"

namespace rpma::testing {
namespace {

using ::testing::HasSubstr;

const std::string kAddr = "127.0.0.1";

std::string Program(const std::string &name) {
    return Runfile("tests/integration/" + name);
}

std::string CompletionLine(ibv_wc_status status) {
    return "completion: status=" + std::to_string(static_cast<int>(status)) + " ";
}

// Runs "fault_server guarded <mode>" against "fault_client violate <kind>".
struct Outcome {
    std::string client_stdout;
    std::string server_stdout;
    bool server_succeeded = false;
};

Outcome RunViolation(const std::string &region_mode, const std::string &kind) {
    Outcome outcome;
    std::string port = std::to_string(FreePort());
    auto server = StartServer({Program("fault_server"), "guarded", kAddr, port, region_mode});
    if (server == nullptr)
        return outcome;
    auto client = StartProcess({Program("fault_client"), "violate", kind, kAddr, port});
    if (client == nullptr)
        return outcome;
    EXPECT_TRUE(ExitsSuccessfully(*client));
    std::optional<ExitStatus> status = server->Wait(kExitTimeout);
    EXPECT_TRUE(status.has_value()) << server->Describe();
    outcome.server_succeeded = status.has_value() && status->Success();
    outcome.client_stdout = client->Stdout();
    outcome.server_stdout = server->Stdout();
    return outcome;
}

void ExpectRemoteAccessErrorAndNothingWritten(const Outcome &outcome) {
    EXPECT_THAT(outcome.client_stdout, HasSubstr(CompletionLine(IBV_WC_REM_ACCESS_ERR)))
        << outcome.client_stdout;
    EXPECT_THAT(outcome.server_stdout, HasSubstr("target memory unchanged"))
        << outcome.server_stdout;
    EXPECT_TRUE(outcome.server_succeeded);
}

TEST(RemoteAccessTest, WriteBeyondTheRegionViaAForgedSizeIsRefused) {
    ExpectRemoteAccessErrorAndNothingWritten(RunViolation("rw", "beyond"));
}

TEST(RemoteAccessTest, WriteAcrossTheRegionsEndViaAForgedSizeIsRefusedWhole) {
    ExpectRemoteAccessErrorAndNothingWritten(RunViolation("rw", "straddle"));
}

TEST(RemoteAccessTest, WriteWithAWrongRkeyIsRefused) {
    ExpectRemoteAccessErrorAndNothingWritten(RunViolation("rw", "rkey"));
}

TEST(RemoteAccessTest, WriteToARegionWithoutWriteDstIsRefused) {
    ExpectRemoteAccessErrorAndNothingWritten(RunViolation("ro", "plain"));
}

// The control: the same write, allowed, succeeds and the server's check notices it.
TEST(RemoteAccessTest, PermittedWriteSucceedsAndTheServerSeesIt) {
    Outcome outcome = RunViolation("rw", "plain");
    EXPECT_THAT(outcome.client_stdout, HasSubstr(CompletionLine(IBV_WC_SUCCESS)))
        << outcome.client_stdout;
    EXPECT_THAT(outcome.server_stdout, HasSubstr("target memory modified at byte 0"))
        << outcome.server_stdout;
    EXPECT_FALSE(outcome.server_succeeded);
}

}  // namespace
}  // namespace rpma::testing
