// A writer in a process of its own, for replica_set_writers_test's crash case: it
// opens REGION on the replicas (quorum QUORUM, operation_timeout TIMEOUT_MS)
// and writes records FIRST, FIRST+1, ... (record i: 4096 bytes at i * 4096,
// byte k = i + k, as Pattern), each with WritePersist, printing "ack i" once
// one is acknowledged (flushed at once, so that what the test reads is what
// was acknowledged when it kills the process), and "failed i: why" then
// exits 3 when one fails.
//
//   replica_set_child_writer REGION QUORUM TIMEOUT_MS FIRST COUNT ADDRESS[=DATA]...
//
// ADDRESS is a replica's control plane, DATA (optional) where its data
// plane is reached instead of where the daemon says.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "rpma/client/region.h"
#include "tests/integration/rpmad_harness.h"

int main(int argc, char **argv) {
    if (argc < 7) {
        std::fprintf(stderr, "usage: %s REGION QUORUM TIMEOUT_MS FIRST COUNT ADDRESS[=DATA]...\n",
                     argv[0]);
        return 2;
    }
    constexpr size_t kRecord = 4096;
    rpma::client::ReplicaSet set;
    bool data = false;
    for (int i = 6; i < argc; ++i) {
        const std::string arg = argv[i];
        const size_t eq = arg.find('=');
        set.addresses.push_back(arg.substr(0, eq));
        set.data_addresses.push_back(eq == std::string::npos ? "" : arg.substr(eq + 1));
        data = data || eq != std::string::npos;
    }
    if (!data)
        set.data_addresses.clear();
    rpma::client::OpenOptions options;
    options.quorum = std::strtoul(argv[2], nullptr, 10);
    options.operation_timeout = std::chrono::milliseconds(std::strtoul(argv[3], nullptr, 10));
    auto region = rpma::client::Region::Open(set, argv[1], options);
    if (!region.ok()) {
        std::printf("open failed: %s\n", region.status().ToString().c_str());
        return 1;
    }
    std::printf("open generation %llu\n", static_cast<unsigned long long>((*region)->generation()));
    std::fflush(stdout);
    const size_t first = std::strtoul(argv[4], nullptr, 10);
    const size_t count = std::strtoul(argv[5], nullptr, 10);
    for (size_t i = first; i < first + count; ++i) {
        const auto bytes = rpma::testing::Pattern(kRecord, static_cast<uint8_t>(i));
        const rpma::client::Status s = (*region)->WritePersist(i * kRecord, bytes);
        if (!s.ok()) {
            std::printf("failed %zu: %s\n", i, s.ToString().c_str());
            std::fflush(stdout);
            return 3;
        }
        std::printf("ack %zu\n", i);
        std::fflush(stdout);
    }
    std::printf("done\n");
    return 0;
}
