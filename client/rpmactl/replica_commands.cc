// verify and region repair: the replicas of a region compared by the
// daemons' own extent checksums (ChecksumRegion), and stale replicas
// repaired through the client library (Region::Repair), copying only the
// extents that differ.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>

#include "client/rpmactl/cluster_commands.h"
#include "client/rpmactl/command.h"
#include "client/rpmactl/daemons.h"
#include "client/rpmactl/differences.h"
#include "client/rpmactl/exit_code.h"
#include "client/rpmactl/progress_bar.h"
#include "client/rpmactl/region_access.h"
#include "client/rpmactl/set_view.h"
#include "client/rpmactl/sizes.h"

namespace rpmactl {
namespace {

namespace v1 = ::rpmad::v1;
using rpma::client::ControlPlane;
using rpma::client::Status;
using rpma::client::StatusCode;

constexpr uint64_t kDefaultExtent = 1 << 20;
// ChecksumRegion answers at most this many extents per call; rpmactl asks
// for at most 64 MiB per call, so that one call stays well inside --timeout
// however large the region (tens of ms at memory speed; 10 s even at 6 MB/s,
// a region paged in from a slow disk) and progress moves in steps a person
// sees.
constexpr uint64_t kMaxExtentsPerCall = 65536;
constexpr uint64_t kMaxBytesPerCall = 64ull << 20;
// Differing bytes are counted only in ranges up to this long (found by 4
// KiB checksums first, then only the differing 4 KiB blocks read), and at
// most this many bytes are read per range and replica.
constexpr uint64_t kCountBlock = 4096;
constexpr uint64_t kCountRangeLimit = 256ull << 20;
constexpr uint64_t kCountReadLimit = 16ull << 20;

struct ReplicaArgs {
    std::string name;
    std::string extent = "1MiB";
    size_t limit = 20;
    bool all = false;
    size_t quorum = 1;
};

int Fail(const Status &status) {
    PrintError(status);
    return ExitCodeFor(status);
}

int Usage(const std::string &message) {
    PrintError(Status(StatusCode::kInvalidArgument, message));
    return kExitUsage;
}

double Seconds(std::chrono::steady_clock::time_point since) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

// The checksums of [offset, offset + length) in `extent` extents, from one
// daemon.
grpc::Status Checksums(ControlPlane &daemon, grpc::ClientContext *context, const std::string &name,
                       uint64_t offset, uint64_t length, uint64_t extent,
                       v1::ChecksumRegionResponse *out) {
    v1::ChecksumRegionRequest request;
    request.set_region(name);
    request.set_offset(offset);
    request.set_length(length);
    request.set_extent_size(extent);
    return daemon.regions().ChecksumRegion(context, request, out);
}

std::string ReplicaLabel(size_t index, const Settings &settings) {
    return std::to_string(index) + " (" + settings.servers[index] + ")";
}

std::string Join(const std::vector<size_t> &indexes) {
    std::string text;
    for (size_t i : indexes)
        text += (text.empty() ? "" : ", ") + std::to_string(i);
    return text.empty() ? "-" : text;
}

// --- verify ------------------------------------------------------------------

// Counts the differing bytes of `replica` in `range`, against `reference`
// (an in-sync replica that agrees there): 4 KiB checksums of both on the
// daemons, then only the 4 KiB blocks whose checksums differ read through
// `region`. nullopt when the range is too long, too many blocks differ,
// or either cannot be read.
std::optional<uint64_t> CountBytes(Daemons &daemons, rpma::client::Region &region,
                                   const std::string &name, const DifferingRange &range,
                                   size_t replica, size_t reference, uint64_t size) {
    if (range.length > kCountRangeLimit)
        return std::nullopt;
    v1::ChecksumRegionResponse sums[2];
    for (int side = 0; side < 2; ++side) {
        ControlPlane &daemon = *daemons[side == 0 ? replica : reference];
        if (!Checksums(daemon, daemon.SessionContext().get(), name, range.offset, range.length,
                       kCountBlock, &sums[side])
                 .ok())
            return std::nullopt;
    }
    std::vector<uint64_t> blocks;
    const std::string &a = sums[0].checksums(), &b = sums[1].checksums();
    for (size_t i = 0; i * 16 < a.size() && i * 16 < b.size(); ++i)
        if (a.compare(i * 16, 16, b, i * 16, 16) != 0)
            blocks.push_back(range.offset + i * kCountBlock);
    if (blocks.size() * kCountBlock > kCountReadLimit)
        return std::nullopt;
    uint64_t count = 0;
    std::string mine(kCountBlock, '\0'), theirs(kCountBlock, '\0');
    for (uint64_t block : blocks) {
        const uint64_t n = std::min<uint64_t>(kCountBlock, size - block);
        auto as_bytes = [n](std::string &s) {
            return std::span(reinterpret_cast<std::byte *>(s.data()), n);
        };
        if (!region.Read(block, as_bytes(mine), replica).ok() ||
            !region.Read(block, as_bytes(theirs), reference).ok())
            return std::nullopt;
        count += CountDifferingBytes(std::string_view(mine.data(), n),
                                     std::string_view(theirs.data(), n));
    }
    return count;
}

int Verify(const Settings &settings, const ReplicaArgs &args) {
    if (settings.cluster.enabled()) {
        // By name: the replicas etcd's record places.
        auto servers = ClusterRegionServers(settings, args.name);
        if (!servers.ok())
            return Fail(servers.status());
        Settings placed = settings;
        placed.servers = std::move(*servers);
        placed.cluster = ClusterSettings();  // from here on, those daemons
        return Verify(placed, args);
    }
    if (settings.servers.size() < 2)
        return Usage("verify compares replicas: give two or more --server");
    std::string error;
    const auto extent = ParseSizeArgument("--extent", args.extent, &error);
    if (!extent)
        return Usage(error);
    if (*extent < 4096 || *extent > (1ull << 30) || (*extent & (*extent - 1)) != 0)
        return Usage("--extent " + args.extent +
                     ": give a power of two from 4KiB to 1GiB, such as 1MiB");
    auto connected = ConnectDaemons(settings);
    if (!connected.ok()) {
        PrintError(connected.status());
        return kExitUsage;
    }
    Daemons &daemons = *connected;
    const size_t replicas = daemons.size();
    SetView view = ReadSetView(daemons, args.name);
    ExitCode code = kExitOk;
    std::vector<bool> compared(replicas), in_sync(replicas);
    uint64_t size = 0;
    size_t reached = 0;
    for (size_t r = 0; r < replicas; ++r) {
        const auto &answer = view.answers[r];
        if (!answer.status.ok()) {
            PrintError(answer.status);
            code = Worse(code, ExitCodeFor(answer.status));
            continue;
        }
        if (reached > 0 && answer.response.size() != size)
            return Fail(Status(StatusCode::kFailedPrecondition,
                               "region " + args.name + " is " + std::to_string(size) +
                                   " bytes on " + settings.servers[0] + " but " +
                                   std::to_string(answer.response.size()) + " on " +
                                   settings.servers[r] + ": these are not replicas of one region"));
        size = answer.response.size();
        ++reached;
        compared[r] = true;
        const auto condition = view.verdict.replicas[r].condition;
        // Without any record, every replica's checksums decide alike.
        in_sync[r] =
            condition == ReplicaCondition::kInSync || condition == ReplicaCondition::kUnrecorded;
    }
    if (reached < 2) {
        PrintError(Status(StatusCode::kUnavailable, "verify needs two replicas of " + args.name +
                                                        " to compare; reached " +
                                                        std::to_string(reached)));
        return Worse(code, kExitUnreachable);
    }
    const std::string warning = VerdictWarning(args.name, view.verdict);
    if (!warning.empty())
        fprintf(stderr, "rpmactl: warning: %s\n", warning.c_str());

    // The checksums, window by window, all daemons at once.
    const uint64_t per_call =
        std::min(kMaxExtentsPerCall, std::max<uint64_t>(1, kMaxBytesPerCall / *extent));
    ExtentComparer comparer(size, *extent, in_sync, compared);
    ProgressBar progress("verify " + args.name, size, stderr,
                         ProgressBar::StyleFor(stderr, settings.json));
    for (uint64_t offset = 0; offset < size; offset += per_call * *extent) {
        const uint64_t length = std::min(per_call * *extent, size - offset);
        std::vector<Answer<v1::ChecksumRegionResponse>> sums = AskEach<v1::ChecksumRegionResponse>(
            daemons, [&](ControlPlane &d, grpc::ClientContext *c, v1::ChecksumRegionResponse *out) {
                // ChecksumRegion is a region opener's call: with the client
                // token when one is given (else the admin token).
                auto context = d.SessionContext();
                context->set_deadline(c->deadline());
                return Checksums(d, context.get(), args.name, offset, length, *extent, out);
            });
        std::vector<std::string_view> views(replicas);
        for (size_t r = 0; r < replicas; ++r) {
            if (!compared[r])
                continue;
            if (!sums[r].status.ok()) {
                progress.Finish();
                return Fail(sums[r].status);
            }
            views[r] = sums[r].response.checksums();
        }
        comparer.Add(offset, views);
        progress.Update(offset + length);
    }
    progress.Finish();

    const auto &ranges = comparer.Ranges();
    const size_t shown = args.all ? ranges.size() : std::min(ranges.size(), args.limit);
    // Count the differing bytes of the ranges shown, of the in-sync
    // replicas' differences (a stale replica is expected to differ, and is
    // not read: the library reads only in-sync replicas).
    std::vector<DifferingRange> report(ranges.begin(), ranges.begin() + shown);
    bool want_counts = false;
    for (const auto &range : report)
        for (size_t r : range.differing)
            want_counts |= in_sync[r] && range.length <= kCountRangeLimit;
    if (want_counts) {
        rpma::client::OpenOptions options;
        options.read_only = true;
        options.quorum = 1;
        auto region = OpenRegion(settings, args.name, options);
        if (region.ok()) {
            for (auto &range : report) {
                size_t reference = replicas;
                for (size_t r : range.agreeing)
                    if (in_sync[r] && reference == replicas)
                        reference = r;
                if (reference == replicas)
                    continue;
                for (size_t i = 0; i < range.differing.size(); ++i)
                    if (in_sync[range.differing[i]])
                        range.differing_bytes[i] = CountBytes(daemons, **region, args.name, range,
                                                              range.differing[i], reference, size);
            }
        }
    }

    // Which replicas differ anywhere, and whether any of them is in sync
    // (corruption) rather than stale (expected).
    std::vector<uint64_t> differing_bytes_of(replicas, 0);
    for (const auto &range : ranges)
        for (size_t r : range.differing)
            differing_bytes_of[r] += range.length;
    bool in_sync_differ = false;
    for (size_t r = 0; r < replicas; ++r)
        in_sync_differ |= differing_bytes_of[r] > 0 && in_sync[r];
    for (const auto &range : ranges)
        in_sync_differ |= range.no_majority;
    const bool identical = ranges.empty();

    auto state_of = [&](size_t r) {
        return view.answers[r].status.ok()
                   ? StateCell(view.answers[r].response, view.verdict.replicas[r])
                   : std::string("not reached");
    };
    if (settings.json) {
        Json replica_list = Json::array();
        for (size_t r = 0; r < replicas; ++r)
            replica_list.push_back(
                {{"index", r},
                 {"server", settings.servers[r]},
                 {"compared", static_cast<bool>(compared[r])},
                 {"state",
                  compared[r] ? ConditionName(view.verdict.replicas[r].condition) : "unknown"},
                 {"description", state_of(r)},
                 {"differing_extent_bytes", differing_bytes_of[r]}});
        Json range_list = Json::array();
        for (const auto &range : report) {
            Json counts = Json::array();
            for (size_t i = 0; i < range.differing.size(); ++i)
                counts.push_back(
                    {{"replica", range.differing[i]},
                     {"bytes",
                      range.differing_bytes[i] ? Json(*range.differing_bytes[i]) : Json(nullptr)}});
            range_list.push_back({{"offset", range.offset},
                                  {"length", range.length},
                                  {"differing", range.differing},
                                  {"agreeing", range.agreeing},
                                  {"no_majority", range.no_majority},
                                  {"differing_bytes", counts}});
        }
        PrintJson(Json{{"region", args.name},
                       {"size", size},
                       {"extent_size", *extent},
                       {"algorithm", "xxh3-128"},
                       {"identical", identical},
                       {"in_sync_identical", !in_sync_differ},
                       {"generation", view.verdict.newest.generation()},
                       {"trusted", view.verdict.trusted},
                       {"replicas", replica_list},
                       {"ranges_total", ranges.size()},
                       {"differing_extents", comparer.differing_extents()},
                       {"truncated", shown < ranges.size()},
                       {"ranges", range_list}});
    } else {
        printf(
            "verify %s: %s on %zu replicas, compared by %s checksums computed on the "
            "daemons\n",
            args.name.c_str(), FormatSizeRounded(size).c_str(), reached,
            FormatOffset(*extent).c_str());
        Table states({"replica", "server", "state"});
        for (size_t r = 0; r < replicas; ++r)
            states.AddRow({std::to_string(r), settings.servers[r], state_of(r)});
        states.Print();
        if (!report.empty()) {
            printf("\n");
            Table table({"range", "length", "differing", "agreeing", "differing bytes"});
            for (const auto &range : report) {
                std::string counts;
                for (size_t i = 0; i < range.differing.size(); ++i) {
                    const size_t r = range.differing[i];
                    std::string count = range.differing_bytes[i]
                                            ? std::to_string(*range.differing_bytes[i])
                                        : !in_sync[r] ? "- (stale)"
                                                      : "- (not counted)";
                    counts += (counts.empty() ? "" : ", ") + std::to_string(r) + ": " + count;
                }
                table.AddRow({FormatRange(range.offset, range.length),
                              FormatSizeRounded(range.length),
                              Join(range.differing) + (range.no_majority ? " (no majority)" : ""),
                              Join(range.agreeing), counts});
            }
            table.Print();
            if (shown < ranges.size())
                printf("... and %zu more range%s (--all shows every one)\n", ranges.size() - shown,
                       ranges.size() - shown == 1 ? "" : "s");
        }
        printf("\n");
        if (identical) {
            printf("identical: every replica compared holds the same %s\n",
                   FormatSizeRounded(size).c_str());
        } else {
            printf("%zu differing range%s (%llu extents of %s)\n", ranges.size(),
                   ranges.size() == 1 ? "" : "s",
                   static_cast<unsigned long long>(comparer.differing_extents()),
                   FormatOffset(*extent).c_str());
            for (size_t r = 0; r < replicas; ++r) {
                if (differing_bytes_of[r] == 0)
                    continue;
                if (in_sync[r])
                    printf(
                        "replica %s differs from the in-sync majority in %s although it is "
                        "in sync: its copy is damaged, or something wrote to it behind the "
                        "replica set's back\n",
                        ReplicaLabel(r, settings).c_str(),
                        FormatSizeRounded(differing_bytes_of[r]).c_str());
                else
                    printf(
                        "replica %s is %s: it differs in %s, as expected until it is "
                        "repaired (rpmactl region repair %s)\n",
                        ReplicaLabel(r, settings).c_str(), state_of(r).c_str(),
                        FormatSizeRounded(differing_bytes_of[r]).c_str(), args.name.c_str());
            }
            if (std::any_of(ranges.begin(), ranges.end(),
                            [](const auto &range) { return range.no_majority; }))
                printf(
                    "in some ranges the in-sync replicas disagree among themselves with no "
                    "majority: which holds the acknowledged bytes cannot be told from them\n");
        }
    }
    return Worse(code, identical ? kExitOk : kExitFailure);
}

// --- region repair -------------------------------------------------------------

const char *StateName(rpma::client::ReplicaState state) {
    switch (state) {
        case rpma::client::ReplicaState::kLive:
            return "in_sync";
        case rpma::client::ReplicaState::kFailed:
            return "failed";
        case rpma::client::ReplicaState::kRepairing:
            return "repairing";
        case rpma::client::ReplicaState::kStale:
            return "stale";
    }
    return "unknown";
}

int Repair(const Settings &settings, const ReplicaArgs &args) {
    rpma::client::OpenOptions options;
    // Take over a repair that died (or runs elsewhere: its sessions are
    // fenced by this one's first record).
    options.repair_takeover = true;
    options.quorum = args.quorum;
    if (args.quorum > settings.servers.size())
        return Usage("--quorum " + std::to_string(args.quorum) + " is more than the " +
                     std::to_string(settings.servers.size()) + " servers given");
    auto region = OpenRegion(settings, args.name, options);
    if (!region.ok())
        return Fail(region.status());
    const auto before = (*region)->replicas();
    struct Outcome {
        size_t index;
        const char *before;
        Status status;
        rpma::client::RepairProgress progress;
        double seconds = 0;
    };
    std::vector<Outcome> outcomes;
    ExitCode code = kExitOk;
    for (size_t i = 0; i < before.size(); ++i) {
        if (before[i].state == rpma::client::ReplicaState::kLive)
            continue;
        Outcome outcome{i, StateName(before[i].state), {}, {}, 0};
        ProgressBar progress("repair " + args.name + " replica " + std::to_string(i),
                             (*region)->size(), stderr,
                             ProgressBar::StyleFor(stderr, settings.json));
        rpma::client::RepairOptions repair;
        repair.progress = [&](const rpma::client::RepairProgress &p) {
            outcome.progress = p;
            progress.Update(p.compared);
        };
        const auto start = std::chrono::steady_clock::now();
        outcome.status = (*region)->Repair(i, repair);
        outcome.seconds = Seconds(start);
        progress.Finish();
        if (!outcome.status.ok()) {
            outcome.status = Advise(outcome.status, settings.connect);
            PrintError(outcome.status);
            code = Worse(code, ExitCodeFor(outcome.status) == kExitUnreachable ? kExitUnreachable
                                                                               : kExitFailure);
        }
        outcomes.push_back(outcome);
    }
    const auto after = (*region)->replicas();
    if (settings.json) {
        Json repaired = Json::array();
        for (const auto &o : outcomes)
            repaired.push_back({{"replica", o.index},
                                {"server", after[o.index].address},
                                {"before", o.before},
                                {"result", o.status.ok() ? "repaired" : "failed"},
                                {"bytes_compared", o.progress.compared},
                                {"bytes_copied", o.progress.copied},
                                {"total_bytes", (*region)->size()},
                                {"seconds", o.seconds},
                                {"error", o.status.ok() ? "" : o.status.ToString()}});
        PrintJson(Json{{"region", args.name},
                       {"size", (*region)->size()},
                       {"generation", (*region)->generation()},
                       {"nothing_to_repair", outcomes.empty()},
                       {"repaired", repaired},
                       {"replicas", ReplicasJson(**region)}});
    } else if (outcomes.empty()) {
        printf("region %s: every replica is in sync (generation %llu): nothing to repair\n",
               args.name.c_str(), static_cast<unsigned long long>((*region)->generation()));
    } else {
        for (const auto &o : outcomes) {
            if (o.status.ok())
                printf("repaired replica %zu (%s) of %s: compared %s, copied %s, %.3f s\n", o.index,
                       after[o.index].address.c_str(), args.name.c_str(),
                       FormatSizeRounded(o.progress.compared).c_str(),
                       FormatSizeRounded(o.progress.copied).c_str(), o.seconds);
            else
                printf(
                    "replica %zu (%s) of %s not repaired (it stays stale; run repair again): "
                    "%s\n",
                    o.index, after[o.index].address.c_str(), args.name.c_str(),
                    o.status.message().c_str());
        }
        printf("region %s: generation %llu\n", args.name.c_str(),
               static_cast<unsigned long long>((*region)->generation()));
    }
    return code;
}

}  // namespace

void AddReplicaCommands(CLI::App &app, Run *run) {
    auto args = std::make_shared<ReplicaArgs>();
    auto set = [run, args](std::function<int(const Settings &, const ReplicaArgs &)> body) {
        return [run, args, body] {
            *run = [args, body](const Settings &s) { return body(s, *args); };
        };
    };

    CLI::App *verify = app.add_subcommand(
        "verify",
        "compare REGION on every server by checksums computed on the daemons; report the ranges "
        "that differ");
    verify->add_option("REGION", args->name, "the region")->required();
    verify->add_option("--extent", args->extent,
                       "compare in extents of SIZE, a power of two from 4KiB to 1GiB (default "
                       "1MiB)");
    verify->add_option("--limit", args->limit, "print at most N ranges (default 20)");
    verify->add_flag("--all", args->all, "print every range");
    verify->callback(set(Verify));

    CLI::App *region = app.get_subcommand("region");
    CLI::App *repair = region->add_subcommand(
        "repair",
        "copy into every stale replica of region NAME what differs from an in-sync one, and "
        "record it in sync again");
    repair->add_option("NAME", args->name, "the region")->required();
    repair->add_option("--quorum", args->quorum,
                       "in-sync replicas needed to open the region for the repair (default 1)");
    repair->callback(set(Repair));
}

}  // namespace rpmactl
