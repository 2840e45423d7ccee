// client_bench: what the client library costs and what replication costs,
// in one run of one client process.
//
//   client_bench [--quick] [--pin CPU] [--csv FILE] [--rpmad PATH] [--dir DIR]
//
// 1. 4 KiB write + persist latency (iodepth 1) through rpma::client::Region
//    on one rpmad against bare rpma_core write + persistent flush to
//    rpma_bench's server (both regions shared file mappings in the same
//    directory, so each persist msyncs on both sides). Floor: <= 1.1.
// 2. The same through a Region on three rpmads against the one-replica
//    Region: the fan-out is parallel, so three cost little more than one.
//    Floor: <= 1.3.
// 3. Streaming 1 MiB writes (a persist every 4 MiB, as rpma_bench's stream)
//    through a one-replica Region against raw TCP (rpma_bench's server, a
//    one-way stream). With a registered buffer (zero copy; the floor,
//    >= 0.8) and through the staging ring (shown).
// Every comparison alternates its two sides in rounds after a warm-up of
// each, as rpma_bench does. The servers (three rpmads with the tcp provider,
// the bare rpma server, the raw TCP server) are started before this process
// has any thread and inherit the --pin affinity.
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "bench/bench_stats.h"
#include "bench/child_processes.h"
#include "bench/delay_proxy.h"
#include "bench/depth.h"
#include "bench/depth_report.h"
#include "bench/grpc_baseline.h"
#include "bench/rounds.h"
#include "bench/workload.h"
#include "rpma/client/region.h"

namespace {

namespace client = ::rpma::client;
using rpma_bench::Client;
using rpma_bench::HumanSize;
using rpma_bench::Summary;

constexpr const char *kProgram = "client_bench";
constexpr uint64_t kLibraryRegionSize = 4 << 20;

struct Options : rpma_bench::DaemonBenchOptions {
    int latency_iterations() const { return quick ? 300 : 20000; }
    size_t stream_total() const { return quick ? (32u << 20) : (256u << 20); }
    int depth_operations() const { return quick ? 300 : 5000; }
};

struct Row {
    std::string key;  // stable name for the CSV
    std::string workload;
    std::string baseline_name;
    size_t size;
    double subject;  // median latency in us, or MiB/s
    double subject_p99;
    double baseline;
    double baseline_p99;
    bool bandwidth;  // higher is better: the floor is a minimum
    double floor;    // 0: none
};

[[noreturn]] void Die(const std::string &message) {
    rpma_bench::Die(kProgram, message);
}

void Check(const client::Status &status, const char *what) {
    if (!status.ok())
        Die(std::string(what) + ": " + status.ToString());
}

// A Region seen as rpma_bench's Client: the same workloads, through the
// library.
class LibraryClient : public Client {
  public:
    // How DurableWriteAtDepth completes its operations.
    enum class Completions { kFutures, kCallbacks };
    // `registered`: the source buffer is registered (zero copy) rather than
    // copied into the staging ring.
    LibraryClient(std::unique_ptr<client::Region> region, bool registered,
                  Completions completions = Completions::kFutures)
        : region_(std::move(region)),
          completions_(completions),
          memory_(rpma_bench::kMaxPayload + kPage) {
        const auto misaligned = reinterpret_cast<uintptr_t>(memory_.data()) % kPage;
        buffer_ = std::span(memory_).subspan(misaligned == 0 ? 0 : kPage - misaligned,
                                             rpma_bench::kMaxPayload);
        for (size_t i = 0; i < buffer_.size(); ++i)
            buffer_[i] = static_cast<std::byte>(i * 31);
        if (registered)
            Check(region_->RegisterBuffer(buffer_), "RegisterBuffer");
    }
    ~LibraryClient() override {
        (void)region_->UnregisterBuffer(buffer_);  // kNotFound when staged
    }

    std::vector<uint64_t> DurableWriteLatency(size_t size, int iterations) override {
        std::vector<uint64_t> samples;
        samples.reserve(iterations);
        const std::span<const std::byte> bytes(buffer_.data(), size);
        for (int i = 0; i < iterations; ++i) {
            const uint64_t start = rpma_bench::NowNs();
            Check(region_->WritePersist(0, bytes), "WritePersist");
            samples.push_back(rpma_bench::NowNs() - start);
        }
        return samples;
    }

