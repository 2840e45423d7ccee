#include "tests/powercut/write_cycle.h"

#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <mutex>
#include <random>
#include <thread>

#include "rpma/client/control_plane.h"
#include "rpma/client/region.h"
#include "tests/powercut/ack_log.h"
#include "tests/powercut/record.h"

namespace powercut {
namespace {

using rpma::client::ControlPlane;
using rpma::client::Region;
using rpma::client::Status;
using Clock = std::chrono::steady_clock;

// What the threads of a cycle share: the cut and what was in flight then.
struct CutState {
    std::mutex mu;
    std::condition_variable cv;
    bool first_ack = false;
    bool cut = false;
    bool done = false;  // the writes ended (before or after the cut)
    // The churn's operation now ("" when none) and since when; the duration
    // of its last one.
    std::string churn_op;
    Clock::time_point churn_op_start;
    std::chrono::microseconds churn_op_duration{2000};
    std::string in_flight_at_cut = "none";
};

// The next sequence number: one past the highest acknowledged so far.
rpma::client::Result<uint64_t> NextSeq(const std::string &state_dir) {
    auto log = ReadAckLog(RecordsLog(state_dir));
    if (!log.ok())
        return log.status();
    uint64_t next = 0;
    for (const AckedRecord &r : log->records)
        next = std::max(next, r.seq + 1);
    return next;
}

// Creates regions and deletes the oldest while more than two live, until
// an operation fails (the cut) or the writes are done. Returns the error
// that ended it.
Status Churn(const WriteOptions &options, CutState &state, AckLog &log, int *creates,
             int *deletes) {
    auto control = ControlPlane::Connect(options.endpoints.control, {});
    if (!control.ok())
        return control.status();
    std::mt19937_64 rng(options.seed ^ 0xC4u);
    std::deque<std::string> live;
    for (int i = 0;; i++) {
        {
            std::lock_guard lock(state.mu);
            if (state.done)
                return Status::Ok();
        }
        bool create = live.size() < 3;
        std::string name = create
                               ? "churn-c" + std::to_string(options.cycle) + "-" + std::to_string(i)
                               : live.front();
        uint64_t size = (1 + rng() % 8) << 20;
        RegionChange change{create ? RegionChange::kCreateSent : RegionChange::kDeleteSent, name,
                            create ? size : 0};
        if (Status logged = log.Append(change); !logged.ok())
            return logged;
        Clock::time_point start = Clock::now();
        {
            std::lock_guard lock(state.mu);
            state.churn_op = (create ? "create:" : "delete:") + name;
            state.churn_op_start = start;
        }
        state.cv.notify_all();
        grpc::Status got;
        if (create) {
            rpmad::v1::CreateRegionRequest request;
            request.set_name(name);
            request.set_size(size);
            rpmad::v1::Region region;
            got = (*control)->regions().CreateRegion((*control)->Context().get(), request, &region);
        } else {
            rpmad::v1::DeleteRegionRequest request;
            request.set_name(name);
            request.set_force(true);
            rpmad::v1::DeleteRegionResponse response;
            got =
                (*control)->regions().DeleteRegion((*control)->Context().get(), request, &response);
        }
        {
            std::lock_guard lock(state.mu);
            state.churn_op.clear();
            state.churn_op_duration =
                std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start);
        }
        if (!got.ok())
            return rpma::client::FromGrpc(got, options.endpoints.control);
        if (create) {
            live.push_back(name);
            (*creates)++;
        } else {
            live.pop_front();
            (*deletes)++;
        }
        change.kind = create ? RegionChange::kCreated : RegionChange::kDeleted;
        if (Status acked = log.Append(change); !acked.ok())
            return acked;
    }
}

// Waits for the first acknowledged record, then cut_after_ms (and in a
// churn cycle for the next region change, then a random part of how long
// the last one took), and SIGKILLs qemu: the VM loses power.
void Cut(const WriteOptions &options, CutState &state) {
    std::mt19937_64 rng(options.seed ^ 0xC07u);
    std::unique_lock lock(state.mu);
    state.cv.wait(lock, [&] { return state.first_ack || state.done; });
    if (state.done)
        return;
    // The random moment is the point of the test: a timed wait, not a sleep
    // that hopes for something to be ready.
    state.cv.wait_for(lock, std::chrono::milliseconds(options.cut_after_ms),
                      [&] { return state.done; });
    if (state.done)
        return;
    if (options.churn) {
        state.cv.wait_for(lock, std::chrono::seconds(5),
                          [&] { return !state.churn_op.empty() || state.done; });
        if (state.done)
            return;
        auto into = std::chrono::microseconds(rng() % (state.churn_op_duration.count() + 1));
        state.cv.wait_until(lock, state.churn_op_start + into, [&] { return state.done; });
    }
    if (!state.churn_op.empty())
        state.in_flight_at_cut = state.churn_op;
    kill(options.cut_pid, SIGKILL);
    state.cut = true;
}

}  // namespace

