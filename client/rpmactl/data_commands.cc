// put and get: bytes between files and a region's replicas, through the
// client library. bench is in bench.cc, verify in replica_commands.cc.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>

#include "client/rpmactl/command.h"
#include "client/rpmactl/daemons.h"
#include "client/rpmactl/exit_code.h"
#include "client/rpmactl/progress_bar.h"
#include "client/rpmactl/region_access.h"
#include "client/rpmactl/sizes.h"

namespace rpmactl {
namespace {

using rpma::client::Status;
using rpma::client::StatusCode;

// One chunk is one slot of the library's staging ring.
constexpr uint64_t kChunk = 1 << 20;
// put persists every this many bytes, so that a failure loses little and the
// progress shown is close to what is durable.
constexpr uint64_t kPersistEvery = 16 << 20;

struct DataArgs {
    std::string file;
    std::string address;  // REGION[:OFFSET]
    std::string length;
    bool create = false;
    std::string size;
    size_t quorum = 0;
    std::optional<size_t> replica;  // get --replica
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

// The region must hold [offset, offset + length).
Status CheckFits(const rpma::client::Region &region, uint64_t offset, uint64_t length,
                 const std::string &what) {
    if (offset <= region.size() && length <= region.size() - offset)
        return Status();
    return Status(StatusCode::kInvalidArgument,
                  "region " + region.name() + " holds " + std::to_string(region.size()) +
                      " bytes: " + what + " at offset " + std::to_string(offset) +
                      " does not fit; pick a smaller offset or length, or a larger region");
}

Json Summary(const rpma::client::Region &region, uint64_t offset, uint64_t bytes, double seconds) {
    return Json{{"region", region.name()},
                {"offset", offset},
                {"bytes", bytes},
                {"seconds", seconds},
                {"bytes_per_second", seconds > 0 ? static_cast<double>(bytes) / seconds : 0.0},
                {"replicas", ReplicasJson(region)}};
}

std::string Rate(uint64_t bytes, double seconds) {
    return seconds > 0
               ? FormatSizeRounded(static_cast<uint64_t>(static_cast<double>(bytes) / seconds)) +
                     "/s"
               : "-";
}

// What rpmactl says of a replica that is not in sync.
std::string NotInSync(const rpma::client::ReplicaInfo &replica) {
    switch (replica.state) {
        case rpma::client::ReplicaState::kRepairing:
            return "is being repaired (stale since generation " +
                   std::to_string(replica.stale_since) + ")";
        case rpma::client::ReplicaState::kFailed:
            return "failed";
        default:
            if (replica.stale_since > 0)
                return "is stale (missed writes since generation " +
                       std::to_string(replica.stale_since) + ")";
            // Not recorded stale, yet not found in sync at the open: why
            // (not reached, or a record that missed a change) is its error.
            return replica.error.ok()
                       ? "is stale"
                       : "is not known to be in sync (" + replica.error.message() + ")";
    }
}

// --- put ---------------------------------------------------------------------

int Put(const Settings &settings, const DataArgs &args) {
    std::string error;
    const auto address = ParseRegionAddress(args.address, &error);
    if (!address)
        return Usage(error);
    std::error_code ec;
    const uint64_t file_size = std::filesystem::file_size(args.file, ec);
    std::ifstream in(args.file, std::ios::binary);
    if (ec || !in)
        return Fail(
            Status(StatusCode::kInvalidArgument, "cannot read " + args.file + ": " +
                                                     (ec ? ec.message() : "cannot open it") +
                                                     "; give a readable regular file"));
    rpma::client::OpenOptions options;
    options.quorum = args.quorum;
    if (!args.size.empty()) {
        const auto size = ParseSizeArgument("--size", args.size, &error);
        if (!size || *size == 0)
            return Usage(size ? "--size: 0 is not a region size: write a multiple of 4096" : error);
        options.create_size = *size;
    } else if (args.create) {
        options.create_size =
            std::max<uint64_t>(4096, (address->offset + file_size + 4095) / 4096 * 4096);
    }
    auto region = OpenRegion(settings, address->region, options);
    if (!region.ok() && region.status().code() == StatusCode::kNotFound)
        return Fail(Status(StatusCode::kNotFound,
                           region.status().message() + "; pass --create (or --size SIZE) to " +
                               "create it where it is missing, with the admin token"));
    if (!region.ok())
        return Fail(region.status());
    Status fits = CheckFits(**region, address->offset, file_size,
                            args.file + " (" + std::to_string(file_size) + " bytes)");
    if (!fits.ok())
        return Fail(fits);

    const auto start = std::chrono::steady_clock::now();
    ProgressBar progress("put " + args.file, file_size, stderr,
                         ProgressBar::StyleFor(stderr, settings.json));
    std::vector<std::byte> chunk(kChunk);
    uint64_t done = 0;
    uint64_t persisted = 0;
    Status status;
    while (status.ok() && done < file_size) {
        const uint64_t n = std::min<uint64_t>(kChunk, file_size - done);
        if (!in.read(reinterpret_cast<char *>(chunk.data()), static_cast<std::streamsize>(n))) {
            status = Status(StatusCode::kInternal, args.file +
                                                       " ended early or became unreadable "
                                                       "while it was read");
            break;
        }
        status = (*region)->Write(address->offset + done, std::span(chunk.data(), n));
        done += n;
        if (status.ok() && (done - persisted >= kPersistEvery || done == file_size)) {
            status = (*region)->Persist(address->offset + persisted, done - persisted);
            persisted = done;
        }
        progress.Update(done);
    }
    progress.Finish();
    if (!status.ok())
        return Fail(status);
    // Replicas that were stale when the region opened got none of it (those
    // that failed during the put were reported as they did).
    const auto replicas = (*region)->replicas();  // a copy
    for (size_t i = 0; i < replicas.size(); ++i) {
        const auto &replica = replicas[i];
        if (replica.state == rpma::client::ReplicaState::kStale)
            PrintError(Status(StatusCode::kFailedPrecondition,
                              "replica " + std::to_string(i) + " (" + replica.address + ") " +
                                  NotInSync(replica) + ": it was not written; repair it with " +
                                  "`rpmactl region repair " + address->region + "`"));
    }
    const double seconds = Seconds(start);
    if (settings.json) {
        PrintJson(Summary(**region, address->offset, file_size, seconds));
    } else {
        size_t live = 0;
        for (const auto &r : (*region)->replicas())
            live += r.state == rpma::client::ReplicaState::kLive;
        printf("put %s: %s to %s at offset %llu, durable on %zu of %zu replicas, %.3f s, %s\n",
               args.file.c_str(), FormatSizeRounded(file_size).c_str(), address->region.c_str(),
               static_cast<unsigned long long>(address->offset), live, (*region)->replicas().size(),
               seconds, Rate(file_size, seconds).c_str());
    }
    return ReplicasExitCode(**region);
}

// --- get ---------------------------------------------------------------------

int Get(const Settings &settings, const DataArgs &args) {
    std::string error;
    const auto address = ParseRegionAddress(args.address, &error);
    if (!address)
        return Usage(error);
    const auto length = ParseSizeArgument("LEN", args.length, &error);
    if (!length)
        return Usage(error);
    if (args.replica && *args.replica >= settings.servers.size())
        return Usage("--replica " + std::to_string(*args.replica) + " names no server: there are " +
                     std::to_string(settings.servers.size()) + " (--server), counted from 0");
    // The whole set, read-only: which replicas are in sync is decided from
    // every member's record, and only those are read.
    rpma::client::OpenOptions options;
    options.read_only = true;
    options.quorum = 1;  // one in-sync replica is enough to read
    auto region = OpenRegion(settings, address->region, options);
    if (!region.ok())
        return Fail(region.status());
    const auto replicas = (*region)->replicas();
    size_t replica = replicas.size();
    if (args.replica) {
        const auto &info = replicas[*args.replica];
        if (info.state != rpma::client::ReplicaState::kLive)
            return Fail(Status(
                StatusCode::kFailedPrecondition,
                "replica " + std::to_string(*args.replica) + " (" + info.address + ") of " +
                    address->region + " " + NotInSync(info) +
                    ": its bytes are not what was acknowledged, so it is not read. Repair it "
                    "with `rpmactl region repair " +
                    address->region + "`, or read an in-sync replica (leave out --replica)"));
        replica = *args.replica;
    } else {
        for (size_t i = 0; i < replicas.size() && replica == replicas.size(); ++i)
            if (replicas[i].state == rpma::client::ReplicaState::kLive)
                replica = i;
        if (replica == replicas.size())
            return Fail(Status(StatusCode::kUnavailable,
                               "no replica of " + address->region +
                                   " is in sync and reachable: nothing can be read"));
    }
    Status fits = CheckFits(**region, address->offset, *length, std::to_string(*length) + " bytes");
    if (!fits.ok())
        return Fail(fits);
    std::ofstream out(args.file, std::ios::binary | std::ios::trunc);
    if (!out)
        return Fail(Status(StatusCode::kInvalidArgument,
                           "cannot write " + args.file + ": check the directory and permissions"));

    const auto start = std::chrono::steady_clock::now();
    ProgressBar progress("get " + address->region, *length, stderr,
                         ProgressBar::StyleFor(stderr, settings.json));
    std::vector<std::byte> chunk(kChunk);
    uint64_t done = 0;
    Status status;
    while (done < *length) {
        const uint64_t n = std::min<uint64_t>(kChunk, *length - done);
        status = (*region)->Read(address->offset + done, std::span(chunk.data(), n), replica);
        if (!status.ok())
            break;
        if (!out.write(reinterpret_cast<const char *>(chunk.data()),
                       static_cast<std::streamsize>(n))) {
            status = Status(StatusCode::kInternal, "cannot write " + args.file + " (disk full?)");
            break;
        }
        done += n;
        progress.Update(done);
    }
    progress.Finish();
    out.close();
    if (status.ok() && !out)
        status = Status(StatusCode::kInternal, "cannot write " + args.file + " (disk full?)");
    if (!status.ok())
        return Fail(status);
    const double seconds = Seconds(start);
    if (settings.json) {
        Json summary = Summary(**region, address->offset, *length, seconds);
        summary["replica"] = replica;
        summary["server"] = replicas[replica].address;
        PrintJson(summary);
    } else {
        printf("get %s: %s from replica %zu (%s) at offset %llu to %s, %.3f s, %s\n",
               address->region.c_str(), FormatSizeRounded(*length).c_str(), replica,
               replicas[replica].address.c_str(), static_cast<unsigned long long>(address->offset),
               args.file.c_str(), seconds, Rate(*length, seconds).c_str());
    }
    return kExitOk;
}

}  // namespace

void AddDataCommands(CLI::App &app, Run *run) {
    auto args = std::make_shared<DataArgs>();
    auto set = [run, args](std::function<int(const Settings &, const DataArgs &)> body) {
        return [run, args, body] {
            *run = [args, body](const Settings &s) { return body(s, *args); };
        };
    };

    CLI::App *put = app.add_subcommand(
        "put", "replicate FILE into REGION at OFFSET (default 0) on every server, durably");
    put->add_option("FILE", args->file, "a regular file")->required();
    put->add_option("REGION", args->address, "REGION or REGION:OFFSET")->required();
    put->add_flag("--create", args->create,
                  "create the region where missing, just large enough (needs the admin token)");
    put->add_option("--size", args->size, "create the region where missing with SIZE bytes");
    put->add_option(
        "--quorum", args->quorum,
        "fewest in-sync replicas a write and persist may be acknowledged by (default all); a "
        "replica that fails is recorded stale and left behind");
    put->callback(set(Put));

    CLI::App *get = app.add_subcommand("get", "read LEN bytes of REGION at OFFSET into FILE");
    get->add_option("REGION", args->address, "REGION or REGION:OFFSET")->required();
    get->add_option("LEN", args->length, "bytes; suffixes KiB, MiB, GiB")->required();
    get->add_option("FILE", args->file, "written (replaced)")->required();
    get->add_option_function<size_t>(
        "--replica", [args](const size_t &replica) { args->replica = replica; },
        "read from this server, its index in the --server list (default: the first in sync); "
        "a stale replica is refused");
    get->callback(set(Get));

    AddBenchCommand(app, run);
}

}  // namespace rpmactl
