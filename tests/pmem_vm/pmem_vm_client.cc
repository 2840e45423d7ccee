// pmem_vm_client: the host side of the emulated-PMem VM test (README.md),
// run against three rpmads in one VM through qemu's forwarded ports: "dax"
// (pool directory on ext4 mounted -o dax on /dev/pmem0, or with --devdax-
// region a storage.devdax_regions region on /dev/dax0.0), "page-cache"
// (ext4 on a virtio disk) and "page-cache-on-pmem" (ext4 without dax on
// /dev/pmem1: the same medium as DAX, through the page cache).
//
//   pmem_vm_client wait --control HOST:PORT... [--timeout-s S]
//   pmem_vm_client run  --dax-control A --dax-data A --page-control A --page-data A
//                       --pmem-page-control A --pmem-page-data A [--iterations N]
//                       [--devdax-region NAME --not-dax-region NAME]
//
// run, for each daemon: creates a region (or finds the devdax one), checks
// the persist method and backing it reports (cpu-flush or fence on DAX,
// msync on the page cache), writes 1 MiB, persists it and reads it back
// identical; with --not-dax-region, checks that the DAX daemon refuses that
// region (a devdax entry on a regular file). Then it measures the 4 KiB
// write + persistent flush latency on each, interleaved (one on each in
// turn, so that the load of the host weighs on all alike), prints the
// medians and the ratios, and fails unless DAX is the faster than both.
// Exit status 0 on success, 1 on a failure, 2 on a wrong command line.
#include <grpcpp/grpcpp.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <vector>

#include "proto/rpmad/v1/rpmad.grpc.pb.h"
#include "rpma/client/control_plane.h"
#include "rpma/client/region.h"
#include "tests/vm/wait_for_rpmad.h"

