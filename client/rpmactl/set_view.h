// A region as every --server's daemon describes it (GetRegion), and which
// of those replicas are in sync by the replica-set rules applied to all of
// their records together (replica_states.h): what region list/info, get,
// verify and repair start from.
#ifndef CLIENT_RPMACTL_SET_VIEW_H
#define CLIENT_RPMACTL_SET_VIEW_H

#include <string>
#include <vector>

#include "client/rpmactl/daemons.h"
#include "client/rpmactl/replica_states.h"

namespace rpmactl {

// What the replica-set rules need of one daemon's Region (reached: it has
// the region).
ReplicaRecord RecordOf(const rpmad::v1::Region &region);

struct SetView {
    // One per daemon, in --server order.
    std::vector<Answer<rpmad::v1::Region>> answers;
    SetVerdict verdict;

    bool in_sync(size_t replica) const {
        return verdict.replicas[replica].condition == ReplicaCondition::kInSync;
    }
};

// GetRegion(`name`) of every daemon at once, and the verdict.
SetView ReadSetView(Daemons &daemons, const std::string &name);

// The replica's state for people: "in-sync", "stale (missed writes since
// generation G)", "repairing N%", "unrecorded", or "damaged: PROBLEM" when
// its daemon says the region is unhealthy (that comes first).
std::string StateCell(const rpmad::v1::Region &region, const ReplicaVerdict &verdict);

// {"state": "in_sync"|"stale"|"repairing"|"unrecorded"|"unknown",
//  "description": StateCell, "stale_since": G, "repair_percent": N|null,
//  "generation": own, "newest_generation": newest, "trusted": bool}.
Json StateJson(const rpmad::v1::Region &region, const ReplicaVerdict &verdict,
               const SetVerdict &set);

// A warning line (empty when none) about what the verdict cannot be sure
// of: fewer than a majority of the record's members reached, records of
// different sets.
std::string VerdictWarning(const std::string &region, const SetVerdict &set);

}  // namespace rpmactl

#endif  // CLIENT_RPMACTL_SET_VIEW_H
