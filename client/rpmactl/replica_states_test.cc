#include "client/rpmactl/replica_states.h"

#include <gtest/gtest.h>

namespace rpmactl {
namespace {

namespace v1 = ::rpmad::v1;

struct Member {
    std::string daemon_id;
    v1::ReplicaSetMember::State state;
    uint64_t stale_since = 0;
};

v1::ReplicaSetRecord Record(uint64_t generation, const std::vector<Member> &members,
                            const std::string &set_id = "set") {
    v1::ReplicaSetRecord record;
    record.set_set_id(set_id);
    record.set_generation(generation);
    for (const Member &m : members) {
        auto *member = record.add_members();
        member->set_daemon_id(m.daemon_id);
        member->set_state(m.state);
        member->set_stale_since(m.stale_since);
    }
    return record;
}

ReplicaRecord Reached(const std::string &daemon_id, const v1::ReplicaSetRecord &record) {
    ReplicaRecord r;
    r.reached = true;
    r.daemon_id = daemon_id;
    r.record = record;
    return r;
}

constexpr auto kInSync = v1::ReplicaSetMember::STATE_IN_SYNC;
constexpr auto kStale = v1::ReplicaSetMember::STATE_STALE;
constexpr auto kRepairing = v1::ReplicaSetMember::STATE_REPAIRING;

TEST(ReplicaStates, EveryMemberInSyncAtTheNewestGeneration) {
    const auto record = Record(1, {{"a", kInSync}, {"b", kInSync}, {"c", kInSync}});
    const auto verdict =
        DecideReplicaStates({Reached("a", record), Reached("b", record), Reached("c", record)});
    EXPECT_TRUE(verdict.trusted);
    EXPECT_EQ(verdict.members_reached, 3u);
    for (const auto &v : verdict.replicas)
        EXPECT_EQ(DescribeReplica(v), "in-sync");
}

// The case: the killed replica's daemon still holds generation 1,
// where it is in sync; generation 2 on the others marks it stale. Its own
// record does not decide.
TEST(ReplicaStates, AReplicaThatMissedAChangeIsStaleWhateverItsOwnRecordSays) {
    const auto old_record = Record(1, {{"a", kInSync}, {"b", kInSync}, {"c", kInSync}});
    const auto new_record = Record(2, {{"a", kInSync}, {"b", kInSync}, {"c", kStale, 2}});
    const auto verdict = DecideReplicaStates(
        {Reached("a", new_record), Reached("b", new_record), Reached("c", old_record)});
    EXPECT_TRUE(verdict.trusted);
    EXPECT_EQ(verdict.newest.generation(), 2u);
    EXPECT_EQ(DescribeReplica(verdict.replicas[0]), "in-sync");
    EXPECT_EQ(DescribeReplica(verdict.replicas[1]), "in-sync");
    EXPECT_EQ(DescribeReplica(verdict.replicas[2]), "stale (missed writes since generation 2)");
    EXPECT_EQ(verdict.replicas[2].own_generation, 1u);
}

// IN_SYNC in the newest record (held by a majority), but its daemon holds
// an older one: it missed a change.
TEST(ReplicaStates, InSyncInTheNewestRecordButBehindIsStale) {
    const auto old_record = Record(3, {{"a", kInSync}, {"b", kInSync}, {"c", kInSync}});
    const auto new_record = Record(4, {{"a", kInSync}, {"b", kInSync}, {"c", kInSync}});
    const auto verdict = DecideReplicaStates(
        {Reached("a", new_record), Reached("b", new_record), Reached("c", old_record)});
    EXPECT_EQ(verdict.replicas[0].condition, ReplicaCondition::kInSync);
    EXPECT_EQ(verdict.replicas[2].condition, ReplicaCondition::kStale);
    EXPECT_EQ(verdict.replicas[2].stale_since, 4u);
}

// A newest generation held by fewer than a majority with every member
// reached cannot have been recorded: the library steps back from it.
TEST(ReplicaStates, ANewestGenerationOnFewerThanAMajorityIsSteppedBackFrom) {
    const auto old_record = Record(3, {{"a", kInSync}, {"b", kInSync}, {"c", kInSync}});
    const auto new_record = Record(4, {{"a", kInSync}, {"b", kInSync}, {"c", kInSync}});
    const auto verdict = DecideReplicaStates(
        {Reached("a", new_record), Reached("b", old_record), Reached("c", old_record)});
    for (const auto &v : verdict.replicas)
        EXPECT_EQ(v.condition, ReplicaCondition::kInSync) << v.why;
}

// Another daemon at a member's address (or the region created again): its
// daemon_id is not in the record.
TEST(ReplicaStates, ADaemonTheRecordDoesNotKnowIsStale) {
    const auto record = Record(5, {{"a", kInSync}, {"b", kInSync}, {"c", kInSync}});
    const auto verdict =
        DecideReplicaStates({Reached("a", record), Reached("b", record), Reached("x", {})});
    EXPECT_EQ(verdict.replicas[2].condition, ReplicaCondition::kStale);
    EXPECT_EQ(verdict.members_reached, 2u);
    EXPECT_TRUE(verdict.trusted);
}

// Two versions of one generation: the majority's is trusted, and the
// member holding the other is behind it.
TEST(ReplicaStates, OfTwoVersionsOfAGenerationTheMajoritysDecides) {
    const auto one = Record(6, {{"a", kInSync}, {"b", kInSync}, {"c", kInSync}});
    const auto other = Record(6, {{"a", kInSync}, {"b", kInSync}, {"c", kStale, 6}});
    const auto verdict =
        DecideReplicaStates({Reached("a", one), Reached("b", other), Reached("c", one)});
    EXPECT_EQ(verdict.replicas[0].condition, ReplicaCondition::kInSync);
    EXPECT_EQ(verdict.replicas[2].condition, ReplicaCondition::kInSync);
    EXPECT_EQ(verdict.replicas[1].condition, ReplicaCondition::kStale) << verdict.replicas[1].why;
    EXPECT_EQ(verdict.replicas[1].stale_since, 6u);
}

TEST(ReplicaStates, RepairingShowsTheReportedProgress) {
    const auto record = Record(3, {{"a", kInSync}, {"b", kInSync}, {"c", kRepairing, 2}});
    auto c = Reached("c", record);
    v1::RepairProgress progress;
    progress.set_generation(3);
    progress.set_bytes_compared(42);
    progress.set_total_bytes(100);
    c.progress = progress;
    const auto verdict = DecideReplicaStates({Reached("a", record), Reached("b", record), c});
    EXPECT_EQ(DescribeReplica(verdict.replicas[2]), "repairing 42%");
    EXPECT_EQ(verdict.replicas[2].stale_since, 2u);
    c.progress.reset();
    const auto silent = DecideReplicaStates({Reached("a", record), Reached("b", record), c});
    EXPECT_EQ(DescribeReplica(silent.replicas[2]), "repairing (no progress reported)");
}

// One member of three reached: the record it holds may not be the newest.
TEST(ReplicaStates, FewerThanAMajorityReachedIsNotTrusted) {
    const auto record = Record(2, {{"a", kInSync}, {"b", kInSync}, {"c", kStale, 2}});
    ReplicaRecord down;
    const auto verdict = DecideReplicaStates({Reached("a", record), down, down});
    EXPECT_FALSE(verdict.trusted);
    EXPECT_EQ(verdict.replicas[1].condition, ReplicaCondition::kUnknown);
}

TEST(ReplicaStates, NoRecordAnywhereIsUnrecordedAndDifferentSetsConflict) {
    const auto verdict = DecideReplicaStates({Reached("a", {}), Reached("b", {})});
    EXPECT_EQ(DescribeReplica(verdict.replicas[0]), "unrecorded");
    EXPECT_FALSE(verdict.trusted);
    const auto conflict = DecideReplicaStates({Reached("a", Record(1, {{"a", kInSync}}, "one")),
                                               Reached("b", Record(1, {{"b", kInSync}}, "two"))});
    EXPECT_TRUE(conflict.conflicting_sets);
}

}  // namespace
}  // namespace rpmactl
