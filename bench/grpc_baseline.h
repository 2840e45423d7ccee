// The gRPC baseline: servers of bench/write_service.proto, and a client
// posting each write to all of them at once (async stubs) and counting it
// done when every server answered.
#ifndef RPMA_BENCH_GRPC_BASELINE_H
#define RPMA_BENCH_GRPC_BASELINE_H

#include <memory>
#include <string>
#include <vector>

#include "bench/workload.h"

namespace rpma_bench {

// Serves Write on 127.0.0.1:`port`, into `file` (created, kRegionSize,
// mapped shared; every write msyncs its pages before the reply); runs in a
// child process until it is killed, after writing one line to `ready_fd`.
[[noreturn]] void RunGrpcWriteServer(uint16_t port, const std::string &file, int ready_fd);

// Only DurableWriteAtDepth is measured.
std::unique_ptr<Client> ConnectGrpcWriters(const std::vector<uint16_t> &ports);

}  // namespace rpma_bench

#endif  // RPMA_BENCH_GRPC_BASELINE_H
