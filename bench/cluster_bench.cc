// cluster_bench: what cluster mode (issue #21) costs against the static
// replica set, in one run: three etcd members and four rpmads on loopback
// (zones a, b, c, c: a region's three replicas go to distinct zones, the
// fourth node is where a dead node's replica is placed).
//
//   cluster_bench [--opens N] [--ops N] [--repair-size SIZE] [--death-size SIZE]
//
// 1. Open latency: Region::Open by name through etcd (record read, writer
//    lease, sessions) against Region::Open of the same three daemons by
//    their addresses; p50/p99 over N opens each, alternating rounds.
// 2. 4 KiB write + persist through the cluster region against a static
//    region on the same three daemons, alternating rounds (rounds.h's
//    order). etcd is off the write path: floor <= 1.05.
// 3. Repair: a SIZE region whose third replica missed all of it (its
//    daemon killed during a full overwrite, then restarted) is brought back
//    in sync by the cluster (the controller asks, the copy is made), timed
//    from the restart to the record's in-sync set holding all three;
//    against a plain copy: the same SIZE written through the client (put).
// 4. A node's death: SIGKILL of a daemon holding a replica of a SIZE region
//    (lease and cluster.replace_after_seconds short), timed until the
//    record places the replica elsewhere and all three are in sync.
// Sizes and counts are flags so that a smoke test runs it small.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_stats.h"
#include "bench/child_processes.h"
#include "bench/rounds.h"
#include "cluster/etcd.h"
#include "cluster/records.h"
#include "rpma/client/region.h"
#include "tests/integration/etcd_cluster.h"
#include "tests/integration/process.h"
#include "tests/integration/rpmad_harness.h"

namespace {

namespace client = ::rpma::client;
namespace testing = ::rpma::testing;
namespace v1 = ::rpmad::v1;
using rpma_bench::HumanSize;
using rpma_bench::NowNs;
using rpma_bench::Summarize;
using rpma_bench::Summary;

constexpr const char *kProgram = "cluster_bench";
constexpr const char *kZones[] = {"a", "b", "c", "c"};
// A dead node is dead to the cluster after its lease (s), and its replicas
// are placed elsewhere kReplaceAfter seconds later: short, so that part 4
// measures the cluster's reaction rather than a default of minutes, long
// enough that part 3's restart (well under a second) is repaired in place.
constexpr int kLeaseSeconds = 3;
constexpr int kReplaceAfter = 5;
constexpr size_t kChunk = 1 << 20;  // put and overwrite in 1 MiB writes

// Fatal errors unwind to main, so that the daemons' and etcd's Process
// objects kill their processes on the way out.
struct Fatal : std::runtime_error {
    using std::runtime_error::runtime_error;
};

void Check(const client::Status &status, const std::string &what) {
    if (!status.ok())
        throw Fatal(what + ": " + status.ToString());
}

struct Options {
    int opens = 200;
    int ops = 20000;
    size_t repair_size = size_t(256) << 20;
    size_t death_size = size_t(64) << 20;
};

size_t ParseSize(const std::string &text) {
    char *end = nullptr;
    const unsigned long long n = strtoull(text.c_str(), &end, 10);
    const std::string unit(end);
    if (unit.empty())
        return n;
    if (unit == "K" || unit == "KiB")
        return n << 10;
    if (unit == "M" || unit == "MiB")
        return n << 20;
    if (unit == "G" || unit == "GiB")
        return n << 30;
    rpma_bench::Die(kProgram, "bad size: " + text);
}

Options Parse(int argc, char **argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        const bool has_value = i + 1 < argc;
        if (arg == "--opens" && has_value)
            o.opens = std::max(1, atoi(argv[++i]));
        else if (arg == "--ops" && has_value)
            o.ops = std::max(10, atoi(argv[++i]));
        else if (arg == "--repair-size" && has_value)
            o.repair_size = ParseSize(argv[++i]);
        else if (arg == "--death-size" && has_value)
            o.death_size = ParseSize(argv[++i]);
        else
            rpma_bench::Die(kProgram,
                            "usage: cluster_bench [--opens N] [--ops N] [--repair-size SIZE] "
                            "[--death-size SIZE]");
    }
    o.repair_size = std::max(kChunk, o.repair_size / kChunk * kChunk);
    o.death_size = std::max(kChunk, o.death_size / kChunk * kChunk);
    return o;
}

// Polls `done` every 20 ms for up to `timeout`: the cluster decides by
// time (leases, replace_after), which no event announces to a bystander.
bool Eventually(const std::function<bool()> &done, std::chrono::seconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
        if (done())
            return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return done();
}

