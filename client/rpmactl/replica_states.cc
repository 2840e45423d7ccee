#include "client/rpmactl/replica_states.h"

#include <algorithm>
#include <cmath>
#include <set>

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
    uint64_t newest = 0;
    std::set<std::string> set_ids;
    for (const auto &r : replicas) {
        if (!r.reached || r.record.generation() == 0)
            continue;
        set_ids.insert(r.record.set_id());
        if (r.record.generation() > newest) {
            newest = r.record.generation();
            verdict.newest = r.record;
        }
    }
    verdict.conflicting_sets = set_ids.size() > 1;
    // Every record of the newest generation (equal generations can differ
    // when a writer died half-way through recording a change).
    std::vector<const v1::ReplicaSetRecord *> newest_records;
    for (const auto &r : replicas)
        if (r.reached && newest > 0 && r.record.generation() == newest)
            newest_records.push_back(&r.record);

    verdict.members = static_cast<size_t>(verdict.newest.members_size());
    for (const auto &member : verdict.newest.members())
        verdict.members_reached += std::any_of(replicas.begin(), replicas.end(), [&](auto &r) {
            return r.reached && !r.daemon_id.empty() && r.daemon_id == member.daemon_id();
        });
    verdict.trusted = newest > 0 && verdict.members_reached * 2 > verdict.members;

    for (const auto &r : replicas) {
        ReplicaVerdict v;
        v.own_generation = r.record.generation();
        if (!r.reached) {
            v.condition = ReplicaCondition::kUnknown;
            v.why = "not reached";
        } else if (newest == 0) {
            v.condition = ReplicaCondition::kUnrecorded;
        } else {
            // The member entry that decides: one that does not say IN_SYNC
            // if any record of the newest generation says so.
            const v1::ReplicaSetMember *member = nullptr;
            bool everywhere_in_sync = true;
            for (const auto *record : newest_records) {
                const v1::ReplicaSetMember *m = FindMember(*record, r.daemon_id);
                if (m == nullptr || m->state() != v1::ReplicaSetMember::STATE_IN_SYNC) {
                    everywhere_in_sync = false;
                    if (m != nullptr && (member == nullptr ||
                                         member->state() == v1::ReplicaSetMember::STATE_IN_SYNC))
                        member = m;
                } else if (member == nullptr) {
                    member = m;
                }
            }
            const bool holds_newest = r.record.generation() == newest;
            if (member != nullptr && everywhere_in_sync && holds_newest) {
                v.condition = ReplicaCondition::kInSync;
            } else if (member == nullptr) {
                v.condition = ReplicaCondition::kStale;
                v.stale_since = newest;
                v.why = "its daemon is not a member of the replica set's record (generation " +
                        std::to_string(newest) +
                        "): another daemon at this address, or the region created again";
            } else if (member->state() == v1::ReplicaSetMember::STATE_REPAIRING) {
                v.condition = ReplicaCondition::kRepairing;
                v.stale_since = member->stale_since() ? member->stale_since() : newest;
                v.why = "being repaired";
                if (r.progress && r.progress->total_bytes() > 0) {
                    v.repair_fraction =
                        std::min(1.0, static_cast<double>(r.progress->bytes_compared()) /
                                          static_cast<double>(r.progress->total_bytes()));
                    v.repair_reported_unix_seconds = r.progress->reported_unix_seconds();
                }
            } else if (member->state() != v1::ReplicaSetMember::STATE_IN_SYNC ||
                       !everywhere_in_sync) {
                v.condition = ReplicaCondition::kStale;
                v.stale_since = member->stale_since() ? member->stale_since() : newest;
                v.why = "marked stale in the replica set's record";
            } else {
                // IN_SYNC in the newest record, but its daemon did not take
                // that record: it may have missed what came with it.
                v.condition = ReplicaCondition::kStale;
                v.stale_since = r.record.generation() + 1;
                v.why = "its daemon holds generation " + std::to_string(r.record.generation()) +
                        " of the replica set, not the newest (" + std::to_string(newest) + ")";
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
