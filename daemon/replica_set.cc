#include "daemon/replica_set.h"

#include <set>

#include "daemon/catalog.h"
#include "daemon/daemon_id.h"

namespace rpmad {
namespace {

Status Invalid(const std::string &why) {
    return Status(StatusCode::kInvalidArgument, "replica-set record refused: " + why);
}

Status CheckLength(const std::string &field, const std::string &value) {
    if (value.size() > kMaxReplicaSetString)
        return Invalid(field + " is " + std::to_string(value.size()) + " bytes, more than " +
                       std::to_string(kMaxReplicaSetString));
    return Status();
}

}  // namespace

StatusOr<v1::ReplicaSetRecord> ParseReplicaSetRecord(const std::string &bytes) {
    v1::ReplicaSetRecord record;
    if (!bytes.empty() && !record.ParseFromString(bytes))
        return Status(StatusCode::kFailedPrecondition,
                      "the catalog holds a replica-set record that does not parse");
    return record;
}

const v1::ReplicaSetMember *FindMember(const v1::ReplicaSetRecord &record,
                                       std::string_view daemon_id) {
    for (const v1::ReplicaSetMember &member : record.members())
        if (member.daemon_id() == daemon_id)
            return &member;
    return nullptr;
}

Status ValidateReplicaSetRecord(const v1::ReplicaSetRecord &record, std::string_view daemon_id) {
    if (record.set_id().empty())
        return Invalid(
            "set_id is empty (a writer gives a set a random id when it first records it)");
    if (record.generation() == 0)
        return Invalid("generation 0 means never recorded; a change is generation 1 or more");
    if (record.members_size() == 0 || record.members_size() > kMaxReplicaSetMembers)
        return Invalid("it lists " + std::to_string(record.members_size()) +
                       " members; a set has 1 to " + std::to_string(kMaxReplicaSetMembers));
    if (record.quorum() > static_cast<uint32_t>(record.members_size()))
        return Invalid("quorum " + std::to_string(record.quorum()) + " is more than its " +
                       std::to_string(record.members_size()) + " members");
    for (Status s : {CheckLength("set_id", record.set_id()), CheckLength("writer", record.writer()),
                     CheckLength("reason", record.reason())})
        if (!s.ok())
            return s;
    std::set<std::string_view> seen;
    for (int i = 0; i < record.members_size(); ++i) {
        const v1::ReplicaSetMember &member = record.members(i);
        const std::string which = "member " + std::to_string(i);
        if (!IsDaemonId(member.daemon_id()))
            return Invalid(which + " has daemon_id '" + member.daemon_id().substr(0, 64) +
                           "'; a daemon id is 32 lowercase hex digits (Stats.daemon_id)");
        if (!seen.insert(member.daemon_id()).second)
            return Invalid(which + " is daemon " + member.daemon_id() +
                           ", which the record already lists");
        if (member.state() == v1::ReplicaSetMember::STATE_UNSPECIFIED ||
            !v1::ReplicaSetMember::State_IsValid(member.state()))
            return Invalid(which + " (" + member.daemon_id() +
                           ") has no state: IN_SYNC, STALE or REPAIRING");
        if (Status s = CheckLength(which + "'s address", member.address()); !s.ok())
            return s;
    }
    if (seen.count(daemon_id) == 0)
        return Invalid("this daemon (" + std::string(daemon_id) +
                       ") is not among its members: a daemon keeps only the records of sets it "
                       "belongs to");
    if (record.ByteSizeLong() > kMaxReplicaSetRecordBytes)
        return Invalid("it is " + std::to_string(record.ByteSizeLong()) + " bytes, more than " +
                       std::to_string(kMaxReplicaSetRecordBytes));
    return Status();
}

StatusOr<bool> DecideReplicaSetChange(const v1::ReplicaSetRecord &current,
                                      uint64_t expected_generation,
                                      const v1::ReplicaSetRecord &proposed,
                                      std::string_view daemon_id) {
    if (Status valid = ValidateReplicaSetRecord(proposed, daemon_id); !valid.ok())
        return valid;
    if (expected_generation == UINT64_MAX || proposed.generation() != expected_generation + 1)
        return Invalid("generation " + std::to_string(proposed.generation()) +
                       " does not follow expected_generation " +
                       std::to_string(expected_generation) + ": every change adds exactly 1");
    if (expected_generation != current.generation())
        return false;
    if (current.generation() > 0 && proposed.set_id() != current.set_id())
        return Invalid("set_id '" + proposed.set_id() + "' is not the recorded set's ('" +
                       current.set_id() + "'): another replica set of this region name holds it");
    return true;
}

}  // namespace rpmad