double Seconds(uint64_t ns) {
    return ns / 1e9;
}

class Bench {
  public:
    explicit Bench(const Options &options) : options_(options) {}

    void Start() {
        std::string error;
        fprintf(stderr, "starting 3 etcd members and %zu rpmads...\n", std::size(kZones));
        etcd_ = testing::EtcdCluster::Start(3, &error);
        if (etcd_ == nullptr)
            throw Fatal("etcd: " + error);
        rpma::cluster::EtcdOptions options;
        if (!rpma::cluster::ParseEndpoints(etcd_->Endpoints(), &options).ok())
            throw Fatal("etcd endpoints " + etcd_->Endpoints());
        options.timeout = std::chrono::milliseconds(2000);
        if (!rpma::cluster::Etcd::Connect(options, &etcd_client_).ok())
            throw Fatal("cannot connect to etcd at " + etcd_->Endpoints());
        home_ = testing::TempPath("home");
        std::filesystem::create_directories(home_);
        for (size_t i = 0; i < std::size(kZones); ++i) {
            pools_.push_back(testing::TempPath("pool-" + std::to_string(i)));
            daemons_.push_back(StartNode(i));
        }
        if (!Eventually([&] { return LiveNodes() == std::size(kZones); }, std::chrono::seconds(30)))
            throw Fatal("the rpmads did not all register in etcd");
    }

    void OpenLatency() {
        const std::string name = "open";
        CreateRegion(name, 4 << 20);
        const auto set = StaticSet(name);
        fprintf(stderr, "measuring open (%d by name, %d by addresses)...\n", options_.opens,
                options_.opens);
        client::OpenOptions create;
        create.create_size = 4 << 20;
        Check(client::Region::Open(set, "open-static", create).status(), "creating open-static");
        std::vector<uint64_t> samples[2];  // static, by name
        Rounds(options_.opens, [&](bool by_name, int count) {
            for (int i = 0; i < count; ++i) {
                const uint64_t start = NowNs();
                auto region = by_name ? client::Region::Open(Cluster(), name, {})
                                      : client::Region::Open(set, "open-static", {});
                Check(region.status(),
                      std::string(by_name ? "opening by name" : "opening by addresses") +
                          " (open " + std::to_string(samples[by_name].size() + 1) + ", after " +
                          std::to_string((NowNs() - start) / 1000000) + " ms)");
                samples[by_name].push_back(NowNs() - start);
                region->reset();  // closes (and frees the writer lease) outside the timing
            }
        });
        const Summary s = Summarize(samples[1]);
        const Summary b = Summarize(samples[0]);
        printf("%-38s %10.1f %10.1f %10.1f %10.1f %7.2f\n", "open, by name (etcd) / by addresses",
               s.median_us, s.p99_us, b.median_us, b.p99_us, s.median_us / b.median_us);
        fflush(stdout);
    }

    void WriteLatency() {
        const std::string name = "write";
        CreateRegion(name, 4 << 20);
        const auto set = StaticSet(name);
        client::OpenOptions create;
        create.create_size = 4 << 20;
        auto cluster = client::Region::Open(Cluster(), name, {});
        Check(cluster.status(), "opening " + name + " by name");
        auto fixed = client::Region::Open(set, "write-static", create);
        Check(fixed.status(), "opening write-static");
        std::vector<std::byte> bytes(4096);
        for (size_t i = 0; i < bytes.size(); ++i)
            bytes[i] = static_cast<std::byte>(i * 31);
        fprintf(stderr, "measuring 4 KiB write + persist (%d each)...\n", options_.ops);
        std::vector<uint64_t> samples[2];  // static, cluster
        const auto run = [&](bool in_cluster, int count, bool keep) {
            client::Region &region = in_cluster ? **cluster : **fixed;
            for (int i = 0; i < count; ++i) {
                const uint64_t start = NowNs();
                Check(region.WritePersist(0, bytes), "WritePersist");
                if (keep)
                    samples[in_cluster].push_back(NowNs() - start);
            }
        };
        run(false, options_.ops / 10 + 1, false);  // warm-up of each
        run(true, options_.ops / 10 + 1, false);
        Rounds(options_.ops, [&](bool in_cluster, int count) { run(in_cluster, count, true); });
        const Summary s = Summarize(samples[1]);
        const Summary b = Summarize(samples[0]);
        const double ratio = s.median_us / b.median_us;
        printf("%-38s %10.1f %10.1f %10.1f %10.1f %7.2f\n", "write+persist 4 KiB, cluster / static",
               s.median_us, s.p99_us, b.median_us, b.p99_us, ratio);
        printf("%-38s %10.0f %10s %10.0f %10s\n", "  IOPS at depth 1, cluster / static",
               1e6 / s.median_us, "", 1e6 / b.median_us, "");
        printf("  floor: cluster / static p50 %.2f <= 1.05 %s\n", ratio,
               ratio <= 1.05 ? "PASS" : "BELOW");
        fflush(stdout);
    }

