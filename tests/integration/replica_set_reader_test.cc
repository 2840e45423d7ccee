// A reader of a static replica set never returns a replica's bytes once the
// writer recorded it stale (REPLICATION.md rule 3), although that replica,
// which the writer timed out, still answers the reader: each read is
// confirmed against the newest record a majority of the replicas hold.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "rpma/client/region.h"
#include "tests/integration/rpmad_harness.h"
#include "tests/integration/stopped_daemon.h"

namespace rpma::testing {
namespace {

using client::OpenOptions;
using client::Region;
using client::ReplicaSet;
using client::StatusCode;

TEST(ReplicaSetReaderTest, AReaderNeverReadsAReplicaTheWriterRecordedStale) {
    std::vector<std::unique_ptr<Rpmad>> daemons;
    ReplicaSet set;
    for (int i = 0; i < 3; ++i) {
        RpmadOptions options;
        options.pool_dir = TempPath("reader-pool" + std::to_string(i));
        std::string error;
        daemons.push_back(Rpmad::Start(options, &error));
        ASSERT_NE(daemons.back(), nullptr) << error;
        set.addresses.push_back(daemons.back()->control());
    }
    OpenOptions options;
    options.quorum = 2;
    options.create_size = 1 << 20;
    options.operation_timeout = std::chrono::milliseconds(1500);
    auto writer = Region::Open(set, "log", options);
    ASSERT_TRUE(writer.ok()) << writer.status().ToString();
    const auto before = Pattern(4096, 1), after = Pattern(4096, 2);
    ASSERT_TRUE((*writer)->WritePersist(0, before).ok());
    OpenOptions read_only;
    read_only.read_only = true;
    auto reader = Region::Open(set, "log", read_only);
    ASSERT_TRUE(reader.ok()) << reader.status().ToString();
    std::vector<std::byte> got(4096);
    ASSERT_TRUE((*reader)->Read(0, got, 2).ok());
    ASSERT_EQ(got, before);
    {
        // The writer times replica 2 out and records it stale; the first
        // write may still reach it (its kernel took the bytes), the second
        // does not.
        Stopped stalled(daemons[2]->process().pid());
        ASSERT_TRUE(stalled.stopped());
        ASSERT_TRUE((*writer)->WritePersist(0, Pattern(4096, 3)).ok());
        ASSERT_TRUE((*writer)->WritePersist(0, after).ok());
    }
    ASSERT_EQ((*writer)->replicas()[2].state, client::ReplicaState::kFailed);
    const auto read = (*reader)->Read(0, got, 2);
    ASSERT_FALSE(read.ok()) << "a stale replica was read";
    EXPECT_EQ(read.code(), StatusCode::kFailedPrecondition) << read.ToString();
    ASSERT_TRUE((*reader)->Read(0, got, 0).ok());
    EXPECT_EQ(got, after);
}

}  // namespace
}  // namespace rpma::testing
