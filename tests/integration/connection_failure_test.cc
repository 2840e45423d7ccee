// How connections fail, seen from the client process: the exact event for a rejected
// request, for an address where nothing listens, and for a server that dies mid-stream --
// always within a bound, never a hang.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "tests/integration/process.h"
#include "tests/integration/process_expectations.h"

namespace rpma::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

const std::string kAddr = "127.0.0.1";

std::string Program(const std::string &name) {
    return Runfile("tests/integration/" + name);
}

TEST(ConnectionFailureTest, ServerDeletingTheRequestGivesRejected) {
    std::string port = std::to_string(FreePort());
    auto server = StartServer({Program("fault_server"), "reject", kAddr, port});
    ASSERT_NE(server, nullptr);
    auto client = StartProcess({Program("fault_client"), "connect", kAddr, port});
    ASSERT_NE(client, nullptr);
    EXPECT_TRUE(ExitsSuccessfully(*client));
    EXPECT_TRUE(ExitsSuccessfully(*server));
    EXPECT_THAT(server->Stdout(), HasSubstr("rejected\n"));
    EXPECT_THAT(client->Stdout(), HasSubstr("event: REJECTED\n")) << client->Describe();
}

// librpma.h: UNREACHABLE is "the other side could not be reached" (REJECTED: "the other side
// refused the connection" -- no server is there to refuse).
TEST(ConnectionFailureTest, NothingListeningGivesUnreachable) {
    std::string port = std::to_string(FreePort());
    auto client = StartProcess({Program("fault_client"), "connect", kAddr, port});
    ASSERT_NE(client, nullptr);
    EXPECT_TRUE(ExitsSuccessfully(*client));
    EXPECT_THAT(client->Stdout(), HasSubstr("event: UNREACHABLE\n")) << client->Describe();
}

// A client streaming write + flush to a server that is SIGKILLed after the 100th
// acknowledgement; returns the client once it has exited (nullptr after a failure).
std::unique_ptr<Process> StreamUntilTheServerIsKilled() {
    std::string port = std::to_string(FreePort());
    auto server = StartServer(
        {Program("fault_server"), "durable", kAddr, port, TempPath("killed-mid-stream")});
    if (server == nullptr)
        return nullptr;
    auto client = StartProcess({Program("fault_client"), "stream", kAddr, port});
    if (client == nullptr)
        return nullptr;
    if (!client->WaitForLine("ack 100", kExitTimeout)) {
        ADD_FAILURE() << "no 100th acknowledgement\n" << client->Describe();
        return nullptr;
    }
    ExitStatus killed = server->Kill();
    EXPECT_FALSE(killed.exited) << server->Describe();
    // The client bounds each of its own waits (10 s); it must not hang beyond them, and it
    // exits 0 only when every record in flight has completed.
    EXPECT_TRUE(ExitsSuccessfully(*client));
    return client;
}

TEST(ConnectionFailureTest, ServerKilledMidStreamGivesErrorCompletionsAndLost) {
    auto client = StreamUntilTheServerIsKilled();
    ASSERT_NE(client, nullptr);
    // The client keeps several records in flight; each must complete (the client checks).
    // Those the kill caught unacknowledged complete with an error -- unless the server had
    // acknowledged them all just before dying; then the failure shows on the next post
    // (which OperationPostedAfterLostCompletesWithAnError pins down).
    const std::string &out = client->Stdout();
    EXPECT_TRUE(out.find("error completion: status=") != std::string::npos ||
                out.find("post failed: ") != std::string::npos)
        << client->Describe();
    EXPECT_THAT(out, HasSubstr("event: LOST\n")) << client->Describe();
}

// As on an RDMA queue pair in the error state: posting still succeeds, and the operation
// completes with an error (IBV_WC_WR_FLUSH_ERR on verbs).
TEST(ConnectionFailureTest, OperationPostedAfterLostCompletesWithAnError) {
    auto client = StreamUntilTheServerIsKilled();
    ASSERT_NE(client, nullptr);
    EXPECT_THAT(client->Stdout(), HasSubstr("event: LOST\n")) << client->Describe();
    EXPECT_THAT(client->Stdout(), HasSubstr("post after failure: completion status="))
        << client->Describe();
    EXPECT_THAT(client->Stdout(), Not(HasSubstr("post after failure: completion status=0 ")))
        << client->Describe();
}

}  // namespace
}  // namespace rpma::testing