namespace {

using rpma::client::Region;
using Clock = std::chrono::steady_clock;

constexpr char kRegion[] = "pmemvm";
constexpr uint64_t kRegionSize = 16 << 20;
constexpr size_t kPutSize = 1 << 20;
constexpr size_t kWriteSize = 4096;

struct Daemon {
    const char *label;  // "dax" or "page-cache"
    std::string region_name = kRegion;
    bool create = true;  // false: a devdax region, configured, not created
    std::string expected_backing = "file";
    std::string control;
    std::string data;
    // The persist methods this daemon's regions may report.
    std::vector<std::string> expected_methods;
    std::unique_ptr<Region> region;
    std::vector<double> latencies_us;
};

bool Fail(const Daemon &d, const std::string &why) {
    fprintf(stderr, "pmem_vm_client: %s rpmad (%s): %s\n", d.label, d.control.c_str(), why.c_str());
    return false;
}

// Waits until rpmad answers on `control` (the VM is booting) and says which
// provider it serves on.
int WaitForDaemon(const std::string &control, int timeout_s) {
    rpmad::v1::Stats stats;
    grpc::Status got = rpma::vm::WaitForRpmad(control, timeout_s, &stats);
    if (!got.ok()) {
        fprintf(stderr, "pmem_vm_client: rpmad at %s did not answer within %d s: %s\n",
                control.c_str(), timeout_s, got.error_message().c_str());
        return 1;
    }
    printf("rpmad %s at %s: provider %s\n", stats.version().c_str(), control.c_str(),
           stats.provider().c_str());
    return 0;
}

bool GetRegion(Daemon &d, rpma::client::ControlPlane &control, const std::string &name,
               rpmad::v1::Region *region) {
    rpmad::v1::GetRegionRequest get;
    get.set_name(name);
    grpc::Status got = control.regions().GetRegion(control.Context().get(), get, region);
    if (!got.ok())
        return Fail(d, "GetRegion " + name + ": " + got.error_message());
    printf("REGION %s %s: persist_method=%s granularity=%s backing=%s healthy=%s%s%s\n", d.label,
           name.c_str(), region->persist_method().c_str(), region->granularity().c_str(),
           region->backing().c_str(), region->healthy() ? "yes" : "no",
           region->healthy() ? "" : " problem=", region->problem().c_str());
    return true;
}

// Creates the region (or finds the configured devdax one) and checks what
// the daemon says about it: healthy, backed as configured, persisted the
// way its medium needs.
bool CreateAndInspect(Daemon &d) {
    auto control = rpma::client::ControlPlane::Connect(d.control, {});
    if (!control.ok())
        return Fail(d, control.status().ToString());
    if (d.create) {
        rpmad::v1::CreateRegionRequest request;
        request.set_name(d.region_name);
        request.set_size(kRegionSize);
        rpmad::v1::Region created;
        grpc::Status got =
            (*control)->regions().CreateRegion((*control)->Context().get(), request, &created);
        if (!got.ok())
            return Fail(d, "CreateRegion: " + got.error_message());
    }
    rpmad::v1::Region region;
    if (!GetRegion(d, **control, d.region_name, &region))
        return false;
    if (!region.healthy())
        return Fail(d, "the region is unhealthy: " + region.problem());
    if (region.backing() != d.expected_backing)
        return Fail(d, "backing " + region.backing() + ", expected " + d.expected_backing);
    const auto &ok = d.expected_methods;
    if (std::find(ok.begin(), ok.end(), region.persist_method()) == ok.end())
        return Fail(d, "persist method " + region.persist_method() + " is not the one for " +
                           "its medium (" + ok.front() + ")");
    return true;
}

// Opens a session, writes 1 MiB of random bytes, persists them and reads
// them back: they must be identical.
bool PutGet(Daemon &d) {
    rpma::client::ReplicaSet set;
    set.addresses = {d.control};
    set.data_addresses = {d.data};  // the daemon names its guest address
    rpma::client::OpenOptions open;
    open.operation_timeout = std::chrono::milliseconds(30000);
    auto region = Region::Open(set, d.region_name, open);
    if (!region.ok())
        return Fail(d, "open: " + region.status().ToString());
    d.region = std::move(*region);
    if (d.region->replicas()[0].gpspm)
        return Fail(d, "the session persists by GPSPM; the test needs APM (the provider's flush)");
    std::vector<std::byte> put(kPutSize), got(kPutSize);
    std::mt19937_64 rng(0x9E3779B97F4A7C15ull);
    for (std::byte &b : put)
        b = static_cast<std::byte>(rng());
    if (auto s = d.region->Write(0, put); !s.ok())
        return Fail(d, "write: " + s.ToString());
    if (auto s = d.region->Persist(0, put.size()); !s.ok())
        return Fail(d, "persist: " + s.ToString());
    if (auto s = d.region->Read(0, got, 0); !s.ok())
        return Fail(d, "read: " + s.ToString());
    if (put != got)
        return Fail(d, "the bytes read back differ from the bytes written");
    printf("PUTGET %s: %zu bytes written, persisted and read back identical\n", d.label,
           put.size());
    return true;
}

// One 4 KiB write + persistent flush, timed; offsets cycle through the
// region past the put's first MiB.
bool TimedWritePersist(Daemon &d, int i, std::span<const std::byte> bytes) {
    uint64_t offset = kPutSize + (static_cast<uint64_t>(i) % 1024) * kWriteSize;
    Clock::time_point start = Clock::now();
    auto s = d.region->WritePersist(offset, bytes);
    double us = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
    if (!s.ok())
        return Fail(d, "write+persist: " + s.ToString());
    if (i >= 0)
        d.latencies_us.push_back(us);
    return true;
}

double Percentile(std::vector<double> v, double p) {
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, static_cast<size_t>(p * v.size()))];
}

// A devdax_regions entry whose path is a regular file: the daemon must
// refuse it as a region (unhealthy) and say that it is not device DAX.
bool RefusesNonDax(Daemon &d, const std::string &name) {
    auto control = rpma::client::ControlPlane::Connect(d.control, {});
    if (!control.ok())
        return Fail(d, control.status().ToString());
    rpmad::v1::Region region;
    if (!GetRegion(d, **control, name, &region))
        return false;
    if (region.healthy() || region.problem().find("not a device-DAX device") == std::string::npos)
        return Fail(d, "the devdax region " + name +
                           " on a regular file is not refused as not device DAX: problem '" +
                           region.problem() + "'");
    rpma::client::ReplicaSet set;
    set.addresses = {d.control};
    set.data_addresses = {d.data};
    auto opened = Region::Open(set, name, {});
    if (opened.ok())
        return Fail(d, "a session on the refused region " + name + " opened");
    printf("REFUSED %s %s: %s; open: %s\n", d.label, name.c_str(), region.problem().c_str(),
           opened.status().ToString().c_str());
    return true;
}