    // As rpma_bench's rpma stream: `chunk`-sized writes cycling through
    // kMaxPayload bytes of the region, a persist every 4 MiB (a Batch
    // committed: its writes, then one persist).
    uint64_t Stream(size_t chunk, size_t total) override {
        const size_t per_persist = std::max<size_t>(1, (4 << 20) / chunk);
        client::Batch batch;
        size_t offset = 0;
        const uint64_t start = rpma_bench::NowNs();
        for (size_t sent = 0; sent < total; sent += chunk) {
            const size_t len = std::min(chunk, total - sent);
            if (offset + len > rpma_bench::kMaxPayload)
                offset = 0;
            batch.Write(offset, std::span<const std::byte>(buffer_.data() + offset, len));
            offset += len;
            if (batch.size() == per_persist || sent + chunk >= total) {
                Check(region_->Commit(batch), "Commit");
                batch.Clear();
            }
        }
        return rpma_bench::NowNs() - start;
    }

    // Depth N: N WritePersistAsync futures outstanding from this one
    // thread, each posted at once and completed by the Region's progress
    // thread in submission order; the oldest is waited for, then replaced.
    rpma_bench::DepthResult DurableWriteAtDepth(size_t size, int depth, int operations) override {
        if (completions_ == Completions::kCallbacks)
            return CallbacksAtDepth(size, depth, operations);
        const std::span<const std::byte> bytes(buffer_.data(), size);
        std::vector<std::future<client::Status>> futures(depth);
        std::deque<int> outstanding;
        return rpma_bench::RunAtDepth(
            depth, operations,
            [&](int slot) {
                futures[slot] =
                    region_->WritePersistAsync(static_cast<uint64_t>(slot) * size, bytes);
                outstanding.push_back(slot);
            },
            [&] {
                const int slot = outstanding.front();
                outstanding.pop_front();
                Check(futures[slot].get(), "WritePersistAsync");
                return slot;
            });
    }

    // Depth N through callbacks, as an event loop has them: this thread
    // posts the first N; each completion's callback, on the Region's
    // progress thread, posts the operation that replaces it (no thread hop
    // per operation); this thread waits for the last.
    rpma_bench::DepthResult CallbacksAtDepth(size_t size, int depth, int operations) {
        const std::span<const std::byte> bytes(buffer_.data(), size);
        rpma_bench::DepthResult result;
        result.samples.reserve(operations);
        std::vector<uint64_t> started(depth);
        std::atomic<int> posted{0};
        std::mutex mu;
        std::condition_variable all_done;
        int done = 0;
        std::function<void(int)> post = [&](int slot) {
            started[slot] = rpma_bench::NowNs();
            region_->WritePersistAsync(
                static_cast<uint64_t>(slot) * size, bytes, [&, slot](client::Status s) {
                    Check(s, "WritePersistAsync");
                    result.samples.push_back(rpma_bench::NowNs() - started[slot]);
                    if (posted.fetch_add(1) < operations)
                        post(slot);
                    std::lock_guard lock(mu);
                    if (++done == operations)
                        all_done.notify_one();
                });
        };
        const uint64_t begin = rpma_bench::NowNs();
        for (int slot = 0; slot < depth && posted.fetch_add(1) < operations; ++slot)
            post(slot);
        std::unique_lock lock(mu);
        all_done.wait(lock, [&] { return done == operations; });
        result.elapsed_ns = rpma_bench::NowNs() - begin;
        return result;
    }

    std::vector<uint64_t> ReadLatency(size_t, int) override { Die("not measured here"); }
    std::vector<uint64_t> PingPong(size_t, int) override { Die("not measured here"); }

