// Durability across a crash of the target process: a client writes records and flushes each
// to persistence, printing the sequence number the moment the flush is acknowledged. The
// test SIGKILLs the server right after an acknowledgement and then reads the server's file
// with pread: every acknowledged record must be there, byte for byte.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

#include "tests/integration/durable_record.h"
#include "tests/integration/process.h"
#include "tests/integration/process_expectations.h"

namespace rpma::testing {
namespace {

const std::string kAddr = "127.0.0.1";

std::string Program(const std::string &name) {
    return Runfile("tests/integration/" + name);
}

// The highest "ack <seq>" line in the client's output; -1 if none.
int64_t LastAcknowledged(const std::string &output) {
    int64_t last = -1;
    size_t pos = 0;
    while ((pos = output.find("ack ", pos)) != std::string::npos) {
        if (pos == 0 || output[pos - 1] == '\n')
            last = std::max<int64_t>(last, std::stoll(output.substr(pos + 4)));
        pos += 4;
    }
    return last;
}

// Kills the server right after the client reported `kill_after` as acknowledged; checks the
// file for every record the client reported.
void KillAfterAckAndCheckFile(int kill_after) {
    std::string port = std::to_string(FreePort());
    std::string path = TempPath("durable-" + std::to_string(kill_after));
    auto server = StartServer({Program("fault_server"), "durable", kAddr, port, path});
    ASSERT_NE(server, nullptr);
    auto client = StartProcess({Program("fault_client"), "stream", kAddr, port});
    ASSERT_NE(client, nullptr);
    ASSERT_TRUE(client->WaitForLine("ack " + std::to_string(kill_after), kExitTimeout))
        << client->Describe();
    server->Kill();

    EXPECT_TRUE(ExitsSuccessfully(*client));
    int64_t last = LastAcknowledged(client->Stdout());
    ASSERT_GE(last, kill_after) << client->Describe();

    int fd = open(path.c_str(), O_RDONLY);
    ASSERT_GE(fd, 0) << path;
    for (int64_t seq = 0; seq <= last; seq++) {
        uint8_t expected[DURABLE_RECORD_SIZE];
        uint8_t actual[DURABLE_RECORD_SIZE];
        durable_record_fill(static_cast<uint64_t>(seq), expected);
        ssize_t n = pread(fd, actual, sizeof(actual), seq * DURABLE_RECORD_SIZE);
        ASSERT_EQ(n, static_cast<ssize_t>(sizeof(actual))) << "record " << seq;
        ASSERT_EQ(memcmp(actual, expected, sizeof(expected)), 0)
            << "acknowledged record " << seq << " of " << last << " is not in the file";
    }
    close(fd);
}

TEST(DurabilityTest, TheFirstAcknowledgedRecordSurvivesAServerKill) {
    KillAfterAckAndCheckFile(0);
}

TEST(DurabilityTest, AcknowledgedRecordsSurviveAServerKillAfterHundreds) {
    KillAfterAckAndCheckFile(300);
}

TEST(DurabilityTest, AcknowledgedRecordsSurviveAServerKillAfterThousands) {
    KillAfterAckAndCheckFile(3000);
}

}  // namespace
}  // namespace rpma::testing
