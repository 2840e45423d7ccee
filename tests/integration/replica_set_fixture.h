// The fixture of replica_set_test and replica_set_writers_test: three
// rpmads on loopback, a region of 64 MiB, and a history of every
// acknowledged write (record i: 4096 bytes at i * 4096, each offset written
// once), checked right away against a read from a replica in sync (no read
// returns bytes older than an acknowledged write), and at the end
// (ExpectHistory), byte for byte, on every replica in sync as a fresh
// read-only Region sees them.
#ifndef TESTS_INTEGRATION_REPLICA_SET_FIXTURE_H
#define TESTS_INTEGRATION_REPLICA_SET_FIXTURE_H

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <future>
#include <list>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "rpma/client/region.h"
#include "rpma_client.h"
#include "tests/integration/cut_proxy.h"
#include "tests/integration/process.h"
#include "tests/integration/rpmad_harness.h"
#include "tests/integration/stopped_daemon.h"

namespace rpma::testing {

using client::OpenOptions;
using client::Region;
using client::RepairOptions;
using client::RepairProgress;
using client::ReplicaSet;
using client::ReplicaState;
using client::StatusCode;

inline constexpr size_t kRecord = 4096;
inline constexpr uint64_t kRegionSize = uint64_t{64} << 20;
inline constexpr uint64_t kExtent = uint64_t{1} << 20;
inline constexpr char kRegion[] = "history";

inline std::vector<std::byte> RecordBytes(size_t i) {
    return Pattern(kRecord, static_cast<uint8_t>(i));
}

inline int Iterations() {
    const char *n = std::getenv("RPMA_REPLICA_SET_TEST_ITERATIONS");
    return n != nullptr && std::atoi(n) > 0 ? std::atoi(n) : 1;
}

// Bytes received and not yet read on the established loopback sockets
// whose local port is `port` (a stopped daemon's data plane): what clients
// sent it that it has not taken.
inline size_t Unread(int port) {
    std::ifstream tcp("/proc/net/tcp");
    std::string line;
    std::getline(tcp, line);  // the header
    size_t unread = 0;
    while (std::getline(tcp, line)) {
        std::istringstream fields(line);
        std::string sl, local, remote, state, queues;
        fields >> sl >> local >> remote >> state >> queues;
        const size_t colon = local.find(':'), split = queues.find(':');
        if (state != "01" || colon == std::string::npos || split == std::string::npos)
            continue;
        if (std::stoi(local.substr(colon + 1), nullptr, 16) == port)
            unread += std::stoul(queues.substr(split + 1), nullptr, 16);
    }
    return unread;
}

class ReplicaSetTest : public ::testing::Test {
  protected:
    void StartDaemons(size_t count, std::string config_yaml = "") {
        count_ = count;
        config_yaml_ = std::move(config_yaml);
        for (size_t i = 0; i < count; ++i) {
            pools_[i] = TempPath(std::string(Name()) + "-pool" + std::to_string(i));
            daemons_[i] = Start(i, false);
            ASSERT_NE(daemons_[i], nullptr);
        }
    }
    std::unique_ptr<Rpmad> Start(size_t i, bool same_ports) {
        RpmadOptions options;
        options.pool_dir = pools_[i];
        options.config_yaml = config_yaml_;
        if (same_ports) {
            options.control_port = daemons_[i]->control_port();
            options.data_port = daemons_[i]->data_port();
        }
        std::string error;
        auto rpmad = Rpmad::Start(options, &error);
        EXPECT_NE(rpmad, nullptr) << error;
        return rpmad;
    }
    void Restart(size_t i) {
        daemons_[i]->process().Kill();
        daemons_[i] = Start(i, true);
        ASSERT_NE(daemons_[i], nullptr);
    }
    static const char *Name() {
        return ::testing::UnitTest::GetInstance()->current_test_info()->name();
    }
    ReplicaSet Set(std::vector<std::string> data_addresses = {}) const {
        ReplicaSet set;
        for (size_t i = 0; i < count_; ++i)
            set.addresses.push_back(daemons_[i]->control());
        set.data_addresses = std::move(data_addresses);
        set.options = connect_;
        return set;
    }
    client::Result<std::unique_ptr<Region>> Open(OpenOptions options, const ReplicaSet &set) {
        options.create_size = kRegionSize;
        if (options.operation_timeout == std::chrono::milliseconds(10000))
            options.operation_timeout = std::chrono::milliseconds(1500);
        return Region::Open(set, kRegion, options);
    }
    std::unique_ptr<Region> OpenWriter(size_t quorum, std::vector<std::string> data = {}) {
        OpenOptions options;
        options.quorum = quorum;
        auto region = Open(options, Set(std::move(data)));
        EXPECT_TRUE(region.ok()) << region.status().ToString();
        return region.ok() ? std::move(*region) : nullptr;
    }

