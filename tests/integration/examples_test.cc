// Every example, run as it is meant to be run: a server process and client processes talking
// over 127.0.0.1. Each must exit 0; where an example leaves data in a file, the test also
// reads the file itself.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "examples/02-read-volatile/protocol.h"
#include "examples/05-write-flush-persistent/protocol.h"
#include "examples/07-log-append/protocol.h"
#include "examples/10-gpspm/protocol.h"
#include "tests/integration/process.h"
#include "tests/integration/process_expectations.h"

namespace rpma::testing {
namespace {

using ::testing::HasSubstr;

const std::string kAddr = "127.0.0.1";

std::string Binary(const std::string &example, const std::string &side) {
    return Runfile("examples/" + example + "/" + side);
}

std::string NewPort() {
    return std::to_string(FreePort());
}

std::vector<uint8_t> ReadFile(const std::string &path, size_t size) {
    std::vector<uint8_t> bytes(size);
    FILE *file = fopen(path.c_str(), "rb");
    if (file == nullptr) {
        ADD_FAILURE() << "cannot open " << path;
        return {};
    }
    size_t got = fread(bytes.data(), 1, size, file);
    fclose(file);
    if (got != size) {
        ADD_FAILURE() << path << " has only " << got << " bytes, expected " << size;
        return {};
    }
    return bytes;
}

TEST(ExamplesTest, ConnectionExchangesPrivateDataBothWays) {
    std::string port = NewPort();
    auto server = StartServer({Binary("01-connection", "server"), kAddr, port});
    ASSERT_NE(server, nullptr);
    auto client = StartProcess({Binary("01-connection", "client"), kAddr, port});
    ASSERT_NE(client, nullptr);
    EXPECT_TRUE(ExitsSuccessfully(*client));
    EXPECT_TRUE(ExitsSuccessfully(*server));
    EXPECT_THAT(client->Stdout(), HasSubstr("the server said"));
    EXPECT_THAT(server->Stdout(), HasSubstr("the client said"));
}

TEST(ExamplesTest, ReadVolatileReadsTheServersRegion) {
    std::string port = NewPort();
    auto server = StartServer({Binary("02-read-volatile", "server"), kAddr, port});
    ASSERT_NE(server, nullptr);
    auto client = StartProcess({Binary("02-read-volatile", "client"), kAddr, port});
    ASSERT_NE(client, nullptr);
    EXPECT_TRUE(ExitsSuccessfully(*client));
    EXPECT_TRUE(ExitsSuccessfully(*server));
}

TEST(ExamplesTest, ReadToPersistentLeavesTheServersRegionInTheFile) {
    std::string port = NewPort();
    std::string path = TempPath("read-to-persistent");
    // 03-read-to-persistent's server is an alias of 02-read-volatile's.
    auto server = StartServer({Binary("02-read-volatile", "server"), kAddr, port});
    ASSERT_NE(server, nullptr);
    auto client = StartProcess({Binary("03-read-to-persistent", "client"), kAddr, port, path});
    ASSERT_NE(client, nullptr);
    EXPECT_TRUE(ExitsSuccessfully(*client));
    EXPECT_TRUE(ExitsSuccessfully(*server));

    std::vector<uint8_t> file = ReadFile(path, REGION_SIZE);
    ASSERT_EQ(file.size(), size_t{REGION_SIZE});
    EXPECT_EQ(check_content(file.data(), file.size()), 0);
}

TEST(ExamplesTest, WriteReadReadsBackWhatItWrote) {
    std::string port = NewPort();
    auto server = StartServer({Binary("04-write-read", "server"), kAddr, port});
    ASSERT_NE(server, nullptr);
    auto client = StartProcess({Binary("04-write-read", "client"), kAddr, port});
    ASSERT_NE(client, nullptr);
    EXPECT_TRUE(ExitsSuccessfully(*client));
    EXPECT_TRUE(ExitsSuccessfully(*server));
    EXPECT_THAT(server->Stdout(), HasSubstr("the region holds the client's"));
}

TEST(ExamplesTest, WriteFlushPersistentLeavesTheClientsBytesInTheServersFile) {
    std::string port = NewPort();
    std::string path = TempPath("write-flush-persistent");
    auto server = StartServer({Binary("05-write-flush-persistent", "server"), kAddr, port, path});
    ASSERT_NE(server, nullptr);
    auto client = StartProcess({Binary("05-write-flush-persistent", "client"), kAddr, port});
    ASSERT_NE(client, nullptr);
    EXPECT_TRUE(ExitsSuccessfully(*client));
    EXPECT_TRUE(ExitsSuccessfully(*server));

    std::vector<uint8_t> file = ReadFile(path, PMEM_REGION_SIZE);
    ASSERT_EQ(file.size(), size_t{PMEM_REGION_SIZE});
    EXPECT_EQ(check_stored(file.data()), 0);
}

TEST(ExamplesTest, MultiClientEpollServesFourClientsAtOnce) {
    constexpr int kClients = 4;
    std::string port = NewPort();
    auto server = StartServer(
        {Binary("06-multi-client-epoll", "server"), kAddr, port, std::to_string(kClients)});
    ASSERT_NE(server, nullptr);
    std::vector<std::unique_ptr<Process>> clients;
    for (int id = 0; id < kClients; id++) {
        clients.push_back(StartProcess(
            {Binary("06-multi-client-epoll", "client"), kAddr, port, std::to_string(id)}));
        ASSERT_NE(clients.back(), nullptr);
    }
    for (auto &client : clients)
        EXPECT_TRUE(ExitsSuccessfully(*client));
    EXPECT_TRUE(ExitsSuccessfully(*server));
    EXPECT_THAT(server->Stdout(), HasSubstr("all 4 clients served"));
}

TEST(ExamplesTest, LogAppendKeepsEveryRecordOfTwoClients) {
    std::string port = NewPort();
    std::string path = TempPath("log");
    auto server = StartServer({Binary("07-log-append", "server"), kAddr, port, path, "2"});
    ASSERT_NE(server, nullptr);
    // one after the other: the server serves its clients in turn
    for (const char *records : {"5", "7"}) {
        auto client = StartProcess({Binary("07-log-append", "client"), kAddr, port, records});
        ASSERT_NE(client, nullptr);
        EXPECT_TRUE(ExitsSuccessfully(*client));
    }
    EXPECT_TRUE(ExitsSuccessfully(*server));
    EXPECT_THAT(server->Stdout(), HasSubstr("log verified: 12 records"));

    std::vector<uint8_t> file = ReadFile(path, LOG_SIZE);
    ASSERT_EQ(file.size(), size_t{LOG_SIZE});
    uint64_t records = 0;
    EXPECT_EQ(check_log(file.data(), &records), 0);
    EXPECT_EQ(records, 12u);
}

// Starts a server (argv), waits for its "ready", starts all clients at once and expects every
// process to exit 0. Returns the server's stdout for checks of its summary.
std::string RunServerAndClients(const std::vector<std::string> &server_argv,
                                const std::vector<std::vector<std::string>> &clients_argv) {
    auto server = StartServer(server_argv);
    if (server == nullptr)
        return "";
    std::vector<std::unique_ptr<Process>> clients;
    for (const auto &argv : clients_argv)
        clients.push_back(StartProcess(argv));
    for (auto &client : clients) {
        if (client != nullptr) {
            EXPECT_TRUE(ExitsSuccessfully(*client));
        }
    }
    EXPECT_TRUE(ExitsSuccessfully(*server));
    return server->Stdout();
}

TEST(ExamplesTest, MessagesPingPongAnswersEveryPing) {
    std::string port = NewPort();
    std::string summary =
        RunServerAndClients({Binary("08-messages-ping-pong", "server"), kAddr, port},
                            {{Binary("08-messages-ping-pong", "client"), kAddr, port, "100"}});
    EXPECT_THAT(summary, HasSubstr("answered 100 pings of client"));
}

// 09's client is 08's (an alias): the shared receive queue is the server's business.
std::string RunPingPongWithSrq(int clients, int rounds) {
    std::string port = NewPort();
    std::vector<std::vector<std::string>> clients_argv(
        clients, {Binary("08-messages-ping-pong", "client"), kAddr, port, std::to_string(rounds)});
    return RunServerAndClients(
        {Binary("09-messages-ping-pong-with-srq", "server"), kAddr, port, std::to_string(clients)},
        clients_argv);
}

TEST(ExamplesTest, MessagesPingPongWithSrqServesOneClient) {
    EXPECT_THAT(RunPingPongWithSrq(1, 50),
                HasSubstr("1 clients served through one shared receive queue, 50 pings answered"));
}

TEST(ExamplesTest, MessagesPingPongWithSrqServesThreeClientsAtOnce) {
    EXPECT_THAT(RunPingPongWithSrq(3, 50),
                HasSubstr("3 clients served through one shared receive queue, 150 pings answered"));
}

// Runs a GPSPM server and client; returns the server's stdout after checking its file.
std::string RunGpspm(const std::string &example) {
    std::string port = NewPort();
    std::string path = TempPath(example);
    std::string summary = RunServerAndClients({Binary(example, "server"), kAddr, port, path},
                                              {{Binary(example, "client"), kAddr, port}});
    std::vector<uint8_t> file = ReadFile(path, GPSPM_REGION_SIZE);
    EXPECT_EQ(file.size(), size_t{GPSPM_REGION_SIZE});
    if (file.size() == GPSPM_REGION_SIZE) {
        EXPECT_EQ(gpspm_check_region(file.data()), 0);
    }
    return summary;
}

TEST(ExamplesTest, GpspmServerPersistsEveryRangeItIsAskedFor) {
    std::string summary = RunGpspm("10-gpspm");
    EXPECT_THAT(summary, HasSubstr("3 flush requests served (completions: 6 on the CQ)"));
    EXPECT_THAT(summary, HasSubstr("holds the client's 12288 bytes, made durable by 3 flush"));
}

TEST(ExamplesTest, GpspmSharedChannelWaitsForBothQueuesOnOneFd) {
    std::string summary = RunGpspm("11-gpspm-shared-channel");
    EXPECT_THAT(summary, HasSubstr("rpma_cq_wait() refuses both queues"));
    EXPECT_THAT(summary, HasSubstr("3 flush requests served (completions: 3 on the CQ, 3 on the "
                                   "receive CQ, both on one shared channel)"));
    EXPECT_THAT(summary, HasSubstr("holds the client's 12288 bytes, made durable by 3 flush"));
}

TEST(ExamplesTest, SendWithImmDeliversEveryImmediateValue) {
    std::string port = NewPort();
    std::string summary =
        RunServerAndClients({Binary("12-send-with-imm", "server"), kAddr, port},
                            {{Binary("12-send-with-imm", "client"), kAddr, port}});
    EXPECT_THAT(summary, HasSubstr("immediate 0xc0deffff, no payload"));
    EXPECT_THAT(summary, HasSubstr("5 messages with immediate data verified, 1 of them without"));
}

TEST(ExamplesTest, WriteWithImmAnnouncesEveryChunkToTheTarget) {
    std::string port = NewPort();
    std::string summary =
        RunServerAndClients({Binary("13-write-with-imm", "server"), kAddr, port},
                            {{Binary("13-write-with-imm", "client"), kAddr, port}});
    EXPECT_THAT(summary, HasSubstr("chunk 3 arrived with immediate 0x57490003"));
    EXPECT_THAT(summary,
                HasSubstr("all 4 chunks written with immediate data, the region is right"));
}

// Returns the server's and the client's stdout.
std::pair<std::string, std::string> RunReceiveCq(const std::vector<std::string> &mode) {
    std::string port = NewPort();
    std::vector<std::string> server_argv = {Binary("14-receive-cq", "server")};
    std::vector<std::string> client_argv = {Binary("14-receive-cq", "client")};
    server_argv.insert(server_argv.end(), mode.begin(), mode.end());
    client_argv.insert(client_argv.end(), mode.begin(), mode.end());
    server_argv.insert(server_argv.end(), {kAddr, port});
    client_argv.insert(client_argv.end(), {kAddr, port, "20"});
    auto server = StartServer(server_argv);
    if (server == nullptr)
        return {};
    auto client = StartProcess(client_argv);
    if (client != nullptr) {
        EXPECT_TRUE(ExitsSuccessfully(*client));
    }
    EXPECT_TRUE(ExitsSuccessfully(*server));
    return {server->Stdout(), client == nullptr ? "" : client->Stdout()};
}

TEST(ExamplesTest, ReceiveCqTakesEveryReceiveAndTheCqNone) {
    auto [server, client] = RunReceiveCq({});
    const char *kCounts =
        "20 receives completed on the receive CQ, 20 sends on the CQ (a channel each)";
    EXPECT_THAT(server, HasSubstr(std::string("server: ") + kCounts));
    EXPECT_THAT(client, HasSubstr(std::string("client: ") + kCounts));
}

TEST(ExamplesTest, ReceiveCqOnASharedChannelTellsWhichQueueFired) {
    auto [server, client] = RunReceiveCq({"--shared-channel"});
    const char *kCounts =
        "20 receives completed on the receive CQ, 20 sends on the CQ (one shared completion "
        "channel)";
    EXPECT_THAT(server, HasSubstr(std::string("server: ") + kCounts));
    EXPECT_THAT(client, HasSubstr(std::string("client: ") + kCounts));
}

}  // namespace
}  // namespace rpma::testing
