#include "client/rpmactl/replica_states.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "replica_set_state.h"

namespace rpmactl {
namespace {

namespace v1 = ::rpmad::v1;

const v1::ReplicaSetMember *FindMember(const v1::ReplicaSetRecord &record,
                                       const std::string &daemon_id) {
    if (daemon_id.empty())
        return nullptr;
    for (const auto &member : record.members())
        if (member.daemon_id() == daemon_id)
            return &member;
    return nullptr;
}

}  // namespace

SetVerdict DecideReplicaStates(const std::vector<ReplicaRecord> &replicas) {
    SetVerdict verdict;
    // The library's own decision (what Region::Open makes of these
    // records), as a reader that opens whatever it reached: rpmactl shows
    // states even when it reached fewer than a majority, and says so.
    rpma::client::ReplicaSetInput input;
    input.region = "-";
    input.writer = false;
    input.force = true;
    input.quorum = 1;
    std::set<std::string> set_ids;
    for (size_t i = 0; i < replicas.size(); ++i) {
        const ReplicaRecord &r = replicas[i];
        input.addresses.push_back("replica " + std::to_string(i));
        rpma::client::ReplicaSetAnswer answer;
        if (r.reached) {
            answer.kind = rpma::client::ReplicaSetAnswer::Kind::kRecord;
            answer.record = r.record;
            answer.daemon_id = r.daemon_id;
            if (r.record.generation() > 0)
                set_ids.insert(r.record.set_id());
        }
        input.answers.push_back(std::move(answer));
    }
    const rpma::client::ReplicaSetDecision decision = rpma::client::DecideReplicaSet(input);
    verdict.newest = decision.newest;
    const uint64_t newest = decision.newest.generation();
    verdict.conflicting_sets = set_ids.size() > 1;
    // Trust, against the record's own members (the servers rpmactl was
    // given need not be the set's).
    verdict.members = static_cast<size_t>(verdict.newest.members_size());
    for (const auto &member : verdict.newest.members())
        verdict.members_reached += std::any_of(replicas.begin(), replicas.end(), [&](auto &r) {
            return r.reached && !r.daemon_id.empty() && r.daemon_id == member.daemon_id();
        });
    verdict.trusted = newest > 0 && verdict.members_reached * 2 > verdict.members;

    for (size_t i = 0; i < replicas.size(); ++i) {
        const ReplicaRecord &r = replicas[i];
        ReplicaVerdict v;
        v.own_generation = r.record.generation();
        v.why = i < decision.why.size() ? decision.why[i] : "";
        if (!r.reached) {
            v.condition = ReplicaCondition::kUnknown;
            v.why = "not reached";
        } else if (newest == 0) {
            v.condition = ReplicaCondition::kUnrecorded;
        } else if (i < decision.in_sync.size() && decision.in_sync[i]) {
            v.condition = ReplicaCondition::kInSync;
        } else {
            const v1::ReplicaSetMember *member = FindMember(verdict.newest, r.daemon_id);
            v.condition =
                member != nullptr && member->state() == v1::ReplicaSetMember::STATE_REPAIRING
                    ? ReplicaCondition::kRepairing
                    : ReplicaCondition::kStale;
            // Since when: the newest record's word for it, else another
            // record of that generation's (equal generations that differ),
            // else the first generation its daemon lacks.
            v.stale_since = i < decision.stale_since.size() ? decision.stale_since[i] : 0;
            for (const auto &other : replicas) {
                if (v.stale_since > 0)
                    break;
                if (!other.reached || other.record.generation() != newest)
                    continue;
                const v1::ReplicaSetMember *m = FindMember(other.record, r.daemon_id);
                if (m != nullptr && m->state() != v1::ReplicaSetMember::STATE_IN_SYNC)
                    v.stale_since = m->stale_since();
            }
            if (v.stale_since == 0)
                v.stale_since =
                    member != nullptr && v.own_generation < newest ? v.own_generation + 1 : newest;
            if (v.condition == ReplicaCondition::kRepairing && r.progress &&
                r.progress->total_bytes() > 0) {
                v.repair_fraction =
                    std::min(1.0, static_cast<double>(r.progress->bytes_compared()) /
                                      static_cast<double>(r.progress->total_bytes()));
                v.repair_reported_unix_seconds = r.progress->reported_unix_seconds();
            }
        }
        verdict.replicas.push_back(std::move(v));
    }
    return verdict;
}

std::string DescribeReplica(const ReplicaVerdict &verdict) {
    switch (verdict.condition) {
        case ReplicaCondition::kInSync:
            return "in-sync";
        case ReplicaCondition::kStale:
            return "stale (missed writes since generation " + std::to_string(verdict.stale_since) +
                   ")";
        case ReplicaCondition::kRepairing:
            if (!verdict.repair_fraction)
                return "repairing (no progress reported)";
            return "repairing " +
                   std::to_string(static_cast<int>(std::floor(*verdict.repair_fraction * 100))) +
                   "%";
        case ReplicaCondition::kUnrecorded:
            return "unrecorded";
        case ReplicaCondition::kUnknown:
            break;
    }
    return "unknown";
}

const char *ConditionName(ReplicaCondition condition) {
    switch (condition) {
        case ReplicaCondition::kInSync:
            return "in_sync";
        case ReplicaCondition::kStale:
            return "stale";
        case ReplicaCondition::kRepairing:
            return "repairing";
        case ReplicaCondition::kUnrecorded:
            return "unrecorded";
        case ReplicaCondition::kUnknown:
            break;
    }
    return "unknown";
}

}  // namespace rpmactl
