// The writer of cluster_scenarios_test, in a process of its own so that the
// test can SIGSTOP or SIGKILL it: opens REGION by name through etcd (a
// writer, quorum 2, retrying while another writer's lease holds it, for up
// to 30 s) and, until the file STOP exists or a write fails, writes blocks
// of cluster_history.h's Block to random slots of SLOTS (versions FIRST,
// FIRST+1, ...) with WritePersist, and reads one back from an in-sync
// replica every fourth write, logging each operation to LOG as the history
// checker reads it (flushed per line).
//
//   cluster_child_writer ETCD REGION LOG STOP SEED SLOTS FIRST LEASE_S TIMEOUT_MS
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <thread>

#include "rpma/client/cluster.h"
#include "rpma/client/region.h"
#include "tests/integration/cluster_history.h"

namespace {

using rpma::client::Region;

// Reads `slot` from the first in-sync replica: the version it holds, "bad"
// or why it could not be read.
std::string ReadBack(Region &region, uint64_t slot, uint64_t seed) {
    std::vector<std::byte> block(rpma::testing::kBlock);
    const auto replicas = region.replicas();
    for (size_t i = 0; i < replicas.size(); ++i) {
        if (replicas[i].state != rpma::client::ReplicaState::kLive)
            continue;
        if (!region.Read(slot * rpma::testing::kBlock, block, i).ok())
            continue;
        const auto version = rpma::testing::VersionIn(block, slot, seed);
        return version ? std::to_string(*version) : "bad";
    }
    return "";
}

}  // namespace

int main(int argc, char **argv) {
    if (argc != 10) {
        std::fprintf(stderr, "usage: %s ETCD REGION LOG STOP SEED SLOTS FIRST LEASE_S TIMEOUT_MS\n",
                     argv[0]);
        return 2;
    }
    FILE *log = std::fopen(argv[3], "a");
    if (log == nullptr) {
        std::perror(argv[3]);
        return 2;
    }
    const std::string stop = argv[4];
    const uint64_t seed = std::strtoull(argv[5], nullptr, 10);
    const uint64_t slots = std::strtoull(argv[6], nullptr, 10);
    uint64_t version = std::strtoull(argv[7], nullptr, 10);
    rpma::client::Cluster cluster;
    cluster.etcd_endpoints = argv[1];
    cluster.writer_lease = std::chrono::seconds(std::strtoul(argv[8], nullptr, 10));
    rpma::client::OpenOptions options;
    options.quorum = 2;
    options.operation_timeout = std::chrono::milliseconds(std::strtoul(argv[9], nullptr, 10));
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    auto region = Region::Open(cluster, argv[2], options);
    while (!region.ok() && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        region = Region::Open(cluster, argv[2], options);
    }
    if (!region.ok()) {
        std::fprintf(log, "open failed: %s\n", region.status().ToString().c_str());
        return 1;
    }
    std::fprintf(log, "open generation %llu\n",
                 static_cast<unsigned long long>((*region)->generation()));
    std::fflush(log);
    std::mt19937_64 random(seed ^ version);
    for (uint64_t n = 0; !std::filesystem::exists(stop); ++n, ++version) {
        const uint64_t slot = random() % slots;
        std::fprintf(log, "invoke w %llu %llu\n", static_cast<unsigned long long>(slot),
                     static_cast<unsigned long long>(version));
        std::fflush(log);
        const auto s = (*region)->WritePersist(slot * rpma::testing::kBlock,
                                               rpma::testing::Block(slot, version, seed));
        if (!s.ok()) {
            std::fprintf(log, "failed w %llu %llu: %s\n", static_cast<unsigned long long>(slot),
                         static_cast<unsigned long long>(version), s.ToString().c_str());
            return 3;
        }
        std::fprintf(log, "ack w %llu %llu\n", static_cast<unsigned long long>(slot),
                     static_cast<unsigned long long>(version));
        std::fflush(log);
        if (n % 4 != 3)
            continue;
        const uint64_t read = random() % slots;
        std::fprintf(log, "invoke r %llu\n", static_cast<unsigned long long>(read));
        std::fflush(log);
        const std::string seen = ReadBack(**region, read, seed);
        // A read that found no replica to read from answers nothing.
        std::fprintf(log, "%s r %llu %s\n", seen.empty() ? "noread" : "read",
                     static_cast<unsigned long long>(read), seen.c_str());
        std::fflush(log);
    }
    std::fprintf(log, "done\n");
    return 0;
}