    void Repair() {
        const std::string name = "repair";
        const size_t size = options_.repair_size;
        CreateRegion(name, size);
        std::vector<std::byte> chunk(kChunk);
        client::OpenOptions options;
        options.quorum = 2;
        uint64_t put_ns = 0;
        {
            auto writer = client::Region::Open(Cluster(), name, options);
            Check(writer.status(), "opening " + name);
            fprintf(stderr, "put of %s through the client...\n", HumanSize(size).c_str());
            put_ns = Put(**writer, size, 1, &chunk);
            // The third replica misses a whole overwrite: its daemon dies
            // first, the writer marks it stale and goes on with two.
            const std::string node = Record(name).replica_set().members(2).daemon_id();
            victim_ = IndexOf(node);
            daemons_[victim_]->process().Kill();
            daemons_[victim_].reset();
            fprintf(stderr, "overwrite of %s with replica 3 dead...\n", HumanSize(size).c_str());
            Put(**writer, size, 2, &chunk);
            if (Record(name).replica_set().members(2).state() != v1::ReplicaSetMember::STATE_STALE)
                throw Fatal("the dead replica of " + name + " is not recorded stale");
        }
        fprintf(stderr, "restarting the stale replica's rpmad; the cluster repairs it...\n");
        const uint64_t start = NowNs();
        daemons_[victim_] = StartNode(victim_);
        uint64_t last_report = start;
        uint64_t copy_start = 0;  // when the record first said REPAIRING
        if (!Eventually(
                [&] {
                    ReportEverySecond(name, start, &last_report);
                    if (copy_start == 0 && Record(name).replica_set().members(2).state() ==
                                               v1::ReplicaSetMember::STATE_REPAIRING)
                        copy_start = NowNs();
                    return AllInSync(name);
                },
                std::chrono::seconds(600)))
            throw Fatal("region " + name + " was not repaired within 10 min");
        const uint64_t repair_ns = NowNs() - start;
        const double mb = size / 1e6;
        printf("%-38s %10.1f %10.1f %21s %7.2f\n",
               ("repair " + HumanSize(size) + " / put, MB/s").c_str(), mb / Seconds(repair_ns),
               mb / Seconds(put_ns), "", Seconds(put_ns) / Seconds(repair_ns));
        const uint64_t end = start + repair_ns;
        printf("%-38s %10.1f %10.1f %21s %7.2f\n", "  copy only (REPAIRING seen) / put, MB/s",
               copy_start != 0 ? mb / Seconds(end - copy_start) : 0.0, mb / Seconds(put_ns), "",
               copy_start != 0 ? Seconds(put_ns) / Seconds(end - copy_start) : 0.0);
        printf(
            "  repair: %.2f s from the restart to in sync (the daemon's start and the "
            "controller noticing included), %.2f s of it REPAIRING; put: %.2f s to three "
            "replicas\n",
            Seconds(repair_ns), copy_start != 0 ? Seconds(end - copy_start) : 0.0, Seconds(put_ns));
        fflush(stdout);
        Rpmactl({"region", "delete", name});
    }