int Run(std::vector<Daemon> &daemons, int iterations, const std::string &not_dax) {
    for (Daemon &d : daemons)
        if (!CreateAndInspect(d) || !PutGet(d))
            return 1;
    if (!not_dax.empty() && !RefusesNonDax(daemons[0], not_dax))
        return 1;
    std::vector<std::byte> bytes(kWriteSize, std::byte{0x5A});
    // Warm-up (negative i: not recorded): connections, page faults, caches.
    for (int i = -20; i < iterations; i++)
        for (Daemon &d : daemons)
            if (!TimedWritePersist(d, i, bytes))
                return 1;
    for (const Daemon &d : daemons)
        printf(
            "LATENCY %s: 4 KiB write+persist median %.1f us, p10 %.1f us, p90 %.1f us "
            "(%d iterations)\n",
            d.label, Percentile(d.latencies_us, 0.5), Percentile(d.latencies_us, 0.1),
            Percentile(d.latencies_us, 0.9), iterations);
    // The CPU-flush path against msync on each page-cache medium.
    const Daemon &dax = daemons[0];
    double dax_median = Percentile(dax.latencies_us, 0.5);
    bool faster = true;
    for (size_t i = 1; i < daemons.size(); i++) {
        const Daemon &page = daemons[i];
        double page_median = Percentile(page.latencies_us, 0.5);
        printf("PMEMVM LATENCY %s_median_us=%.1f %s_median_us=%.1f ratio=%.2f\n", dax.label,
               dax_median, page.label, page_median, page_median / dax_median);
        if (!(dax_median < page_median)) {
            fprintf(stderr,
                    "pmem_vm_client: the CPU-flush path (%s, median %.1f us) is not faster than "
                    "msync on %s (median %.1f us)\n",
                    dax.label, dax_median, page.label, page_median);
            faster = false;
        }
    }
    return faster ? 0 : 1;
}

}  // namespace

int main(int argc, char **argv) {
    CLI::App app{"pmem_vm_client: the host side of the emulated-PMem VM test"};
    app.require_subcommand(1);
    std::vector<std::string> controls;
    int timeout_s = 120;
    CLI::App *wait = app.add_subcommand("wait", "Wait until every rpmad answers");
    wait->add_option("--control", controls, "an rpmad's control plane (repeat for more)")
        ->required();
    wait->add_option("--timeout-s", timeout_s, "how long to wait");

    std::vector<Daemon> daemons(3);
    daemons[0].label = "dax";
    daemons[0].expected_methods = {"cpu-flush", "fence"};
    daemons[1].label = "page-cache";
    daemons[1].expected_methods = {"msync"};
    daemons[2].label = "page-cache-on-pmem";
    daemons[2].expected_methods = {"msync"};
    int iterations = 200;
    CLI::App *run = app.add_subcommand("run", "Check both daemons and compare their latency");
    run->add_option("--dax-control", daemons[0].control, "the DAX rpmad's control plane")
        ->required();
    run->add_option("--dax-data", daemons[0].data, "its data plane (forwarded)")->required();
    run->add_option("--page-control", daemons[1].control, "the page-cache rpmad's control plane")
        ->required();
    run->add_option("--page-data", daemons[1].data, "its data plane (forwarded)")->required();
    run->add_option("--pmem-page-control", daemons[2].control,
                    "the rpmad on the page cache over PMem (ext4 without dax): control plane")
        ->required();
    run->add_option("--pmem-page-data", daemons[2].data, "its data plane (forwarded)")->required();
    run->add_option("--iterations", iterations, "recorded write+persists on each")
        ->check(CLI::Range(1, 1000000));
    std::string devdax, not_dax;
    run->add_option("--devdax-region", devdax,
                    "the DAX rpmad serves this configured devdax region (not created)");
    run->add_option("--not-dax-region", not_dax,
                    "a devdax region on a regular file, which the DAX rpmad must refuse");
    CLI11_PARSE(app, argc, argv);

    if (wait->parsed()) {
        // One after the other, each within the timeout: they start together.
        for (const std::string &control : controls)
            if (int rc = WaitForDaemon(control, timeout_s); rc != 0)
                return rc;
        return 0;
    }
    if (!devdax.empty()) {
        daemons[0].label = "devdax";
        daemons[0].region_name = devdax;
        daemons[0].create = false;
        daemons[0].expected_backing = "devdax";
    }
    return Run(daemons, iterations, not_dax);
}
