// bench: replicated write + persist latency (median, p99) and IOPS per
// payload size at --depth operations outstanding, and streaming bandwidth,
// with 1, 2, ... up to every --server (the first ones), in one run, against a live region. The CSV
// has rpma_bench's columns, so bench/plot.sh draws it: the first pair of columns is the whole
// replica set, the second one replica; the counts between follow the ratio.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <sstream>

#include "bench/depth.h"
#include "client/rpmactl/cluster_commands.h"
#include "client/rpmactl/command.h"
#include "client/rpmactl/daemons.h"
#include "client/rpmactl/exit_code.h"
#include "client/rpmactl/progress_bar.h"
#include "client/rpmactl/region_access.h"
#include "client/rpmactl/sizes.h"

namespace rpmactl {
namespace {

namespace v1 = ::rpmad::v1;
using rpma::client::Status;
using rpma::client::StatusCode;

constexpr uint64_t kStreamChunk = 1 << 20;
// Streaming persists every 4 MiB, as rpma_bench's stream does.
constexpr uint64_t kStreamPersistEvery = 4 << 20;

struct BenchArgs {
    std::string region = "rpmactl-bench";
    std::string region_size = "64MiB";
    std::string sizes = "64,4KiB,64KiB,1MiB";
    size_t iterations = 1000;
    std::string stream = "64MiB";
    std::string csv;
    int depth = 1;
};

// At most this many operations outstanding (--depth).
constexpr int kMaxDepth = 1024;

// One replica count's numbers.
struct Measured {
    std::vector<double> median_us, p99_us, iops;  // per payload size
    double stream_mib_per_s = 0;
};

double Percentile(std::vector<double> samples, double p) {
    if (samples.empty())
        return 0;
    std::sort(samples.begin(), samples.end());
    const size_t index =
        std::min(samples.size() - 1, static_cast<size_t>(p * static_cast<double>(samples.size())));
    return samples[index];
}

// `operations` write + persists of `size` bytes cycling through the region,
// `depth` outstanding: at depth 1 the synchronous call, deeper
// WritePersistAsync futures waited for oldest first (they complete in
// submission order).
Status WritePersistAtDepth(rpma::client::Region &region, std::span<const std::byte> bytes,
                           int depth, size_t operations, const std::function<void()> &each_done,
                           rpma_bench::DepthResult *result) {
    const uint64_t slots = region.size() / bytes.size();
    uint64_t next = 0;
    Status failure, sync_status;
    std::vector<std::future<Status>> futures(depth);
    std::deque<int> outstanding;
    *result = rpma_bench::RunAtDepth(
        depth, static_cast<int>(operations),
        [&](int slot) {
            const uint64_t offset = (next++ % slots) * bytes.size();
            if (depth == 1)
                sync_status = region.WritePersist(offset, bytes);
            else
                futures[slot] = region.WritePersistAsync(offset, bytes);
            outstanding.push_back(slot);
        },
        [&] {
            const int slot = outstanding.front();
            outstanding.pop_front();
            Status status = depth == 1 ? sync_status : futures[slot].get();
            if (!status.ok() && failure.ok())
                failure = status;
            each_done();
            return slot;
        });
    return failure;
}

Status Measure(rpma::client::Region &region, const std::vector<uint64_t> &sizes, size_t iterations,
               int depth, uint64_t stream_bytes, ProgressBar &progress, uint64_t *done,
               Measured *out) {
    using Clock = std::chrono::steady_clock;
    std::vector<std::byte> buffer(std::max<uint64_t>(kStreamChunk, sizes.back()), std::byte{0x5a});
    for (uint64_t size : sizes) {
        const std::span<const std::byte> bytes(buffer.data(), size);
        rpma_bench::DepthResult result;
        // A tenth more, unrecorded first: connections and caches warm up.
        Status status = WritePersistAtDepth(
            region, bytes, depth, std::max<size_t>(depth, iterations / 10), [] {}, &result);
        if (status.ok())
            status = WritePersistAtDepth(
                region, bytes, depth, iterations,
                [&] {
                    *done += size;
                    progress.Update(*done);
                },
                &result);
        if (!status.ok())
            return status;
        std::vector<double> samples;
        for (uint64_t ns : result.samples)
            samples.push_back(static_cast<double>(ns) / 1000);
        out->median_us.push_back(Percentile(samples, 0.5));
        out->p99_us.push_back(Percentile(samples, 0.99));
        out->iops.push_back(static_cast<double>(iterations) * 1e9 /
                            static_cast<double>(result.elapsed_ns));
    }
    // Chunks cycle through the region; what is written since the last
    // persist is one contiguous range [pending_from, pending_to).
    const uint64_t slots = region.size() / kStreamChunk;
    const auto start = Clock::now();
    uint64_t pending_from = 0, pending_to = 0;
    auto persist_pending = [&] {
        Status status;
        if (pending_to > pending_from)
            status = region.Persist(pending_from, pending_to - pending_from);
        pending_from = pending_to;
        return status;
    };
    for (uint64_t written = 0, i = 0; written < stream_bytes; written += kStreamChunk, ++i) {
        const uint64_t offset = (i % slots) * kStreamChunk;
        Status status;
        if (offset != pending_to) {  // wrapped around
            status = persist_pending();
            pending_from = pending_to = offset;
        }
        if (status.ok())
            status = region.Write(offset, std::span(buffer.data(), kStreamChunk));
        pending_to = offset + kStreamChunk;
        if (status.ok() && pending_to - pending_from >= kStreamPersistEvery)
            status = persist_pending();
        if (!status.ok())
            return status;
        *done += kStreamChunk;
        progress.Update(*done);
    }
    Status status = persist_pending();
    if (!status.ok())
        return status;
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    out->stream_mib_per_s = static_cast<double>(stream_bytes) / (1 << 20) / seconds;
    return Status();
}

std::string Micros(double us) {
    char text[32];
    snprintf(text, sizeof(text), "%.1f", us);
    return text;
}

// The servers where the region does not exist yet: bench creates it there
// and deletes it afterwards.
rpma::client::Result<std::vector<std::string>> Missing(Daemons &daemons, const std::string &name) {
    v1::GetRegionRequest request;
    request.set_name(name);
    std::vector<std::string> missing;
    for (auto &daemon : daemons) {
        v1::Region region;
        Status status = Explain(
            daemon->regions().GetRegion(daemon->Context().get(), request, &region), *daemon);
        if (status.code() == StatusCode::kNotFound)
            missing.push_back(daemon->address());
        else if (!status.ok())
            return status;
    }
    return missing;
}

void DeleteWhereCreated(Daemons &daemons, const std::string &name,
                        const std::vector<std::string> &created) {
    v1::DeleteRegionRequest request;
    request.set_name(name);
    request.set_force(true);
    for (auto &daemon : daemons) {
        if (std::find(created.begin(), created.end(), daemon->address()) == created.end())
            continue;
        v1::DeleteRegionResponse response;
        Status status = Explain(
            daemon->regions().DeleteRegion(daemon->Context().get(), request, &response), *daemon);
        if (!status.ok())
            PrintError(Status(status.code(),
                              "could not delete the bench region it created: " + status.message()));
    }
}

// `by_name`: settings.servers are a cluster region's replicas (--etcd).
int Bench(const Settings &settings, const BenchArgs &args, bool by_name = false) {
    std::string error;
    const auto region_size = ParseSizeArgument("--region-size", args.region_size, &error);
    const auto stream =
        region_size ? ParseSizeArgument("--stream", args.stream, &error) : std::nullopt;
    if (!region_size || !stream) {
        PrintError(Status(StatusCode::kInvalidArgument, error));
        return kExitUsage;
    }
    std::vector<uint64_t> sizes;
    std::stringstream list(args.sizes);
    for (std::string item; std::getline(list, item, ',');) {
        const auto size = ParseSizeArgument("--sizes", item, &error);
        if (!size || *size == 0) {
            PrintError(
                Status(StatusCode::kInvalidArgument,
                       size ? "--sizes: 0 is not a payload size (e.g. 64,4KiB,1MiB)" : error));
            return kExitUsage;
        }
        sizes.push_back(*size);
    }
    std::sort(sizes.begin(), sizes.end());
    if (args.depth < 1 || args.depth > kMaxDepth) {
        PrintError(Status(StatusCode::kInvalidArgument,
                          "--depth: operations outstanding, 1 to " + std::to_string(kMaxDepth)));
        return kExitUsage;
    }
    if (sizes.empty() || args.iterations == 0 ||
        *region_size < std::max<uint64_t>(sizes.back(), kStreamChunk)) {
        PrintError(Status(StatusCode::kInvalidArgument,
                          "bench needs --sizes, --iterations > 0, a --stream size and a "
                          "--region-size of at least 1 MiB and the largest payload"));
        return kExitUsage;
    }
    if (settings.cluster.enabled() && !by_name) {
        // By name: the region's replicas where etcd's record places them;
        // the whole set is opened by name (the cluster's one writer), the
        // smaller counts on scratch regions of their own, as below.
        auto servers = ClusterRegionServers(settings, args.region);
        if (!servers.ok()) {
            PrintError(servers.status());
            return ExitCodeFor(servers.status());
        }
        Settings placed = settings;
        placed.servers = std::move(*servers);
        return Bench(placed, args, /*by_name=*/true);
    }
    auto daemons = ConnectDaemons(settings);
    if (!daemons.ok()) {
        PrintError(daemons.status());
        return kExitUsage;
    }
    auto missing = Missing(*daemons, args.region);
    if (!missing.ok()) {
        PrintError(missing.status());
        return ExitCodeFor(missing.status());
    }

    // One replica, then each larger prefix of the set, up to all of it.
    std::vector<size_t> counts;
    for (size_t count = 1; count <= settings.servers.size(); ++count)
        counts.push_back(count);
    uint64_t per_count = *stream;
    for (uint64_t size : sizes)
        per_count += size * args.iterations;
    ProgressBar progress("bench", per_count * counts.size(), stderr,
                         ProgressBar::StyleFor(stderr, settings.json));
    uint64_t done = 0;
    std::vector<Measured> measured(counts.size());
    Status status;
    for (size_t c = 0; c < counts.size() && status.ok(); ++c) {
        const std::vector<std::string> prefix(settings.servers.begin(),
                                              settings.servers.begin() + counts[c]);
        // A region's replica set is recorded on its members (README "Replica
        // sets"): a smaller prefix of the servers is another set, so it gets
        // a scratch region of its own, NAME.rK, created and deleted here;
        // every server uses NAME.
        const bool whole = counts[c] == settings.servers.size();
        const std::string name =
            whole ? args.region : args.region + ".r" + std::to_string(counts[c]);
        std::vector<std::string> created;
        if (!whole) {
            auto absent = Missing(*daemons, name);
            if (!absent.ok()) {
                status = absent.status();
                break;
            }
            for (const std::string &address : *absent)
                if (std::find(prefix.begin(), prefix.end(), address) != prefix.end())
                    created.push_back(address);
        }
        rpma::client::OpenOptions options;
        options.create_size = whole && by_name ? 0 : *region_size;
        {
            Settings opener = settings;
            if (whole && by_name)
                opener.servers.clear();  // by name, through etcd
            auto region = OpenRegion(opener, name, options,
                                     whole && by_name ? std::vector<std::string>() : prefix);
            if (!region.ok())
                status = region.status();
            else
                status = Measure(**region, sizes, args.iterations, args.depth, *stream, progress,
                                 &done, &measured[c]);
        }
        if (!whole)
            DeleteWhereCreated(*daemons, name, created);
    }
    progress.Finish();
    DeleteWhereCreated(*daemons, args.region, *missing);
    if (!status.ok()) {
        PrintError(status);
        return ExitCodeFor(status);
    }

    const Measured &one = measured.front();
    const Measured &all = measured.back();
    if (!args.csv.empty()) {
        FILE *csv = fopen(args.csv.c_str(), "w");
        if (csv == nullptr) {
            PrintError(Status(StatusCode::kInvalidArgument,
                              "cannot write --csv " + args.csv + ": check the directory"));
            return kExitFailure;
        }
        // rpma_bench's columns: workload, size, then the measured pair (here
        // the replica set) and the reference pair (here one replica); then
        // a pair for each count between.
        const std::vector<size_t> between(counts.begin() + 1, counts.end() - (counts.size() > 1));
        fprintf(csv, "workload,size,replicated,replicated_p99,single,single_p99,ratio");
        for (size_t count : between)
            fprintf(csv, ",replicas_%zu,replicas_%zu_p99", count, count);
        fprintf(csv, "\n");
        for (size_t i = 0; i < sizes.size(); ++i) {
            fprintf(csv, "write_flush_latency,%llu,%.3f,%.3f,%.3f,%.3f,%.4f",
                    static_cast<unsigned long long>(sizes[i]), all.median_us[i], all.p99_us[i],
                    one.median_us[i], one.p99_us[i], all.median_us[i] / one.median_us[i]);
            for (size_t count : between)
                fprintf(csv, ",%.3f,%.3f", measured[count - 1].median_us[i],
                        measured[count - 1].p99_us[i]);
            fprintf(csv, "\n");
        }
        fprintf(csv, "stream_bandwidth,%llu,%.3f,0,%.3f,0,%.4f",
                static_cast<unsigned long long>(kStreamChunk), all.stream_mib_per_s,
                one.stream_mib_per_s, all.stream_mib_per_s / one.stream_mib_per_s);
        for (size_t count : between)
            fprintf(csv, ",%.3f,0", measured[count - 1].stream_mib_per_s);
        fprintf(csv, "\n");
        fclose(csv);
    }
    if (settings.json) {
        Json results = Json::array();
        for (size_t c = 0; c < counts.size(); ++c) {
            for (size_t i = 0; i < sizes.size(); ++i)
                results.push_back({{"workload", "write_persist_latency"},
                                   {"size", sizes[i]},
                                   {"replicas", counts[c]},
                                   {"median_us", measured[c].median_us[i]},
                                   {"p99_us", measured[c].p99_us[i]},
                                   {"iops", measured[c].iops[i]}});
            results.push_back({{"workload", "stream_bandwidth"},
                               {"size", kStreamChunk},
                               {"replicas", counts[c]},
                               {"mib_per_second", measured[c].stream_mib_per_s}});
        }
        PrintJson(Json{{"region", args.region},
                       {"servers", settings.servers},
                       {"iterations", args.iterations},
                       {"depth", args.depth},
                       {"stream_bytes", *stream},
                       {"results", results}});
        return kExitOk;
    }
    // A median and p99 column per replica count; the ratio (with more than
    // one server) is the whole set's against one replica's.
    const bool ratio = counts.size() > 1;
    std::vector<std::string> header = {"workload", "size"};
    for (size_t count : counts)
        header.insert(header.end(),
                      {std::to_string(count) + (count == 1 ? " replica" : " replicas"), "p99"});
    if (ratio)
        header.push_back("ratio");
    Table table(header);
    for (size_t i = 0; i < sizes.size(); ++i) {
        std::vector<std::string> row = {"write+persist (us)", FormatSizeRounded(sizes[i])};
        for (const Measured &m : measured)
            row.insert(row.end(), {Micros(m.median_us[i]), Micros(m.p99_us[i])});
        if (ratio)
            row.push_back(Micros(all.median_us[i] / one.median_us[i] * 100) + "%");
        table.AddRow(row);
    }
    for (size_t i = 0; i < sizes.size(); ++i) {
        std::vector<std::string> row = {"write+persist IOPS", FormatSizeRounded(sizes[i])};
        for (const Measured &m : measured)
            row.insert(row.end(), {Micros(m.iops[i]), "-"});
        if (ratio)
            row.push_back(Micros(all.iops[i] / one.iops[i] * 100) + "%");
        table.AddRow(row);
    }
    std::vector<std::string> stream_row = {"stream (MiB/s)", FormatSizeRounded(kStreamChunk)};
    for (const Measured &m : measured)
        stream_row.insert(stream_row.end(), {Micros(m.stream_mib_per_s), "-"});
    if (ratio)
        stream_row.push_back(Micros(all.stream_mib_per_s / one.stream_mib_per_s * 100) + "%");
    table.AddRow(stream_row);
    printf("bench %s: %zu iterations per size (medians), depth %d, %s streamed\n",
           args.region.c_str(), args.iterations, args.depth, FormatSizeRounded(*stream).c_str());
    table.Print();
    return kExitOk;
}

}  // namespace

void AddBenchCommand(CLI::App &app, Run *run) {
    auto args = std::make_shared<BenchArgs>();
    CLI::App *bench = app.add_subcommand(
        "bench",
        "measure write + persist latency and streaming bandwidth with 1, 2, ... all replicas");
    bench->add_option("--region", args->region,
                      "region to use; created where missing and then deleted (default "
                      "rpmactl-bench)");
    bench->add_option("--region-size", args->region_size, "size of a region bench creates (64MiB)");
    bench->add_option("--sizes", args->sizes,
                      "payload sizes, comma-separated (64,4KiB,64KiB,1MiB)");
    bench->add_option("--iterations", args->iterations, "recorded round trips per size (1000)");
    bench->add_option("--stream", args->stream, "bytes streamed for bandwidth (64MiB)");
    bench->add_option("--depth", args->depth,
                      "write + persists kept outstanding per region (1: one at a time; "
                      "deeper: WritePersistAsync), for latency and IOPS (1)");
    bench->add_option("--csv", args->csv, "also write the results as CSV (bench/plot.sh draws it)");
    bench->callback([run, args] { *run = [args](const Settings &s) { return Bench(s, *args); }; });
}

}  // namespace rpmactl