  private:
    // The source buffer starts on a page, as the bare client's (mmap) does:
    // a 4 KiB write is one page and 64 cache lines on both sides.
    static constexpr size_t kPage = 4096;
    std::unique_ptr<client::Region> region_;
    Completions completions_;
    std::vector<std::byte> memory_;
    std::span<std::byte> buffer_;
};

// `data_addresses`: where to reach each replica's data plane instead of
// where its daemon listens (the delaying proxies); empty: the daemon's own.
std::unique_ptr<client::Region> OpenRegion(const std::vector<std::string> &addresses,
                                           const std::string &name,
                                           const std::vector<std::string> &data_addresses = {},
                                           bool group_commit = true) {
    client::ReplicaSet set;
    set.addresses = addresses;
    set.data_addresses = data_addresses;
    client::OpenOptions options;
    options.create_size = kLibraryRegionSize;
    options.group_commit = group_commit;
    auto region = client::Region::Open(set, name, options);
    if (!region.ok())
        Die("opening region " + name + ": " + region.status().ToString());
    return std::move(*region);
}

Row Latency(const std::string &key, const std::string &workload, const std::string &baseline_name,
            Client &subject, Client &baseline, size_t size, int iterations, double floor) {
    fprintf(stderr, "  measuring %s...\n", workload.c_str());
    rpma_bench::RoundSamples samples = rpma_bench::AlternatingRounds(
        &baseline, &subject, iterations,
        [size](Client &c, int count) { return c.DurableWriteLatency(size, count); });
    const Summary s = rpma_bench::Summarize(std::move(samples.subject));
    const Summary b = rpma_bench::Summarize(std::move(samples.baseline));
    return Row{key,      workload,    baseline_name, size,  s.median_us,
               s.p99_us, b.median_us, b.p99_us,      false, floor};
}

// Streams in rounds, the subject first in the first round.
Row Bandwidth(const std::string &key, const std::string &workload, Client &subject, Client &raw_tcp,
              size_t chunk, size_t total, double floor) {
    fprintf(stderr, "  measuring %s...\n", workload.c_str());
    const rpma_bench::RoundRates rates = rpma_bench::AlternatingStreams(
        &raw_tcp, &subject, chunk, total, rpma_bench::FirstTurn::kSubject);
    return Row{key, workload, "raw TCP", chunk, rates.subject, 0, rates.baseline, 0, true, floor};
}

bool PrintTable(const std::vector<Row> &rows) {
    bool all_met = true;
    printf("\n%-34s %8s %10s %10s %-10s %10s %10s %7s  %s\n", "workload", "size", "client",
           "client p99", "baseline", "median", "p99", "ratio", "floor");
    for (const Row &row : rows) {
        const double ratio = row.subject / row.baseline;
        std::string floor = "-";
        if (row.floor > 0) {
            const bool met = row.bandwidth ? ratio >= row.floor : ratio <= row.floor;
            all_met = all_met && met;
            char text[32];
            snprintf(text, sizeof(text), "%s %.2f %s", row.bandwidth ? ">=" : "<=", row.floor,
                     met ? "met" : "NOT met");
            floor = text;
        }
        printf("%-34s %8s %10.1f %10.1f %-10s %10.1f %10.1f %7.2f  %s\n", row.workload.c_str(),
               HumanSize(row.size).c_str(), row.subject, row.subject_p99, row.baseline_name.c_str(),
               row.baseline, row.baseline_p99, ratio, floor.c_str());
    }
    printf(
        "(latency: microseconds, median and p99, iodepth 1; stream: MiB/s, median of 8 rounds)\n");
    return all_met;
}

void WriteCsv(const std::string &path, const std::vector<Row> &rows) {
    FILE *f = fopen(path.c_str(), "w");
    if (f == nullptr)
        Die("cannot write " + path + ": " + strerror(errno));
    fprintf(f, "workload,size,client,client_p99,baseline,baseline_p99,ratio\n");
    for (const Row &row : rows)
        fprintf(f, "%s,%zu,%.3f,%.3f,%.3f,%.3f,%.4f\n", row.key.c_str(), row.size, row.subject,
                row.subject_p99, row.baseline, row.baseline_p99, row.subject / row.baseline);
    fclose(f);
    fprintf(stderr, "wrote %s\n", path.c_str());
}

constexpr const char *kOne = "library, 1 replica";
constexpr const char *kThree = "library, 3 replicas";
constexpr const char *kBare = "bare rpma_core";
constexpr const char *kTcp = "raw TCP";
// Every replica's data plane behind its own delaying proxy.
constexpr const char *kOneFar = "library, 1 replica, proxied";
constexpr const char *kThreeFar = "library, 3 replicas, proxied";
constexpr const char *kBareFar = "bare rpma_core, proxied";
// Completed through callbacks that post the next operation (an event loop).
constexpr const char *kOneLoop = "library, 1 replica, callbacks";
constexpr const char *kThreeLoop = "library, 3 replicas, callbacks";
// The library without group commit (each persist posted at once).
constexpr const char *kOneEach = "library, 1 replica, no group commit";
constexpr const char *kThreeEach = "library, 3 replicas, no group commit";
// What a user would write instead: three gRPC servers msyncing a mapped file.
constexpr const char *kGrpc = "gRPC x 3, msync";

// The floors at depth (#25), printed with PASS or BELOW.
void PrintDepthFloors(const rpma_bench::DepthReport &d) {
    auto iops = [&](const char *series, int depth) { return d.At(series, depth).iops; };
    rpma_bench::PrintFloors(
        "floors at depth (ratios; printed, never failing the run)",
        {{"1 replica depth 16 / bare rpma_core depth 16", iops(kOne, 16) / iops(kBare, 16), 0.8,
          true},
         {"1 replica depth 16 / 1 replica depth 1", iops(kOne, 16) / iops(kOne, 1), 1.5, true},
         {"3 replicas depth 16 / 3 replicas depth 1", iops(kThree, 16) / iops(kThree, 1), 1.5,
          true},
         {"proxied: 3 / 1 replica p50 latency at depth 1",
          d.At(kThreeFar, 1).p50_us / d.At(kOneFar, 1).p50_us, 1.1, false},
         {"proxied: 3 / 1 replica IOPS at depth 16", iops(kThreeFar, 16) / iops(kOneFar, 16), 0.9,
          true}});
    printf("  %-62s %6.2f  (no floor: the tcp provider's own pipelining)\n",
           "bare rpma_core depth 16 / raw TCP depth 16", iops(kBare, 16) / iops(kTcp, 16));
    for (int depth : {1, 16}) {
        const std::string what =
            "proxied: 1 replica / bare rpma_core p99 latency at depth " + std::to_string(depth);
        printf("  %-62s %6.2f  (no floor: the library's own tail)\n", what.c_str(),
               d.At(kOneFar, depth).p99_us / d.At(kBareFar, depth).p99_us);
    }
    printf("  %-62s %6.2f  (no floor: CPU-bound on loopback)\n",
           "3 replicas / 1 replica IOPS at depth 16", iops(kThree, 16) / iops(kOne, 16));
    for (const auto &[loop, futures] : {std::pair{kOneLoop, kOne}, std::pair{kThreeLoop, kThree}}) {
        const std::string what = std::string(loop + 9) + " / futures IOPS at depth 16";
        printf("  %-62s %6.2f  (no floor: no hand-off to a waiting thread)\n", what.c_str(),
               iops(loop, 16) / iops(futures, 16));
    }
    for (const auto &[with, without] : {std::pair{kOne, kOneEach}, std::pair{kThree, kThreeEach}}) {
        const std::string what = std::string(with + 9) + " depth 16, group commit / without";
        printf("  %-62s %6.2f  (no floor)\n", what.c_str(), iops(with, 16) / iops(without, 16));
    }
    for (const char *series : {kThree, kOne})
        for (int depth : {1, 16}) {
            const std::string what = std::string(series + 9) + " / gRPC x 3 p50 latency at depth " +
                                     std::to_string(depth);
            printf("  %-62s %6.2f  (no floor yet; the aim is <= 0.30)\n", what.c_str(),
                   d.At(series, depth).p50_us / d.At(kGrpc, depth).p50_us);
        }
}

// --csv FILE: the latency and stream rows in FILE, the depth curves beside
// it (FILE without .csv, then -depth.csv).
std::string DepthCsvPath(const std::string &csv) {
    const std::string stem =
        csv.size() > 4 && csv.ends_with(".csv") ? csv.substr(0, csv.size() - 4) : csv;
    return stem + "-depth.csv";
}

// --delay-us US (client_bench's own flag): the delaying proxies' round trip.
int TakeDelayFlag(int &argc, char **argv) {
    int delay_us = 200;
    for (int i = 1; i + 1 < argc; ++i)
        if (strcmp(argv[i], "--delay-us") == 0) {
            delay_us = atoi(argv[i + 1]);
            if (delay_us < 0)
                Die("--delay-us: a round trip in microseconds, 0 or more");
            for (int j = i; j + 2 <= argc; ++j)
                argv[j] = argv[j + 2];
            argc -= 2;
            break;
        }
    return delay_us;
}

}  // namespace

