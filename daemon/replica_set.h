// The rules a daemon applies to a region's replica-set record
// (rpmad.v1.ReplicaSetRecord, client/REPLICA_SETS.md): what a well-formed
// record is, and when a SetReplicaSet applies. Pure functions over the
// messages, so that every rule is tested without a daemon; Daemon
// serializes the changes of a region, stores them and fences sessions.
#ifndef DAEMON_REPLICA_SET_H
#define DAEMON_REPLICA_SET_H

#include <cstdint>
#include <string>
#include <string_view>

#include "daemon/status.h"
#include "proto/rpmad/v1/rpmad.pb.h"

namespace rpmad {

// Bounds of a record, so that the catalog stays small and a caller cannot
// make it large.
inline constexpr int kMaxReplicaSetMembers = 64;
inline constexpr size_t kMaxReplicaSetString = 256;

// The record kept in the catalog; generation 0 (an empty record) when
// `bytes` is empty. FAILED_PRECONDITION when the bytes do not parse
// (damage the catalog's checksum did not catch).
StatusOr<v1::ReplicaSetRecord> ParseReplicaSetRecord(const std::string &bytes);

// The member that is the daemon `daemon_id`, or nullptr.
const v1::ReplicaSetMember *FindMember(const v1::ReplicaSetRecord &record,
                                       std::string_view daemon_id);

// INVALID_ARGUMENT, saying what is wrong, unless `record` is one a daemon
// `daemon_id` may hold: a set_id, 1 to kMaxReplicaSetMembers members with
// distinct well-formed daemon ids and a state each, this daemon among them,
// a quorum of at most the members, strings of at most kMaxReplicaSetString
// bytes, generation > 0.
Status ValidateReplicaSetRecord(const v1::ReplicaSetRecord &record, std::string_view daemon_id);

// Whether SetReplicaSet(expected_generation, proposed) applies to a daemon
// `daemon_id` holding `current`: true to apply, false (not applied: another
// writer changed it) when expected_generation is not current's generation.
// INVALID_ARGUMENT, changing nothing, for a malformed `proposed`, a
// generation other than expected_generation + 1, or a set_id other than
// current's once one was recorded.
StatusOr<bool> DecideReplicaSetChange(const v1::ReplicaSetRecord &current,
                                      uint64_t expected_generation,
                                      const v1::ReplicaSetRecord &proposed,
                                      std::string_view daemon_id);

}  // namespace rpmad

#endif  // DAEMON_REPLICA_SET_H
