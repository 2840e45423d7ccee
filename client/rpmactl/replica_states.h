// Which replicas of a region hold every acknowledged write, decided from
// the replica-set records of the daemons rpmactl reached, by the rules the
// client library applies when it opens a region (client/REPLICA_SETS.md,
// rules 3 and 4):
//   - the newest record is the one of the highest generation among the
//     daemons reached; it is trusted only when a majority of its members
//     were reached (otherwise a newer one may be on a member not reached);
//   - a replica is in sync only if the newest record says IN_SYNC for its
//     daemon (same daemon_id) *and* that daemon holds the newest generation
//     itself; when records of the newest generation differ, only if every
//     one of them says so;
//   - anything else is stale: an older generation, a daemon the record does
//     not know (another daemon at the address, a region created again), a
//     member marked STALE, or REPAIRING (being copied into).
// A daemon's own record can be stale itself (a replica that missed a change
// still believes the old record): that is why every daemon's record counts,
// not only the one of the replica shown. Which replicas are in sync is the
// library's own decision (//client:replica_set_state, DecideReplicaSet, as
// a forced reader); this adds what an operator is shown: repairing and its
// progress, since when, and whether a majority of the record's members was
// reached.
#ifndef CLIENT_RPMACTL_REPLICA_STATES_H
#define CLIENT_RPMACTL_REPLICA_STATES_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "proto/rpmad/v1/rpmad.pb.h"

namespace rpmactl {

// What one daemon said about the region (GetRegion), or that it said
// nothing (not reached, or it has no such region).
struct ReplicaRecord {
    bool reached = false;
    std::string daemon_id;
    rpmad::v1::ReplicaSetRecord record;  // generation 0: none
    std::optional<rpmad::v1::RepairProgress> progress;
};

enum class ReplicaCondition {
    kUnrecorded,  // no daemon reached holds a record: never opened by a writer
    kInSync,
    kStale,
    kRepairing,
    kUnknown,  // not reached: nothing can be said
};

struct ReplicaVerdict {
    ReplicaCondition condition = ReplicaCondition::kUnknown;
    // kStale, kRepairing: the generation from which it misses writes (the
    // record's stale_since, else the first generation this daemon lacks).
    uint64_t stale_since = 0;
    // This daemon's own record's generation.
    uint64_t own_generation = 0;
    // kRepairing: bytes compared of the region, when the repairer reported.
    std::optional<double> repair_fraction;
    int64_t repair_reported_unix_seconds = 0;
    // Why it is not in sync, for people (empty when in sync): "marked stale
    // at generation 5", "holds generation 4 of 5", "not a member of the
    // record (another daemon at this address?)".
    std::string why;
};

struct SetVerdict {
    // The newest record (generation 0 when none was found).
    rpmad::v1::ReplicaSetRecord newest;
    size_t members = 0;          // in the newest record
    size_t members_reached = 0;  // of those, reached (by daemon_id)
    // A majority of the newest record's members was reached: the newest
    // record is the newest there is.
    bool trusted = false;
    // Records of different set_ids among the daemons (two applications
    // naming different sets for one region name).
    bool conflicting_sets = false;
    // One per ReplicaRecord given, in order.
    std::vector<ReplicaVerdict> replicas;
};

SetVerdict DecideReplicaStates(const std::vector<ReplicaRecord> &replicas);

// "in-sync", "stale (missed writes since generation G)", "repairing 42%",
// "repairing (no progress reported)", "unrecorded", "unknown".
std::string DescribeReplica(const ReplicaVerdict &verdict);

// "in_sync", "stale", "repairing", "unrecorded", "unknown" (JSON).
const char *ConditionName(ReplicaCondition condition);

}  // namespace rpmactl

#endif  // CLIENT_RPMACTL_REPLICA_STATES_H