int main(int argc, char **argv) {
    const int delay_us = TakeDelayFlag(argc, argv);
    const Options opt{
        rpma_bench::ParseDaemonBenchOptions(argc, argv, "the daemon to replicate to")};
    const std::string rpmad =
        opt.rpmad_path.empty() ? rpma_bench::RunfilesRpmad(kProgram, argv[0]) : opt.rpmad_path;
    rpma_bench::PinTo(opt.pin_cpu);
    rpma_bench::ChildProcesses children(kProgram, opt.dir);
    const std::string dir = children.temp_dir();

    const uint16_t tcp_port = rpma_bench::FreePort();
    children.StartServer([&](int fd) { rpma_bench::RunRawTcpServer(tcp_port, fd); },
                         "the raw TCP server");
    const std::string bare_port = std::to_string(rpma_bench::FreePort());
    children.StartServer(
        [&](int fd) {
            rpma_bench::RunRpmaServer("127.0.0.1", bare_port, fd, dir + "/bare.region");
        },
        "the bare rpma server");
    // The bare client behind a proxy as well, to a server of its own (one
    // serves a connection at a time): what rpma_core alone gets at the
    // proxied round trip, the proxied library rows' baseline.
    const uint16_t bare_far_upstream = rpma_bench::FreePort();
    children.StartServer(
        [&](int fd) {
            rpma_bench::RunRpmaServer("127.0.0.1", std::to_string(bare_far_upstream), fd,
                                      dir + "/bare-far.region");
        },
        "the proxied bare rpma server");
    const uint16_t bare_far_port = rpma_bench::FreePort();
    children.StartServer(
        [&](int fd) { rpma_bench::RunDelayProxy(bare_far_port, bare_far_upstream, delay_us, fd); },
        "the bare server's delaying proxy");
    std::vector<uint16_t> grpc_ports;
    for (int i = 0; i < 3; ++i) {
        const uint16_t port = rpma_bench::FreePort();
        const std::string file = dir + "/grpc" + std::to_string(i) + ".region";
        children.StartServer([&](int fd) { rpma_bench::RunGrpcWriteServer(port, file, fd); },
                             "a gRPC write server");
        grpc_ports.push_back(port);
    }
    std::vector<std::string> controls, proxied;
    for (int i = 0; i < 3; ++i) {
        const std::string control = "127.0.0.1:" + std::to_string(rpma_bench::FreePort());
        const uint16_t data_port = rpma_bench::FreePort();
        const std::string data = "127.0.0.1:" + std::to_string(data_port);
        const uint16_t proxy_port = rpma_bench::FreePort();
        children.StartServer(
            [&](int fd) { rpma_bench::RunDelayProxy(proxy_port, data_port, delay_us, fd); },
            "the delaying proxy");
        proxied.push_back("127.0.0.1:" + std::to_string(proxy_port));
        const std::string pool = dir + "/pool" + std::to_string(i);
        children.StartProgram({rpmad, "--pool-dir", pool, "--listen", control, "--data-listen",
                               data, "--provider", "tcp"},
                              dir + "/rpmad" + std::to_string(i) + ".log", "rpmad: ready:");
        controls.push_back(control);
    }
    fprintf(stderr,
            "client_bench: the client library on %s (tcp provider) x 1 and x 3, bare rpma_core "
            "and raw TCP on 127.0.0.1%s%s\n  pools and the bare server's region in %s\n",
            rpmad.c_str(), opt.quick ? " (quick)" : "",
            opt.pin_cpu >= 0 ? " (pinned to one CPU)" : "", dir.c_str());

    std::vector<Row> rows;
    {
        LibraryClient one(OpenRegion({controls[0]}, "one"), false);
        LibraryClient three(OpenRegion(controls, "three"), false);
        std::unique_ptr<Client> bare = rpma_bench::ConnectRpma("127.0.0.1", bare_port, false);
        rows.push_back(Latency("write_persist_1_replica_vs_bare", "write+persist, 1 replica",
                               "bare rpma", one, *bare, 4096, opt.latency_iterations(), 1.1));
        rows.push_back(Latency("write_persist_3_replicas_vs_1", "write+persist, 3 replicas",
                               "1 replica", three, one, 4096, opt.latency_iterations(), 1.3));
    }
    {
        LibraryClient registered(OpenRegion({controls[0]}, "stream-registered"), true);
        LibraryClient staged(OpenRegion({controls[0]}, "stream-staged"), false);
        std::unique_ptr<Client> tcp = rpma_bench::ConnectRawTcp(tcp_port);
        rows.push_back(Bandwidth("stream_registered_vs_tcp", "stream, 1 replica, registered",
                                 registered, *tcp, 1 << 20, opt.stream_total(), 0.8));
        rows.push_back(Bandwidth("stream_staged_vs_tcp", "stream, 1 replica, staged", staged, *tcp,
                                 1 << 20, opt.stream_total(), 0));
    }
    rpma_bench::DepthReport depth;
    {
        LibraryClient one(OpenRegion({controls[0]}, "depth-one"), false);
        LibraryClient three(OpenRegion(controls, "depth-three"), false);
        LibraryClient one_loop(OpenRegion({controls[0]}, "depth-one-loop"), false,
                               LibraryClient::Completions::kCallbacks);
        LibraryClient three_loop(OpenRegion(controls, "depth-three-loop"), false,
                                 LibraryClient::Completions::kCallbacks);
        LibraryClient one_each(OpenRegion({controls[0]}, "depth-one-each", {}, false), false);
        LibraryClient three_each(OpenRegion(controls, "depth-three-each", {}, false), false);
        std::unique_ptr<Client> bare = rpma_bench::ConnectRpma("127.0.0.1", bare_port, false);
        std::unique_ptr<Client> tcp = rpma_bench::ConnectRawTcp(tcp_port);
        std::unique_ptr<Client> bare_far =
            rpma_bench::ConnectRpma("127.0.0.1", std::to_string(bare_far_port), false);
        LibraryClient one_far(OpenRegion({controls[0]}, "depth-one-far", {proxied[0]}), false);
        LibraryClient three_far(OpenRegion(controls, "depth-three-far", proxied), false);
        std::unique_ptr<Client> grpc = rpma_bench::ConnectGrpcWriters(grpc_ports);
        depth.Measure({{kOne, &one},
                       {kOneLoop, &one_loop},
                       {kThree, &three},
                       {kThreeLoop, &three_loop},
                       {kOneEach, &one_each},
                       {kThreeEach, &three_each},
                       {kBare, bare.get()},
                       {kTcp, tcp.get()},
                       {kBareFar, bare_far.get()},
                       {kOneFar, &one_far},
                       {kThreeFar, &three_far},
                       {kGrpc, grpc.get()}},
                      {1, 4, 16, 64}, 4096, opt.depth_operations());
    }
    children.CleanUp();

    const bool met = PrintTable(rows);
    if (!opt.csv_path.empty())
        WriteCsv(opt.csv_path, rows);
    printf("%s\n", met ? "all floors met" : "SOME FLOORS NOT MET");
    printf(
        "\n(proxied: every replica's data plane behind its own delaying proxy adding a %d us "
        "round trip; --delay-us US)",
        delay_us);
    depth.PrintTable("4 KiB write + persist at depth (operations outstanding from one thread)");
    PrintDepthFloors(depth);
    if (!opt.csv_path.empty())
        depth.WriteCsv(DepthCsvPath(opt.csv_path));
    // Three replicas run in parallel only with a CPU for the client and one
    // for each rpmad; with fewer (or pinned) their work adds up instead.
    const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    if (opt.pin_cpu >= 0 || cpus < 4)
        printf("note: %s: the 3-replica fan-out's floor is judged with 4 CPUs or more, unpinned\n",
               opt.pin_cpu >= 0 ? "pinned to one CPU" : (std::to_string(cpus) + " CPUs").c_str());
    return 0;
}