    // Writes record i; when acknowledged, remembers it and reads it back
    // from a replica in sync (the first one live). The write's status.
    client::Status WriteRecord(Region &region, size_t i) {
        const client::Status s = region.WritePersist(i * kRecord, RecordBytes(i));
        if (!s.ok())
            return s;
        acknowledged_.insert(i);
        const auto infos = region.replicas();
        for (size_t r = 0; r < infos.size(); ++r) {
            if (infos[r].state != ReplicaState::kLive)
                continue;
            std::vector<std::byte> in(kRecord);
            const client::Status read = region.Read(i * kRecord, in, r);
            EXPECT_TRUE(read.ok()) << read.ToString();
            EXPECT_TRUE(in == RecordBytes(i))
                << "record " << i << " read from replica " << r
                << " right after it was acknowledged holds other bytes";
            break;
        }
        return s;
    }
    // Writes records [first, first + count), each acknowledged.
    void WriteRecords(Region &region, size_t first, size_t count) {
        for (size_t i = first; i < first + count; ++i) {
            const client::Status s = WriteRecord(region, i);
            ASSERT_TRUE(s.ok()) << "record " << i << ": " << s.ToString();
        }
    }
    // Writes records from `*next` on until replica `r` is marked failed
    // (each acknowledged), then `after` more.
    void WriteUntilFailed(Region &region, size_t r, size_t *next, size_t after) {
        for (size_t bound = *next + 2000; region.replicas()[r].state != ReplicaState::kFailed;
             ++*next) {
            ASSERT_LT(*next, bound) << "replica " << r << " was never marked failed";
            const client::Status s = WriteRecord(region, *next);
            ASSERT_TRUE(s.ok()) << "record " << *next << ": " << s.ToString();
        }
        ASSERT_NO_FATAL_FAILURE(WriteRecords(region, *next, after));
        *next += after;
    }

    // The history, byte for byte, on every replica that a fresh read-only
    // Region finds in sync; `in_sync` must be among them.
    void ExpectHistory(const std::set<size_t> &in_sync) {
        OpenOptions options;
        options.read_only = true;
        options.quorum = 1;
        auto reader = Region::Open(Set(), kRegion, options);
        ASSERT_TRUE(reader.ok()) << reader.status().ToString();
        const auto infos = (*reader)->replicas();
        EXPECT_EQ((*reader)->generation(), 0u);
        // A reader writes nothing.
        EXPECT_EQ((*reader)->WritePersist(0, RecordBytes(0)).code(),
                  StatusCode::kFailedPrecondition);
        EXPECT_EQ((*reader)->Persist(0, kRecord).code(), StatusCode::kFailedPrecondition);
        std::vector<std::byte> all(kRegionSize);
        ASSERT_TRUE((*reader)->RegisterBuffer(all).ok());
        for (size_t r = 0; r < infos.size(); ++r) {
            if (infos[r].state != ReplicaState::kLive) {
                EXPECT_EQ(in_sync.count(r), 0u)
                    << "replica " << r << " is not in sync: " << infos[r].error.ToString();
                // Never read.
                std::vector<std::byte> one(kRecord);
                EXPECT_EQ((*reader)->Read(0, one, r).code(), StatusCode::kFailedPrecondition);
                continue;
            }
            const client::Status s = (*reader)->Read(0, all, r);
            ASSERT_TRUE(s.ok()) << "replica " << r << ": " << s.ToString();
            for (size_t i : acknowledged_)
                ASSERT_TRUE(std::equal(all.begin() + i * kRecord, all.begin() + (i + 1) * kRecord,
                                       RecordBytes(i).begin()))
                    << "replica " << r << " (in sync) lacks acknowledged record " << i;
        }
        EXPECT_TRUE((*reader)->UnregisterBuffer(all).ok());
    }

    // Repairs replica r; the bytes it copied.
    uint64_t Repair(Region &region, size_t r) {
        RepairProgress last;
        uint64_t calls = 0;
        RepairOptions options;
        options.progress = [&](const RepairProgress &p) {
            EXPECT_EQ(p.total, kRegionSize);
            EXPECT_GE(p.compared, last.compared);
            EXPECT_GE(p.copied, last.copied);
            last = p;
            ++calls;
        };
        const client::Status s = region.Repair(r, options);
        EXPECT_TRUE(s.ok()) << s.ToString();
        EXPECT_GT(calls, 0u);
        EXPECT_EQ(last.compared, kRegionSize);
        EXPECT_EQ(region.replicas()[r].state, ReplicaState::kLive);
        return last.copied;
    }

    size_t count_ = 0;
    std::string config_yaml_;
    client::ConnectOptions connect_;  // every Set()'s
    std::array<std::string, 3> pools_;
    std::array<std::unique_ptr<Rpmad>, 3> daemons_;
    std::mutex history_mu_;  // acknowledged_, when two writers run at once
    std::set<size_t> acknowledged_;
};

// (a) Killed mid-stream, restarted: stale for the next opener, never read,

}  // namespace rpma::testing

#endif  // TESTS_INTEGRATION_REPLICA_SET_FIXTURE_H