    void NodeDeath() {
        const std::string name = "death";
        const size_t size = options_.death_size;
        CreateRegion(name, size);
        std::vector<std::byte> chunk(kChunk);
        {
            auto writer = client::Region::Open(Cluster(), name, {});
            Check(writer.status(), "opening " + name);
            fprintf(stderr, "filling %s...\n", HumanSize(size).c_str());
            Put(**writer, size, 3, &chunk);
        }
        const std::string dead = Record(name).replica_set().members(1).daemon_id();
        const size_t victim = IndexOf(dead);
        fprintf(stderr, "SIGKILL of a replica's rpmad; waiting for its replica elsewhere...\n");
        const size_t live_before = LiveNodes();
        const uint64_t start = NowNs();
        daemons_[victim]->process().Kill();
        daemons_[victim].reset();
        uint64_t last_report = start;
        uint64_t seen_dead = 0;  // when its node record left etcd (lease expired)
        if (!Eventually(
                [&] {
                    ReportEverySecond(name, start, &last_report);
                    if (seen_dead == 0 && LiveNodes() < live_before)
                        seen_dead = NowNs();
                    const auto record = Record(name);
                    for (const auto &m : record.replica_set().members())
                        if (m.daemon_id() == dead)
                            return false;
                    return AllInSync(name);
                },
                std::chrono::seconds(600)))
            throw Fatal("region " + name + "'s replica was not placed elsewhere within 10 min");
        const double s = Seconds(NowNs() - start);
        printf("%-38s %10.2f\n",
               ("node death to in sync elsewhere, s (" + HumanSize(size) + ")").c_str(), s);
        // The lease expires up to one lease after the node's last renewal,
        // so detection is measured, not the configured lease subtracted.
        const double detect = seen_dead != 0 ? Seconds(seen_dead - start) : s;
        printf(
            "  detection (its lease of %d s expired) %.2f s, then %.2f s to in sync "
            "elsewhere (replace_after %d s of it, placement and copy)\n",
            kLeaseSeconds, detect, s - detect, kReplaceAfter);
        fflush(stdout);
    }

  private:
    std::unique_ptr<testing::Rpmad> StartNode(size_t i) {
        testing::RpmadOptions options;
        options.pool_dir = pools_[i];
        options.config_yaml = "cluster:\n  etcd:\n    endpoints: \"" + etcd_->Endpoints() +
                              "\"\n  zone: " + kZones[i] +
                              "\n  lease_ttl_seconds: " + std::to_string(kLeaseSeconds) +
                              "\n  replace_after_seconds: " + std::to_string(kReplaceAfter) + "\n";
        std::string error;
        auto rpmad = testing::Rpmad::Start(options, &error);
        if (rpmad == nullptr)
            throw Fatal("rpmad " + std::to_string(i) + ": " + error);
        return rpmad;
    }

    client::Cluster Cluster() const {
        client::Cluster cluster;
        cluster.etcd_endpoints = etcd_->Endpoints();
        cluster.writer_lease = std::chrono::seconds(kLeaseSeconds);
        return cluster;
    }

    size_t LiveNodes() {
        std::vector<rpma::cluster::NodeRecord> nodes;
        return rpma::cluster::ListNodes(*etcd_client_, keys_, &nodes).ok() ? nodes.size() : 0;
    }

    rpma::cluster::RegionRecord Record(const std::string &name) {
        std::optional<rpma::cluster::Versioned<rpma::cluster::RegionRecord>> read;
        if (!rpma::cluster::GetRegion(*etcd_client_, keys_, name, &read).ok() || !read)
            throw Fatal("no record of region " + name + " in etcd");
        return read->record;
    }

    bool AllInSync(const std::string &name) {
        const auto record = Record(name);
        for (const auto &m : record.replica_set().members())
            if (m.state() != v1::ReplicaSetMember::STATE_IN_SYNC)
                return false;
        return true;
    }

    // The members' states, for the progress lines.
    std::string Progress(const std::string &name) {
        std::string out;
        const auto record = Record(name);  // outlives the loop
        for (const auto &m : record.replica_set().members())
            out += (out.empty() ? "" : ", ") + v1::ReplicaSetMember::State_Name(m.state());
        return out;
    }

    // A progress line with the members' states at most once a second while
    // a wait started at `start` goes on; *last_report is when the last one was.
    void ReportEverySecond(const std::string &name, uint64_t start, uint64_t *last_report) {
        if (NowNs() - *last_report <= 1000000000ull)
            return;
        *last_report = NowNs();
        fprintf(stderr, "  %.0f s: %s\n", Seconds(NowNs() - start), Progress(name).c_str());
    }

    std::string NodeId(testing::Rpmad &rpmad) {
        v1::Stats stats;
        if (!rpmad.Daemon()
                 ->GetStats(testing::Rpmad::Context().get(), v1::GetStatsRequest(), &stats)
                 .ok())
            throw Fatal("GetStats of " + rpmad.control());
        return stats.daemon_id();
    }

    size_t IndexOf(const std::string &node_id) {
        for (size_t i = 0; i < daemons_.size(); ++i)
            if (daemons_[i] != nullptr && NodeId(*daemons_[i]) == node_id)
                return i;
        throw Fatal("no daemon is node " + node_id);
    }

    // The control addresses of the daemons that hold `name`'s replicas.
    client::ReplicaSet StaticSet(const std::string &name) {
        client::ReplicaSet set;
        const auto record = Record(name);  // outlives the loop
        for (const auto &m : record.replica_set().members())
            set.addresses.push_back(daemons_[IndexOf(m.daemon_id())]->control());
        return set;
    }

