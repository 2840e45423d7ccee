// rpma_bench: librpma over the chosen provider (tcp on hosts without an RNIC)
// against raw TCP on loopback, in one run, with the ratios.
//
//   rpma_bench [--quick] [--csv FILE] [--addr ADDR] [--busy-poll]
//   rpma_bench --verbs --addr ADDR [--csv FILE]
//   rpma_bench --only write|pingpong|stream[:SIZE] [--transport rpma|tcp]
//              [--iterations N] [--pin CPU]
//
// The two transports run interleaved, in alternating rounds of each
// measurement. --pin puts every process of the benchmark on one CPU: both
// ends of each connection then share it, which takes cross-CPU wake-up
// latency (large and erratic on busy virtual machines) out of the
// comparison and leaves the work per operation. The --only/--transport/
// --iterations options are for diagnosis (strace -c, perf) of one workload;
// the floors are judged on full runs of both. --verbs measures rpma alone
// (read and write+flush latency, streaming) for bench/vm/verbs_bench.sh,
// which runs perftest as the baseline on the same RDMA device; --addr
// serves rpma on that device's address and --busy-poll polls completion
// queues as perftest does.
//
// Servers run in child processes forked before anything else starts a
// thread; each reports readiness through a pipe.
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "bench/bench_stats.h"
#include "bench/rounds.h"
#include "bench/workload.h"

namespace {

using rpma_bench::Client;
using rpma_bench::FreePort;
using rpma_bench::HumanSize;

struct Options {
    bool quick = false;
    bool verbs = false;
    bool busy_poll = false;
    std::string addr = "127.0.0.1";
    int pin_cpu = -1;  // >= 0: every benchmark process and thread on this CPU
    std::string csv_path;
    std::string only_kind;  // empty: every workload
    size_t only_size = 0;   // 0: every size of the kind
    bool run_rpma = true;
    bool run_tcp = true;
    int iterations = 0;  // 0: by size

    bool Wants(const char *kind, size_t size) const {
        return (only_kind.empty() || only_kind == kind) && (only_size == 0 || only_size == size);
    }
};

struct Row {
    std::string key;  // stable name for the CSV: write_flush_latency, read_latency, ...
    std::string workload;
    size_t size;
    double rpma;  // median latency in us, or MiB/s
    double rpma_p99;
    double tcp;
    double tcp_p99;
    bool higher_is_better;
    double floor;  // 0 = no floor; else the ratio rpma/tcp must not cross it
};

// Forks a server and waits for its "ready" line.
pid_t StartServer(const std::function<void(int)> &run) {
    int fds[2];
    if (pipe(fds) != 0) {
        perror("pipe");
        exit(1);
    }
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        run(fds[1]);
        _exit(1);
    }
    close(fds[1]);
    char line[16] = {};
    if (read(fds[0], line, sizeof(line) - 1) <= 0 || strncmp(line, "ready", 5) != 0) {
        fprintf(stderr, "a benchmark server failed to start\n");
        exit(1);
    }
    close(fds[0]);
    return pid;
}

int Iterations(const Options &opt, size_t size) {
    if (opt.iterations > 0)
        return opt.iterations;
    // Enough samples that the median, which the floors are judged on, moves
    // by less than the floors' margins between runs. (--verbs keeps the
    // count its VM run compares with perftest at, under emulation.)
    int wanted = opt.quick ? 300 : opt.verbs ? 3000 : 20000;
    size_t budget = opt.quick ? (64u << 20) : (512u << 20);  // bytes per measurement
    return static_cast<int>(std::max<size_t>(50, std::min<size_t>(wanted, budget / size)));
}

void Progress(const std::string &what) {
    fprintf(stderr, "  measuring %s...\n", what.c_str());
}

// A null client is skipped (diagnostic runs of one transport).
Row Latency(const std::string &key, const std::string &name, Client *rpma, Client *tcp, size_t size,
            int iterations, double floor, std::vector<uint64_t> (Client::*workload)(size_t, int)) {
    Progress(name + " " + HumanSize(size));
    rpma_bench::RoundSamples samples = rpma_bench::AlternatingRounds(
        tcp, rpma, iterations,
        [&](Client &client, int count) { return (client.*workload)(size, count); });
    std::vector<uint64_t> tcp_samples = std::move(samples.baseline);
    std::vector<uint64_t> rpma_samples = std::move(samples.subject);
    const rpma_bench::Summary t = rpma_bench::Summarize(std::move(tcp_samples));
    const rpma_bench::Summary r = rpma_bench::Summarize(std::move(rpma_samples));
    return Row{key, name, size, r.median_us, r.p99_us, t.median_us, t.p99_us, false, floor};
}

