#include "tests/powercut/verify_boot.h"

#include <cstdio>
#include <map>
#include <set>
#include <vector>

#include "rpma/client/control_plane.h"
#include "rpma/client/region.h"
#include "tests/powercut/ack_log.h"
#include "tests/powercut/record.h"

namespace powercut {
namespace {

using rpma::client::ControlPlane;
using rpma::client::Region;
using rpma::client::Status;

constexpr size_t kChunk = size_t{1} << 20;

// What the churn log says of one region.
struct ChurnEvents {
    uint64_t size = 0;
    bool create_sent = false, created = false, delete_sent = false, deleted = false;
};

// Opens `name` (it must exist) and reads it from end to end into `out`.
Status ReadWhole(const Endpoints &endpoints, const std::string &name, uint64_t expected_size,
                 std::vector<std::byte> *out) {
    rpma::client::OpenOptions open;
    open.operation_timeout = std::chrono::milliseconds(30000);
    auto region = Region::Open(endpoints.Set(), name, open);
    if (!region.ok())
        return region.status();
    if ((*region)->size() != expected_size)
        return Status(rpma::client::StatusCode::kInternal,
                      "region " + name + " has " + std::to_string((*region)->size()) +
                          " bytes, the catalog listed " + std::to_string(expected_size));
    out->assign(expected_size, std::byte{0});
    for (uint64_t offset = 0; offset < expected_size; offset += kChunk) {
        size_t length = std::min<uint64_t>(kChunk, expected_size - offset);
        if (Status s = (*region)->Read(offset, std::span(out->data() + offset, length), 0); !s.ok())
            return s;
    }
    return Status::Ok();
}

}  // namespace

int VerifyAfterCut(const Endpoints &endpoints, const std::string &state_dir, uint32_t cycle) {
    int problems = 0;
    auto complain = [&](const std::string &what) {
        if (++problems <= 20)
            printf("    PROBLEM: %s\n", what.c_str());
    };

    auto control = ControlPlane::Connect(endpoints.control, {});
    if (!control.ok()) {
        printf("VERIFY cycle=%u FAIL: %s\n", cycle, control.status().ToString().c_str());
        return 1;
    }
    rpmad::v1::ListRegionsResponse listed;
    grpc::Status got = (*control)->regions().ListRegions((*control)->Context().get(),
                                                         rpmad::v1::ListRegionsRequest(), &listed);
    rpmad::v1::Stats stats;
    if (got.ok())
        got = (*control)->daemon().GetStats((*control)->Context().get(),
                                            rpmad::v1::GetStatsRequest(), &stats);
    if (!got.ok()) {
        printf("VERIFY cycle=%u FAIL: %s\n", cycle,
               rpma::client::FromGrpc(got, endpoints.control).ToString().c_str());
        return 1;
    }
    if (stats.unhealthy_regions() != 0)
        complain("rpmad reports " + std::to_string(stats.unhealthy_regions()) +
                 " damaged region(s)");

    auto records_log = ReadAckLog(RecordsLog(state_dir));
    auto churn_log = ReadAckLog(ChurnLog(state_dir, cycle));
    for (const Status &s : {records_log.status(), churn_log.status()}) {
        if (!s.ok()) {
            printf("VERIFY cycle=%u FAIL: %s\n", cycle, s.ToString().c_str());
            return 1;
        }
    }
    std::map<std::string, ChurnEvents> churn;
    for (const RegionChange &c : churn_log->changes) {
        ChurnEvents &e = churn[c.name];
        if (c.kind == RegionChange::kCreateSent || c.kind == RegionChange::kCreated)
            e.size = c.size;
        e.create_sent |= c.kind == RegionChange::kCreateSent;
        e.created |= c.kind == RegionChange::kCreated;
        e.delete_sent |= c.kind == RegionChange::kDeleteSent;
        e.deleted |= c.kind == RegionChange::kDeleted;
    }

    // Every listed region: healthy, known, of its size, readable end to end.
    std::set<std::string> present;
    std::vector<std::byte> records;
    for (const auto &r : listed.regions()) {
        present.insert(r.name());
        if (!r.healthy())
            complain("region " + r.name() + " is listed damaged: " + r.problem());
        uint64_t expected = r.size();
        if (r.name() != kRecordsRegion) {
            auto it = churn.find(r.name());
            if (it == churn.end()) {
                complain("region " + r.name() + " is listed but was never created");
                continue;
            }
            if (it->second.size != r.size())
                complain("region " + r.name() + " is listed with " + std::to_string(r.size()) +
                         " bytes, created with " + std::to_string(it->second.size));
            expected = it->second.size;
        }
        std::vector<std::byte> bytes;
        if (Status s = ReadWhole(endpoints, r.name(), expected, &bytes); !s.ok())
            complain("region " + r.name() + " is not readable: " + s.ToString());
        else if (r.name() == kRecordsRegion)
            records = std::move(bytes);
    }

    // Every acknowledged record, intact.
    uint64_t acknowledged = 0, verified = 0, lost = 0;
    for (const AckedRecord &r : records_log->records) {
        acknowledged++;
        uint64_t seq = r.seq;
        uint32_t written_in = r.cycle;
        SlotState state = SlotState::kEmpty;
        if ((seq + 1) * kRecordSize <= records.size())
            state = CheckRecord(std::span<const std::byte, kRecordSize>(
                                    records.data() + seq * kRecordSize, kRecordSize),
                                seq, written_in);
        if (state == SlotState::kIntact) {
            verified++;
        } else {
            lost++;
            complain("record " + std::to_string(seq) + " of cycle " + std::to_string(written_in) +
                     " was acknowledged and is " + SlotStateName(state) +
                     (records.empty() ? " (no records region)" : ""));
        }
    }

    // The catalog's changes: acknowledged ones hold, one in flight is whole
    // or absent (whole: checked above for every listed region).
    int in_flight_present = 0, in_flight_absent = 0;
    std::string in_flight;
    for (const auto &[name, e] : churn) {
        bool is = present.count(name) != 0;
        if (e.deleted && is)
            complain("region " + name + " is listed although its delete was acknowledged");
        else if (e.created && !e.delete_sent && !is)
            complain("region " + name + " is missing although its create was acknowledged");
        else if ((e.create_sent && !e.created) || (e.delete_sent && !e.deleted)) {
            (is ? in_flight_present : in_flight_absent)++;
            in_flight += " " + std::string(e.created ? "delete:" : "create:") + name + "=" +
                         (is ? "present" : "absent");
        }
    }

    printf(
        "VERIFY cycle=%u regions=%d acknowledged=%llu verified=%llu lost=%llu "
        "in_flight_present=%d in_flight_absent=%d problems=%d%s\n",
        cycle, listed.regions_size(), static_cast<unsigned long long>(acknowledged),
        static_cast<unsigned long long>(verified), static_cast<unsigned long long>(lost),
        in_flight_present, in_flight_absent, problems,
        in_flight.empty() ? "" : ("\n    in flight at the cut:" + in_flight).c_str());

    // The next cycle starts from the records region alone.
    for (const std::string &name : present) {
        if (name == kRecordsRegion)
            continue;
        rpmad::v1::DeleteRegionRequest request;
        request.set_name(name);
        request.set_force(true);
        rpmad::v1::DeleteRegionResponse response;
        grpc::Status deleted =
            (*control)->regions().DeleteRegion((*control)->Context().get(), request, &response);
        if (!deleted.ok())
            complain("cannot delete region " + name + " after the check: " +
                     rpma::client::FromGrpc(deleted, endpoints.control).ToString());
    }
    return problems == 0 ? 0 : 1;
}

}  // namespace powercut
