// The replica-set rules of client/REPLICA_SETS.md as pure functions: what
// an opener makes of the records its replicas answered (rules 3-5), the
// records a writer writes (rules 2, 5, 6) and when a change counts as
// recorded (rule 1). No RPC here: Region::Impl gathers the answers and
// sends the records (region.cc, region_resync.cc); the unit tests feed
// this module every case.
#ifndef CLIENT_SRC_REPLICA_SET_STATE_H
#define CLIENT_SRC_REPLICA_SET_STATE_H

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "proto/rpmad/v1/rpmad.pb.h"
#include "rpma/client/status.h"

namespace rpma::client {

// The daemon id recorded for member `i` whose daemon was never reached (a
// record needs one per member, each different): 32 hex digits, zeros then
// the index, that no daemon picks (they are random), so that the daemon
// found at that address later is stale until repaired.
std::string UnknownDaemonId(size_t i);

// A change needs this many of `members` members.
inline size_t Majority(size_t members) {
    return members / 2 + 1;
}

// What replica i's daemon answered to GetReplicaSet.
struct ReplicaSetAnswer {
    enum class Kind {
        kUnreached,      // no answer (or the region is not there): `error`
        kRecord,         // `record` (generation 0: none recorded), `daemon_id`
        kUnimplemented,  // a daemon older than the records
    };
    Kind kind = Kind::kUnreached;
    Status error;
    ::rpmad::v1::ReplicaSetRecord record;
    std::string daemon_id;
};

struct ReplicaSetInput {
    std::string region;                  // for messages
    std::vector<std::string> addresses;  // the writer's ReplicaSet order
    std::vector<ReplicaSetAnswer> answers;
    size_t quorum = 1;   // resolved: at least 1, at most addresses.size()
    bool writer = true;  // false: OpenOptions::read_only
    bool force = false;  // OpenOptions::force
    bool repair_takeover = false;
    // For a record this opener writes.
    std::string writer_id;  // "host pid N"
    int64_t now_unix = 0;
    std::string new_set_id;  // given to a region never recorded
    // Cluster mode: the region's record as etcd holds it, which decides
    // instead of the replicas' own (they need no majority): a member is in
    // sync when the record says so for the daemon reached at its address.
    // A writer always records a change (generation + 1, the members it did
    // not reach STALE), which fences older writers' sessions on the
    // daemons before its first write.
    const ::rpmad::v1::ReplicaSetRecord *authority = nullptr;
};

struct ReplicaSetDecision {
    // Not ok: the open fails with it (kUnavailable, kQuorumLost,
    // kFailedPrecondition); the rest is filled in as far as it got.
    Status status;
    // Every daemon reached predates the records: no record is read or
    // written, the replicas reached are in sync.
    bool legacy = false;
    // The record trusted (generation 0: none).
    ::rpmad::v1::ReplicaSetRecord newest;
    // Per replica (addresses' order).
    std::vector<bool> in_sync;
    std::vector<uint64_t> stale_since;  // 0 while in sync or unknown
    std::vector<std::string> why;       // why not in sync ("" when in sync)
    // A writer whose view differs from `newest`: the record to write
    // (newest.generation + 1, expected newest.generation) before it opens
    // sessions, under its generation.
    std::optional<::rpmad::v1::ReplicaSetRecord> change;
};

ReplicaSetDecision DecideReplicaSet(const ReplicaSetInput &in);

// `held` with generation + 1, the writer, the time and `reason`; members
// unchanged (SetMemberState changes them).
::rpmad::v1::ReplicaSetRecord Successor(const ::rpmad::v1::ReplicaSetRecord &held,
                                        const std::string &writer_id, int64_t now_unix,
                                        const std::string &reason);
// Member `i` of `record` in `state`: stale_since becomes the record's
// generation when it leaves IN_SYNC, 0 when it enters it, and stays
// otherwise.
void SetMemberState(::rpmad::v1::ReplicaSetRecord *record, size_t i,
                    ::rpmad::v1::ReplicaSetMember::State state);

// Rule 1: a change counts as recorded once every IN_SYNC member of `record`
// and a majority of all members accepted it (`accepted` by member index);
// `force` waives the majority. Ok, or kQuorumLost saying how many accepted
// of how many needed, `what` first ("recording replica 2 stale").
Status RecordedVerdict(const ::rpmad::v1::ReplicaSetRecord &record,
                       const std::vector<bool> &accepted, bool force, const std::string &what);

// The member of `record` that is daemon `daemon_id`, or nullptr.
const ::rpmad::v1::ReplicaSetMember *ByDaemon(const ::rpmad::v1::ReplicaSetRecord &record,
                                              const std::string &daemon_id);

// The members' part of two records (daemon, address, state, stale_since).
bool SameMembers(const ::rpmad::v1::ReplicaSetRecord &a, const ::rpmad::v1::ReplicaSetRecord &b);

// "generation 7, by host pid 12, at 2026-12-04 15:02:18 UTC (replica failed)"
std::string DescribeRecord(const ::rpmad::v1::ReplicaSetRecord &record);

}  // namespace rpma::client

#endif  // CLIENT_SRC_REPLICA_SET_STATE_H
