// What the benchmarks share: comparing two clients in alternating rounds
// (latency and bandwidth), free loopback ports, and sizes written for
// people.
#ifndef RPMA_BENCH_ROUNDS_H
#define RPMA_BENCH_ROUNDS_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "bench/workload.h"
#include "tests/support/free_port.h"

namespace rpma_bench {

// Both clients run the same work, interleaved in alternating rounds after
// a warm-up of each, so that whatever the machine does meanwhile (other
// load, where the scheduler puts the processes) weighs on both alike.
constexpr int kRounds = 10;

// Which side goes first in round 0; the sides swap every round after.
enum class FirstTurn { kBaseline, kSubject };

// The order every comparison shares: `warm_up` on the baseline, then on
// the subject; then `rounds` rounds of `turn(client, round, is_subject)`
// on each side, alternating which goes first. A null client is skipped
// (diagnostic runs of one side).
inline void Alternate(Client *baseline, Client *subject, int rounds, FirstTurn first,
                      const std::function<void(Client &)> &warm_up,
                      const std::function<void(Client &, int, bool)> &turn) {
    for (Client *client : {baseline, subject})
        if (client != nullptr)
            warm_up(*client);
    for (int round = 0; round < rounds; ++round) {
        const bool subject_first = (round % 2 == 0) == (first == FirstTurn::kSubject);
        for (bool is_subject : {subject_first, !subject_first}) {
            Client *client = is_subject ? subject : baseline;
            if (client != nullptr)
                turn(*client, round, is_subject);
        }
    }
}

struct RoundSamples {
    std::vector<uint64_t> baseline;
    std::vector<uint64_t> subject;
};

// Latency: `measure(client, count)` runs `count` operations on `client`
// and returns one sample each; kRounds rounds share `iterations` per side,
// after a warm-up of a tenth.
inline RoundSamples AlternatingRounds(
    Client *baseline, Client *subject, int iterations,
    const std::function<std::vector<uint64_t>(Client &, int)> &measure) {
    RoundSamples samples;
    Alternate(
        baseline, subject, kRounds, FirstTurn::kBaseline,
        [&](Client &client) { measure(client, iterations / 10 + 1); },
        [&](Client &client, int round, bool is_subject) {
            const int count = iterations / kRounds + (round < iterations % kRounds ? 1 : 0);
            if (count == 0)
                return;
            std::vector<uint64_t> got = measure(client, count);
            std::vector<uint64_t> *out = is_subject ? &samples.subject : &samples.baseline;
            out->insert(out->end(), got.begin(), got.end());
        });
    return samples;
}

// Streaming runs eight rounds of an eighth of the total each.
constexpr int kStreamRounds = 8;

struct RoundRates {
    double baseline = 0;  // MiB/s; 0: the side did not run
    double subject = 0;
};

// Bandwidth: `chunk`-sized Stream()s of total/16 to warm up, then
// kStreamRounds rounds of total/kStreamRounds each; a side's rate is the
// median of its rounds' (a round the machine disturbed, which happens to
// either side, then does not decide the ratio).
inline RoundRates AlternatingStreams(Client *baseline, Client *subject, size_t chunk, size_t total,
                                     FirstTurn first) {
    const size_t per_round = total / kStreamRounds;
    std::vector<double> rates[2];  // baseline, subject
    Alternate(
        baseline, subject, kStreamRounds, first,
        [&](Client &client) { client.Stream(chunk, total / 16); },
        [&](Client &client, int, bool is_subject) {
            const uint64_t ns = client.Stream(chunk, per_round);
            rates[is_subject].push_back((per_round / double(1 << 20)) / (ns / 1e9));
        });
    const auto median = [](std::vector<double> r) {
        if (r.empty())
            return 0.0;
        std::sort(r.begin(), r.end());
        const size_t half = r.size() / 2;
        return r.size() % 2 == 1 ? r[half] : (r[half - 1] + r[half]) / 2;
    };
    return RoundRates{median(rates[0]), median(rates[1])};
}

// A TCP port that nothing is bound to now (tests/support/free_port.h), never
// the same one twice in a process; exits the benchmark when there is none.
inline uint16_t FreePort() {
    const uint16_t port = rpma::testing::FreePort();
    if (port == 0) {
        fprintf(stderr, "picking a free port: none below the ephemeral range is free\n");
        exit(1);
    }
    return port;
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