    void CreateRegion(const std::string &name, size_t size) {
        Rpmactl({"region", "create", name, std::to_string(size), "--replicas", "3"});
    }

    void Rpmactl(const std::vector<std::string> &args) {
        std::vector<std::string> argv = {testing::Runfile("client/rpmactl/rpmactl"), "--etcd",
                                         etcd_->Endpoints()};
        argv.insert(argv.end(), args.begin(), args.end());
        std::string error;
        auto process = testing::Process::Start(
            argv, {"HOME=" + home_, "XDG_CONFIG_HOME=", "RPMACTL_SERVER=", "RPMACTL_ETCD="},
            &error);
        if (process == nullptr)
            throw Fatal("rpmactl: " + error);
        auto status = process->Wait(std::chrono::seconds(120));
        if (!status || !status->exited || status->code != 0)
            throw Fatal("rpmactl failed: " + process->Describe());
    }

    // Writes `size` bytes in kChunk writes, each persisted; its time.
    uint64_t Put(client::Region &region, size_t size, int seed, std::vector<std::byte> *chunk) {
        for (size_t i = 0; i < chunk->size(); ++i)
            (*chunk)[i] = static_cast<std::byte>(i * 7 + seed);
        const uint64_t start = NowNs();
        for (size_t offset = 0; offset < size; offset += kChunk)
            Check(region.WritePersist(offset, *chunk), "WritePersist");
        return NowNs() - start;
    }

    // rounds.h's order for two sides that are not rpma_bench Clients:
    // kRounds rounds sharing `total` operations per side, which side goes
    // first alternating (the static set first in round 0).
    static void Rounds(int total, const std::function<void(bool, int)> &turn) {
        for (int round = 0; round < rpma_bench::kRounds; ++round) {
            const int count =
                total / rpma_bench::kRounds + (round < total % rpma_bench::kRounds ? 1 : 0);
            if (count == 0)
                continue;
            const bool subject_first = round % 2 == 1;
            for (bool subject : {subject_first, !subject_first})
                turn(subject, count);
        }
    }

    Options options_;
    std::unique_ptr<testing::EtcdCluster> etcd_;
    std::unique_ptr<rpma::cluster::Etcd> etcd_client_;
    rpma::cluster::Keys keys_;
    std::string home_;
    std::vector<std::string> pools_;
    std::vector<std::unique_ptr<testing::Rpmad>> daemons_;
    size_t victim_ = 0;
};

// The harness finds rpmad and rpmactl in the runfiles and puts its files
// in TEST_TMPDIR, as under bazel test; under bazel run (or run by hand) the
// runfiles are beside the binary and the files go to the run's directory.
void SetUpHarness(const char *argv0, const std::string &temp_dir) {
    if (getenv("TEST_SRCDIR") == nullptr) {
        const char *runfiles = getenv("RUNFILES_DIR");
        std::string dir = runfiles != nullptr ? runfiles : std::string(argv0) + ".runfiles";
        if (!std::filesystem::exists(dir + "/rpma/daemon/rpmad"))
            dir = "..";  // bazel run's working directory is runfiles/rpma
        setenv("TEST_SRCDIR", dir.c_str(), 1);
    }
    setenv("TEST_WORKSPACE", "rpma", 0);
    setenv("TEST_TMPDIR", temp_dir.c_str(), 1);
}

}  // namespace

int main(int argc, char **argv) {
    const Options options = Parse(argc, argv);
    const char *tmp = getenv("TEST_TMPDIR");
    rpma_bench::ChildProcesses children(kProgram, tmp != nullptr ? tmp : "/tmp");
    SetUpHarness(argv[0], children.temp_dir());
    printf(
        "cluster_bench: 3 etcd members, %zu rpmads (tcp), loopback; region sizes: "
        "repair %s, node death %s\n",
        std::size(kZones), HumanSize(options.repair_size).c_str(),
        HumanSize(options.death_size).c_str());
    printf("%-38s %10s %10s %10s %10s %7s\n", "what (subject / baseline)", "p50 us", "p99 us",
           "base p50", "base p99", "ratio");
    fflush(stdout);
    try {
        Bench bench(options);
        bench.Start();
        bench.OpenLatency();
        bench.WriteLatency();
        bench.Repair();
        bench.NodeDeath();
    } catch (const Fatal &e) {
        fprintf(stderr, "%s: %s\n", kProgram, e.what());
        return 1;
    }
    return 0;
}