// A null client is skipped (diagnostic runs of one transport).
Row Bandwidth(Client *rpma, Client *tcp, size_t chunk, size_t total, double floor) {
    Progress("stream " + HumanSize(chunk) + " chunks");
    const rpma_bench::RoundRates rates =
        rpma_bench::AlternatingStreams(tcp, rpma, chunk, total, rpma_bench::FirstTurn::kBaseline);
    const double t = rates.baseline;
    const double r = rates.subject;
    return Row{"stream_write", "stream write (MiB/s)", chunk, r, 0, t, 0, true, floor};
}

bool PrintTable(const std::vector<Row> &rows) {
    bool all_met = true;
    printf("\n%-26s %8s %12s %10s %12s %10s %9s  %s\n", "workload", "size", "rpma", "rpma p99",
           "raw tcp", "tcp p99", "rpma/tcp", "floor");
    for (const Row &row : rows) {
        double ratio = row.tcp > 0 ? row.rpma / row.tcp : 0;  // 0: no baseline ran
        std::string floor = "-";
        if (row.floor > 0 && row.tcp > 0) {
            bool met = row.higher_is_better ? ratio >= row.floor : ratio <= row.floor;
            all_met = all_met && met;
            char text[32];
            snprintf(text, sizeof(text), "%s %.2f %s",
                     row.higher_is_better ? ">=" : "<=", row.floor, met ? "met" : "MISSED");
            floor = text;
        }
        if (row.higher_is_better)
            printf("%-26s %8s %12.0f %10s %12.0f %10s %9.2f  %s\n", row.workload.c_str(),
                   HumanSize(row.size).c_str(), row.rpma, "", row.tcp, "", ratio, floor.c_str());
        else
            printf("%-26s %8s %12.1f %10.1f %12.1f %10.1f %9.2f  %s\n", row.workload.c_str(),
                   HumanSize(row.size).c_str(), row.rpma, row.rpma_p99, row.tcp, row.tcp_p99, ratio,
                   floor.c_str());
    }
    printf("(latencies in microseconds: median and p99; bandwidth in MiB/s)\n");
    return all_met;
}

void WriteCsv(const std::string &path, const std::vector<Row> &rows) {
    FILE *f = fopen(path.c_str(), "w");
    if (f == nullptr) {
        perror(path.c_str());
        exit(1);
    }
    fprintf(f, "workload,size,rpma,rpma_p99,tcp,tcp_p99,ratio\n");
    for (const Row &row : rows)
        fprintf(f, "%s,%zu,%.3f,%.3f,%.3f,%.3f,%.4f\n", row.key.c_str(), row.size, row.rpma,
                row.rpma_p99, row.tcp, row.tcp_p99, row.tcp > 0 ? row.rpma / row.tcp : 0);
    fclose(f);
    fprintf(stderr, "wrote %s (plot it with bench/plot.sh %s)\n", path.c_str(), path.c_str());
}

}  // namespace