int RunWriteCycle(const WriteOptions &options) {
    auto next = NextSeq(options.state_dir);
    auto records_log = AckLog::Open(RecordsLog(options.state_dir));
    auto churn_log = AckLog::Open(ChurnLog(options.state_dir, options.cycle));
    for (const Status &s : {next.status(), records_log.status(), churn_log.status()}) {
        if (!s.ok()) {
            fprintf(stderr, "powercut_writer: %s\n", s.ToString().c_str());
            return 1;
        }
    }
    rpma::client::OpenOptions open;
    open.create_size = options.records_region_size;
    open.operation_timeout = std::chrono::milliseconds(30000);
    auto region = Region::Open(options.endpoints.Set(), kRecordsRegion, open);
    if (!region.ok()) {
        fprintf(stderr, "powercut_writer: cycle %u: cannot open region %s: %s\n", options.cycle,
                kRecordsRegion, region.status().ToString().c_str());
        return 1;
    }
    bool gpspm = (*region)->replicas()[0].gpspm;
    if (gpspm != (options.persistence == "gpspm")) {
        fprintf(stderr,
                "powercut_writer: cycle %u: rpmad was configured with %s but its session "
                "persists with %s: check the guest's rpmad.yaml\n",
                options.cycle, options.persistence.c_str(), gpspm ? "gpspm" : "apm");
        return 1;
    }

    CutState state;
    int creates = 0, deletes = 0;
    Status churn_end;
    bool churn_failed_before_cut = false;
    std::thread churn;
    if (options.churn)
        churn = std::thread([&] {
            churn_end = Churn(options, state, *churn_log, &creates, &deletes);
            // Cut() holds the mutex while it kills and marks the cut, so a
            // call that failed because of the cut sees it marked here.
            std::lock_guard lock(state.mu);
            churn_failed_before_cut = !churn_end.ok() && !state.cut;
        });
    std::thread cutter([&] { Cut(options, state); });

    uint64_t first = *next, seq = first, acknowledged = 0;
    Status write_end;
    std::byte record[kRecordSize];
    for (;; seq++) {
        if ((seq + 1) * kRecordSize > (*region)->size()) {
            write_end = Status(rpma::client::StatusCode::kResourceExhausted,
                               "the records region is full: give --records-region-size more");
            break;
        }
        EncodeRecord(seq, options.cycle, record);
        write_end = options.no_persist ? (*region)->Write(seq * kRecordSize, record)
                                       : (*region)->WritePersist(seq * kRecordSize, record);
        if (!write_end.ok())
            break;
        if (Status s = records_log->Append(AckedRecord{seq, options.cycle}); !s.ok()) {
            write_end = s;
            break;
        }
        acknowledged++;
        if (acknowledged == 1) {
            std::lock_guard lock(state.mu);
            state.first_ack = true;
            state.cv.notify_all();
        }
    }
    {
        std::lock_guard lock(state.mu);
        state.done = true;
    }
    state.cv.notify_all();
    cutter.join();
    if (churn.joinable())
        churn.join();

    printf(
        "WRITE cycle=%u persistence=%s%s churn=%s acknowledged=%llu first_seq=%llu "
        "region_creates=%d region_deletes=%d in_flight_at_cut=%s\n",
        options.cycle, options.persistence.c_str(), options.no_persist ? "(not persisted)" : "",
        options.churn ? "yes" : "no", static_cast<unsigned long long>(acknowledged),
        static_cast<unsigned long long>(first), creates, deletes, state.in_flight_at_cut.c_str());
    printf("    writes ended with: %s\n", write_end.ToString().c_str());
    if (options.churn)
        printf("    region changes ended with: %s\n",
               churn_end.ok() ? "no error" : churn_end.ToString().c_str());
    if (!state.cut) {
        fprintf(stderr, "powercut_writer: cycle %u: the writes ended before the cut: %s\n",
                options.cycle, write_end.ToString().c_str());
        return 1;
    }
    if (churn_failed_before_cut) {
        fprintf(stderr, "powercut_writer: cycle %u: a region change failed before the cut: %s\n",
                options.cycle, churn_end.ToString().c_str());
        return 1;
    }
    return 0;
}

}  // namespace powercut
