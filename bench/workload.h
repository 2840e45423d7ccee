// The two transports the benchmark compares, behind one shape: a server
// running in a child process and a client driving the same workloads.
#ifndef RPMA_BENCH_WORKLOAD_H
#define RPMA_BENCH_WORKLOAD_H

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace rpma_bench {

// The largest payload any workload moves, and the remote region's size.
constexpr size_t kMaxPayload = 1 << 20;
constexpr size_t kRegionSize = 2 << 20;

// Operations kept outstanding (bench/depth.h): one latency sample per
// operation, and the time from the first post to the last completion.
struct DepthResult {
    std::vector<uint64_t> samples;
    uint64_t elapsed_ns = 0;
};

class Client {
  public:
    virtual ~Client() = default;
    // Sends `size` bytes and waits until the server has them (rpma: write +
    // persistent flush; TCP: request and a one-word reply). One sample per
    // iteration, in nanoseconds.
    virtual std::vector<uint64_t> DurableWriteLatency(size_t size, int iterations) = 0;
    // Streams `total` bytes in `chunk`-sized pieces; returns the nanoseconds
    // until the server acknowledged the last byte.
    virtual uint64_t Stream(size_t chunk, size_t total) = 0;
    // Reads `size` bytes from the server and waits until they are here
    // (rpma: rpma_read; TCP: a one-word request and a `size`-byte reply).
    virtual std::vector<uint64_t> ReadLatency(size_t size, int iterations) = 0;
    // Message round trips of `size` bytes (send/recv both ways).
    virtual std::vector<uint64_t> PingPong(size_t size, int iterations) = 0;
    // `operations` durable writes of `size` bytes, `depth` of them
    // outstanding at a time, each to its own slot (offset slot * size).
    virtual DepthResult DurableWriteAtDepth(size_t size, int depth, int operations) = 0;
};

// Servers run in a child process until it is killed. They write one line to
// `ready_fd` once clients may connect.
[[noreturn]] void RunRawTcpServer(uint16_t port, int ready_fd);
// The rpma server's region is anonymous memory, or, with `region_file`, that
// file (created, kRegionSize) mapped shared: then a persistent flush writes
// the range back to the file, as it does for a daemon's region.
[[noreturn]] void RunRpmaServer(const std::string &addr, const std::string &port, int ready_fd,
                                const std::string &region_file = "");

std::unique_ptr<Client> ConnectRawTcp(uint16_t port);
// busy_poll: wait for completions by polling the CQ (as perftest does)
// instead of sleeping in rpma_cq_wait.
std::unique_ptr<Client> ConnectRpma(const std::string &addr, const std::string &port,
                                    bool busy_poll);

// How a server admits an rpma connection, for servers other than
// RunRpmaServer's: the private data the request carries, and how to find
// the remote region's and the server's peer-config descriptors in the
// private data of the acceptance (false when it cannot be read).
struct RpmaAdmission {
    std::string request_private_data;
    std::function<bool(const char *accept_data, size_t length, std::string *region_descriptor,
                       std::string *peer_cfg_descriptor)>
        read_accept;
};
std::unique_ptr<Client> ConnectRpma(const std::string &addr, const std::string &port,
                                    bool busy_poll, const RpmaAdmission &admission);

}  // namespace rpma_bench

#endif  // RPMA_BENCH_WORKLOAD_H
