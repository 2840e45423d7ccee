// What rpma_bench and rpmad_bench share: comparing two clients in
// alternating rounds, free loopback ports, and sizes written for people.
#ifndef RPMA_BENCH_ROUNDS_H
#define RPMA_BENCH_ROUNDS_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "bench/workload.h"

namespace rpma_bench {

// Both clients run the same iterations, interleaved in alternating rounds
// after a warm-up of each, so that whatever the machine does meanwhile
// (other load, where the scheduler puts the processes) weighs on both alike.
constexpr int kRounds = 10;

struct RoundSamples {
    std::vector<uint64_t> baseline;
    std::vector<uint64_t> subject;
};

// `measure(client, count)` runs `count` operations on `client` and returns
// one sample each. A null client is skipped (diagnostic runs of one side).
inline RoundSamples AlternatingRounds(
    Client *baseline, Client *subject, int iterations,
    const std::function<std::vector<uint64_t>(Client &, int)> &measure) {
    for (Client *client : {baseline, subject})
        if (client != nullptr)
            measure(*client, iterations / 10 + 1);
    RoundSamples samples;
    auto run = [&](Client *client, std::vector<uint64_t> *out, int count) {
        if (client == nullptr || count == 0)
            return;
        std::vector<uint64_t> got = measure(*client, count);
        out->insert(out->end(), got.begin(), got.end());
    };
    for (int round = 0; round < kRounds; ++round) {
        const int count = iterations / kRounds + (round < iterations % kRounds ? 1 : 0);
        if (round % 2 == 0) {
            run(baseline, &samples.baseline, count);
            run(subject, &samples.subject, count);
        } else {
            run(subject, &samples.subject, count);
            run(baseline, &samples.baseline, count);
        }
    }
    return samples;
}

// A TCP port on 127.0.0.1 that nothing listened on a moment ago; exits the
// benchmark when there is none.
inline uint16_t FreePort() {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (fd < 0 || bind(fd, reinterpret_cast<sockaddr *>(&addr), sizeof(addr)) != 0 ||
        getsockname(fd, reinterpret_cast<sockaddr *>(&addr), &len) != 0) {
        perror("picking a free port");
        exit(1);
    }
    close(fd);
    return ntohs(addr.sin_port);
}

inline std::string HumanSize(size_t size) {
    if (size >= (1 << 20))
        return std::to_string(size >> 20) + " MiB";
    if (size >= (1 << 10))
        return std::to_string(size >> 10) + " KiB";
    return std::to_string(size) + " B";
}

}  // namespace rpma_bench

#endif  // RPMA_BENCH_ROUNDS_H
