#include "client/rpmactl/set_view.h"

#include <cmath>

namespace rpmactl {

namespace v1 = ::rpmad::v1;

ReplicaRecord RecordOf(const v1::Region &region) {
    ReplicaRecord record;
    record.reached = true;
    record.daemon_id = region.daemon_id();
    record.record = region.replica_set();
    if (region.has_repair_progress() && region.repair_progress().total_bytes() > 0)
        record.progress = region.repair_progress();
    return record;
}

SetView ReadSetView(Daemons &daemons, const std::string &name) {
    SetView view;
    v1::GetRegionRequest request;
    request.set_name(name);
    view.answers = AskEach<v1::Region>(
        daemons, [&](rpma::client::ControlPlane &d, grpc::ClientContext *c, v1::Region *out) {
            return d.regions().GetRegion(c, request, out);
        });
    std::vector<ReplicaRecord> records;
    for (const auto &answer : view.answers)
        records.push_back(answer.status.ok() ? RecordOf(answer.response) : ReplicaRecord());
    view.verdict = DecideReplicaStates(records);
    return view;
}

std::string StateCell(const v1::Region &region, const ReplicaVerdict &verdict) {
    if (!region.healthy())
        return "damaged: " + region.problem();
    return DescribeReplica(verdict);
}

Json StateJson(const v1::Region &region, const ReplicaVerdict &verdict, const SetVerdict &set) {
    Json percent = nullptr;
    if (verdict.repair_fraction)
        percent = static_cast<int>(std::floor(*verdict.repair_fraction * 100));
    return Json{{"state", ConditionName(verdict.condition)},
                {"description", StateCell(region, verdict)},
                {"stale_since", verdict.stale_since},
                {"repair_percent", percent},
                {"generation", verdict.own_generation},
                {"newest_generation", set.newest.generation()},
                {"trusted", set.trusted},
                {"why", verdict.why}};
}

std::string VerdictWarning(const std::string &region, const SetVerdict &set) {
    if (set.conflicting_sets)
        return "region " + region +
               ": the daemons hold records of different replica sets (two applications name "
               "different sets for this region name): the states shown follow the newest one";
    if (set.newest.generation() > 0 && !set.trusted)
        return "region " + region + ": reached " + std::to_string(set.members_reached) + " of " +
               std::to_string(set.members) +
               " members of its replica set, fewer than a majority: a newer record may be on a "
               "member not reached, so a replica shown in-sync may be stale (give every "
               "member's --server)";
    return "";
}

}  // namespace rpmactl