int main(int argc, char **argv) {
    Options opt;
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--quick") == 0) {
            opt.quick = true;
        } else if (strcmp(argv[i], "--csv") == 0 && i + 1 < argc) {
            opt.csv_path = argv[++i];
        } else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
            std::string only = argv[++i];
            size_t colon = only.find(':');
            opt.only_kind = only.substr(0, colon);
            if (colon != std::string::npos)
                opt.only_size = strtoull(only.c_str() + colon + 1, nullptr, 10);
        } else if (strcmp(argv[i], "--transport") == 0 && i + 1 < argc) {
            opt.run_rpma = strcmp(argv[i + 1], "tcp") != 0;
            opt.run_tcp = strcmp(argv[i + 1], "rpma") != 0;
            ++i;
        } else if (strcmp(argv[i], "--iterations") == 0 && i + 1 < argc) {
            opt.iterations = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--pin") == 0 && i + 1 < argc) {
            opt.pin_cpu = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--addr") == 0 && i + 1 < argc) {
            opt.addr = argv[++i];
        } else if (strcmp(argv[i], "--busy-poll") == 0) {
            opt.busy_poll = true;
        } else if (strcmp(argv[i], "--verbs") == 0) {
            opt.verbs = true;
            opt.run_tcp = false;
        } else {
            fprintf(stderr,
                    "usage: %s [--quick] [--csv FILE] [--only write|read|pingpong|stream[:SIZE]]\n"
                    "          [--transport rpma|tcp] [--iterations N] [--pin CPU]\n"
                    "          [--addr ADDR] [--busy-poll] [--verbs]\n",
                    argv[0]);
            return 2;
        }
    }

    if (opt.pin_cpu >= 0) {
        // Before the servers fork and any thread starts: all inherit it.
        cpu_set_t cpus;
        CPU_ZERO(&cpus);
        CPU_SET(opt.pin_cpu, &cpus);
        if (sched_setaffinity(0, sizeof(cpus), &cpus) != 0) {
            perror("sched_setaffinity");
            return 2;
        }
    }
    uint16_t tcp_port = FreePort();
    std::string rpma_port = std::to_string(FreePort());
    pid_t tcp_server = -1, rpma_server = -1;
    if (opt.run_tcp)
        tcp_server = StartServer([&](int fd) { rpma_bench::RunRawTcpServer(tcp_port, fd); });
    if (opt.run_rpma)
        rpma_server =
            StartServer([&](int fd) { rpma_bench::RunRpmaServer(opt.addr, rpma_port, fd); });

    std::vector<Row> rows;
    {
        std::unique_ptr<Client> tcp, rpma;
        if (opt.run_tcp)
            tcp = rpma_bench::ConnectRawTcp(tcp_port);
        if (opt.run_rpma)
            rpma = rpma_bench::ConnectRpma(opt.addr, rpma_port, opt.busy_poll);
        fprintf(stderr, "rpma_bench: rpma (RPMA_PROVIDER=%s) on %s%s%s%s\n",
                getenv("RPMA_PROVIDER") ? getenv("RPMA_PROVIDER") : "auto", opt.addr.c_str(),
                opt.run_tcp ? " vs raw TCP on 127.0.0.1" : "", opt.quick ? " (quick)" : "",
                opt.pin_cpu >= 0 ? " (pinned to one CPU)" : "");
        if (opt.pin_cpu < 0 && opt.run_tcp && opt.run_rpma && !opt.verbs)
            fprintf(stderr,
                    "rpma_bench: not pinned: where the scheduler puts each side decides whether "
                    "a round trip\n  pays cross-CPU wake-ups, differently for each transport; "
                    "the floors are read with --pin 0\n");
        const std::vector<size_t> write_sizes =
            opt.verbs ? std::vector<size_t>{8, 4096}
                      : std::vector<size_t>{8, 64, 512, 4096, 32768, 262144, 1048576};
        for (size_t size : write_sizes)
            if (opt.Wants("write", size))
                rows.push_back(Latency("write_flush_latency", "write+flush latency (us)",
                                       rpma.get(), tcp.get(), size, Iterations(opt, size),
                                       size == 4096 ? 1.3 : 0, &Client::DurableWriteLatency));
        for (size_t size : {8u, 4096u})
            if (opt.Wants("read", size))
                rows.push_back(Latency("read_latency", "read latency (us)", rpma.get(), tcp.get(),
                                       size, Iterations(opt, size), 0, &Client::ReadLatency));
        for (size_t size : {64u, 4096u})
            if (!opt.verbs && opt.Wants("pingpong", size))
                rows.push_back(Latency("pingpong_latency", "ping-pong latency (us)", rpma.get(),
                                       tcp.get(), size, Iterations(opt, size), 1.3,
                                       &Client::PingPong));
        size_t total = opt.verbs ? (64u << 20) : opt.quick ? (128u << 20) : (size_t{2} << 30);
        if (opt.Wants("stream", 64 << 10))
            rows.push_back(Bandwidth(rpma.get(), tcp.get(), 64 << 10, total, 0));
        if (opt.Wants("stream", 1 << 20))
            rows.push_back(Bandwidth(rpma.get(), tcp.get(), 1 << 20, total, 0.8));
    }
    for (pid_t server : {tcp_server, rpma_server}) {
        if (server > 0) {
            kill(server, SIGKILL);
            waitpid(server, nullptr, 0);
        }
    }

    bool met = PrintTable(rows);
    if (!opt.csv_path.empty())
        WriteCsv(opt.csv_path, rows);
    printf("%s\n", met ? "all floors met" : "SOME FLOORS MISSED");
    return 0;
}
