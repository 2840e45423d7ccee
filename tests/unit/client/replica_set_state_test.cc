// The replica-set rules (client/REPLICA_SETS.md) as DecideReplicaSet and
// RecordedVerdict apply them: trust on a majority, the newest generation,
// one set id, daemon identities, ties, REPAIRING, and what a writer records.
#include "replica_set_state.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace rpma::client {
namespace {

namespace v1 = ::rpmad::v1;
using Member = v1::ReplicaSetMember;
using Kind = ReplicaSetAnswer::Kind;

std::string Daemon(int k) {
    return std::string(31, 'a') + std::to_string(k);
}

v1::ReplicaSetRecord Record(uint64_t generation, std::vector<Member::State> states,
                            std::string set_id = "set-1") {
    v1::ReplicaSetRecord r;
    r.set_set_id(set_id);
    r.set_generation(generation);
    r.set_writer("host pid 1");
    for (size_t i = 0; i < states.size(); ++i) {
        Member &m = *r.add_members();
        m.set_daemon_id(Daemon(static_cast<int>(i)));
        m.set_address("h:" + std::to_string(i));
        m.set_state(states[i]);
        m.set_stale_since(states[i] == Member::STATE_IN_SYNC ? 0 : generation);
    }
    return r;
}

constexpr auto kIn = Member::STATE_IN_SYNC;
constexpr auto kStale = Member::STATE_STALE;
constexpr auto kRepairing = Member::STATE_REPAIRING;

ReplicaSetAnswer Answer(const v1::ReplicaSetRecord &record, int daemon) {
    ReplicaSetAnswer a;
    a.kind = Kind::kRecord;
    a.record = record;
    a.daemon_id = Daemon(daemon);
    return a;
}

ReplicaSetAnswer Unreached() {
    ReplicaSetAnswer a;
    a.error = Status(StatusCode::kUnavailable, "unreachable");
    return a;
}

ReplicaSetInput Input(std::vector<ReplicaSetAnswer> answers, size_t quorum = 1) {
    ReplicaSetInput in;
    in.region = "r";
    for (size_t i = 0; i < answers.size(); ++i)
        in.addresses.push_back("h:" + std::to_string(i));
    in.answers = std::move(answers);
    in.quorum = quorum;
    in.writer_id = "host pid 2";
    in.now_unix = 1000;
    in.new_set_id = "new-set";
    return in;
}

TEST(ReplicaSetState, NeverRecordedWriterRecordsGenerationOneWithEveryReachedInSync) {
    const v1::ReplicaSetRecord none;
    const auto d = DecideReplicaSet(Input({Answer(none, 0), Answer(none, 1), Unreached()}, 2));
    ASSERT_TRUE(d.status.ok()) << d.status.ToString();
    EXPECT_EQ(d.in_sync, (std::vector<bool>{true, true, false}));
    ASSERT_TRUE(d.change.has_value());
    EXPECT_EQ(d.change->generation(), 1u);
    EXPECT_EQ(d.change->set_id(), "new-set");
    EXPECT_EQ(d.change->members(0).state(), kIn);
    EXPECT_EQ(d.change->members(0).daemon_id(), Daemon(0));
    EXPECT_EQ(d.change->members(2).state(), kStale);
    EXPECT_EQ(d.change->members(2).daemon_id(), UnknownDaemonId(2));
    EXPECT_EQ(UnknownDaemonId(2), "00000000000000000000000000000002");
    EXPECT_EQ(d.change->members(2).stale_since(), 1u);
}

TEST(ReplicaSetState, AReaderRecordsNothing) {
    const v1::ReplicaSetRecord none;
    auto in = Input({Answer(none, 0), Answer(none, 1), Answer(none, 2)});
    in.writer = false;
    const auto d = DecideReplicaSet(in);
    ASSERT_TRUE(d.status.ok());
    EXPECT_FALSE(d.change.has_value());
    EXPECT_EQ(d.in_sync, (std::vector<bool>{true, true, true}));
}

TEST(ReplicaSetState, AHealthyRecordedSetChangesNothing) {
    const auto r = Record(5, {kIn, kIn, kIn});
    const auto d = DecideReplicaSet(Input({Answer(r, 0), Answer(r, 1), Answer(r, 2)}, 3));
    ASSERT_TRUE(d.status.ok()) << d.status.ToString();
    EXPECT_EQ(d.in_sync, (std::vector<bool>{true, true, true}));
    EXPECT_FALSE(d.change.has_value());
    EXPECT_EQ(d.newest.generation(), 5u);
}

TEST(ReplicaSetState, FewerThanAMajorityReachedIsUnavailableUnlessForced) {
    const auto r = Record(5, {kIn, kIn, kIn});
    auto in = Input({Answer(r, 0), Unreached(), Unreached()});
    auto d = DecideReplicaSet(in);
    EXPECT_EQ(d.status.code(), StatusCode::kUnavailable);
    EXPECT_NE(d.status.message().find("reached 1 of 3 replicas, fewer than a majority"),
              std::string::npos)
        << d.status.message();
    EXPECT_NE(d.status.message().find("force"), std::string::npos);
    in.force = true;
    d = DecideReplicaSet(in);
    ASSERT_TRUE(d.status.ok()) << d.status.ToString();
    EXPECT_EQ(d.in_sync, (std::vector<bool>{true, false, false}));
    ASSERT_TRUE(d.change.has_value());
    EXPECT_EQ(d.change->members(1).state(), kStale);
    EXPECT_EQ(d.change->members(1).daemon_id(), Daemon(1));  // from the record, by address
}

TEST(ReplicaSetState, TheNewestGenerationIsTrustedAndABehindMemberIsStale) {
    // Replica 2 missed generation 6 (which still lists it in sync: it was
    // recorded while 2 was unreachable by a writer that then lost it).
    const auto old = Record(5, {kIn, kIn, kIn});
    const auto fresh = Record(6, {kIn, kIn, kIn});
    const auto d = DecideReplicaSet(Input({Answer(fresh, 0), Answer(fresh, 1), Answer(old, 2)}, 2));
    ASSERT_TRUE(d.status.ok()) << d.status.ToString();
    EXPECT_EQ(d.in_sync, (std::vector<bool>{true, true, false}));
    EXPECT_NE(d.why[2].find("missed a change"), std::string::npos) << d.why[2];
    ASSERT_TRUE(d.change.has_value());
    EXPECT_EQ(d.change->generation(), 7u);
    EXPECT_EQ(d.change->members(2).state(), kStale);
    EXPECT_EQ(d.change->members(2).stale_since(), 7u);
    EXPECT_EQ(d.stale_since[2], 7u);
}

TEST(ReplicaSetState, AStaleMemberStaysStaleWithItsGenerationAndNothingIsRecorded) {
    auto r = Record(8, {kIn, kIn, kStale});
    r.mutable_members(2)->set_stale_since(4);
    const auto d = DecideReplicaSet(Input({Answer(r, 0), Answer(r, 1), Answer(r, 2)}, 2));
    ASSERT_TRUE(d.status.ok());
    EXPECT_EQ(d.in_sync, (std::vector<bool>{true, true, false}));
    EXPECT_EQ(d.stale_since[2], 4u);
    EXPECT_FALSE(d.change.has_value());
}

TEST(ReplicaSetState, FewerInSyncThanTheQuorumIsQuorumLostNamingTheStale) {
    auto r = Record(8, {kIn, kIn, kStale});
    r.mutable_members(2)->set_stale_since(4);
    const auto d = DecideReplicaSet(Input({Answer(r, 0), Answer(r, 1), Answer(r, 2)}, 3));
    EXPECT_EQ(d.status.code(), StatusCode::kQuorumLost);
    EXPECT_NE(d.status.message().find("replica 2 (h:2) is stale since generation 4"),
              std::string::npos)
        << d.status.message();
    EXPECT_NE(d.status.message().find("rpmactl region repair r"), std::string::npos);
}

TEST(ReplicaSetState, AnotherDaemonAtAMembersAddressIsStale) {
    const auto r = Record(3, {kIn, kIn, kIn});
    const v1::ReplicaSetRecord none;
    const auto d = DecideReplicaSet(Input({Answer(r, 0), Answer(r, 1), Answer(none, 9)}, 2));
    ASSERT_TRUE(d.status.ok());
    EXPECT_EQ(d.in_sync, (std::vector<bool>{true, true, false}));
    EXPECT_NE(d.why[2].find("not a member"), std::string::npos) << d.why[2];
    ASSERT_TRUE(d.change.has_value());
    EXPECT_EQ(d.change->members(2).daemon_id(), Daemon(9));
    EXPECT_EQ(d.change->members(2).state(), kStale);
}

TEST(ReplicaSetState, ADaemonIdMismatchEvenWithTheNewestGenerationIsStale) {
    // The region was moved: daemon 7 answers at replica 2's address with a
    // copy of the newest record that names daemon 2 there.
    const auto r = Record(3, {kIn, kIn, kIn});
    const auto d = DecideReplicaSet(Input({Answer(r, 0), Answer(r, 1), Answer(r, 7)}, 2));
    EXPECT_EQ(d.in_sync, (std::vector<bool>{true, true, false}));
}

TEST(ReplicaSetState, UnequalTiesAreInSyncOnlyWhereEveryRecordSaysSo) {
    // A writer died half-way recording generation 4 = 2 stale: one replica
    // took it, the other has a different generation 4.
    // Neither version is on a majority.
    const auto a = Record(4, {kIn, kIn, kStale});
    const auto b = Record(4, {kIn, kIn, kIn});
    const auto d = DecideReplicaSet(Input({Answer(a, 0), Answer(b, 1), Unreached()}, 2));
    ASSERT_TRUE(d.status.ok());
    EXPECT_EQ(d.in_sync, (std::vector<bool>{true, true, false}));
    ASSERT_TRUE(d.change.has_value());  // a writer settles it
    EXPECT_EQ(d.change->generation(), 5u);
    EXPECT_EQ(d.change->members(2).state(), kStale);
}

TEST(ReplicaSetState, AVersionOnAMajorityWinsOverALosersVersionOfTheSameGeneration) {
    // Writer A recorded generation 5 = replica 1 stale on 0 and 2; writer B
    // (fenced) got its generation 5 = 0 and 2 stale onto replica 1 alone.
    const auto a = Record(5, {kIn, kStale, kIn});
    const auto b = Record(5, {kStale, kIn, kStale});
    const auto d = DecideReplicaSet(Input({Answer(a, 0), Answer(b, 1), Answer(a, 2)}, 2));
    ASSERT_TRUE(d.status.ok()) << d.status.ToString();
    EXPECT_EQ(d.in_sync, (std::vector<bool>{true, false, true}));
    EXPECT_FALSE(d.why[1].empty());
    ASSERT_TRUE(d.change.has_value());  // 1 gets the majority's version with the next
    EXPECT_EQ(d.change->generation(), 6u);
    EXPECT_EQ(d.change->members(1).state(), kStale);
}

TEST(ReplicaSetState, ANewestGenerationThatCannotHaveBeenRecordedIsSteppedBackFrom) {
    // A writer recorded generation 6 = replica 2 stale on replica 0 only,
    // then died: with every member reached, 6 is on 1 of 3 and cannot have
    // been recorded. Generation 5 is trusted; replica 0 holds a successor
    // of it; replica 2 stays out all the same (the dead writer saw it fail).
    const auto six = Record(6, {kIn, kIn, kStale});
    const auto five = Record(5, {kIn, kIn, kIn});
    auto d = DecideReplicaSet(Input({Answer(six, 0), Answer(five, 1), Answer(five, 2)}, 2));
    ASSERT_TRUE(d.status.ok()) << d.status.ToString();
    EXPECT_EQ(d.newest.generation(), 5u);
    EXPECT_EQ(d.in_sync, (std::vector<bool>{true, true, false}));
    EXPECT_NE(d.why[2].find("never recorded on a majority"), std::string::npos) << d.why[2];
    ASSERT_TRUE(d.change.has_value());
    EXPECT_EQ(d.change->generation(), 7u);  // after the highest seen
    EXPECT_EQ(d.change->members(2).state(), kStale);
    EXPECT_EQ(d.change->members(2).stale_since(), 7u);
    EXPECT_EQ(d.change->members(0).state(), kIn);

    // With replica 2 not reached, 6 may be on it too: no step back, and
    // replica 1, which missed 6, is stale.
    d = DecideReplicaSet(Input({Answer(six, 0), Answer(five, 1), Unreached()}, 1));
    ASSERT_TRUE(d.status.ok()) << d.status.ToString();
    EXPECT_EQ(d.newest.generation(), 6u);
    EXPECT_EQ(d.in_sync, (std::vector<bool>{true, false, false}));

    // A first record on one member of three, never on the others.
    const v1::ReplicaSetRecord none;
    const auto one = Record(1, {kIn, kIn, kIn});
    d = DecideReplicaSet(Input({Answer(one, 0), Answer(none, 1), Answer(none, 2)}, 3));
    ASSERT_TRUE(d.status.ok()) << d.status.ToString();
    EXPECT_EQ(d.in_sync, (std::vector<bool>{true, true, true}));
    ASSERT_TRUE(d.change.has_value());
    EXPECT_EQ(d.change->generation(), 2u);
    EXPECT_EQ(d.change->set_id(), "set-1");
}

TEST(ReplicaSetState, EqualTiesNeedNoChange) {
    const auto r = Record(4, {kIn, kIn, kStale});
    const auto d = DecideReplicaSet(Input({Answer(r, 0), Answer(r, 1), Unreached()}, 2));
    ASSERT_TRUE(d.status.ok());
    EXPECT_EQ(d.in_sync, (std::vector<bool>{true, true, false}));
    EXPECT_FALSE(d.change.has_value());
}

TEST(ReplicaSetState, AnInSyncMemberNotReachedIsRecordedStale) {
    const auto r = Record(4, {kIn, kIn, kIn});
    const auto d = DecideReplicaSet(Input({Answer(r, 0), Answer(r, 1), Unreached()}, 2));
    ASSERT_TRUE(d.status.ok());
    ASSERT_TRUE(d.change.has_value());
    EXPECT_EQ(d.change->members(2).state(), kStale);
    EXPECT_EQ(d.change->members(2).stale_since(), 5u);
    EXPECT_EQ(d.change->members(2).daemon_id(), Daemon(2));
}

TEST(ReplicaSetState, RecordsOfTwoSetIdsAreRefusedUnlessForced) {
    const auto a = Record(4, {kIn, kIn, kIn}, "set-a");
    const auto b = Record(2, {kIn, kIn, kIn}, "set-b");
    auto in = Input({Answer(a, 0), Answer(a, 1), Answer(b, 2)});
    auto d = DecideReplicaSet(in);
    EXPECT_EQ(d.status.code(), StatusCode::kUnavailable);
    EXPECT_NE(d.status.message().find("different replica sets"), std::string::npos);
    in.force = true;
    d = DecideReplicaSet(in);
    ASSERT_TRUE(d.status.ok());
    EXPECT_EQ(d.in_sync, (std::vector<bool>{true, true, false}));
    EXPECT_EQ(d.change->set_id(), "set-a");
}

TEST(ReplicaSetState, AWriterIsRefusedWhileAMemberIsRepairing) {
    auto r = Record(7, {kIn, kIn, kRepairing});
    r.mutable_members(2)->set_stale_since(5);
    auto in = Input({Answer(r, 0), Answer(r, 1), Answer(r, 2)}, 2);
    auto d = DecideReplicaSet(in);
    EXPECT_EQ(d.status.code(), StatusCode::kUnavailable);
    EXPECT_NE(d.status.message().find("replica 2 (h:2) is being repaired (generation 7, by host "
                                      "pid 1"),
              std::string::npos)
        << d.status.message();
    EXPECT_NE(d.status.message().find("rpmactl region repair r"), std::string::npos);
    // A reader is not.
    in.writer = false;
    d = DecideReplicaSet(in);
    ASSERT_TRUE(d.status.ok());
    EXPECT_EQ(d.in_sync, (std::vector<bool>{true, true, false}));
    // A repair takes it over, recording nothing yet.
    in.writer = true;
    in.repair_takeover = true;
    d = DecideReplicaSet(in);
    ASSERT_TRUE(d.status.ok());
    EXPECT_FALSE(d.change.has_value());
    EXPECT_EQ(d.stale_since[2], 5u);
    // Force marks it stale again.
    in.repair_takeover = false;
    in.force = true;
    d = DecideReplicaSet(in);
    ASSERT_TRUE(d.status.ok());
    ASSERT_TRUE(d.change.has_value());
    EXPECT_EQ(d.change->members(2).state(), kStale);
    EXPECT_EQ(d.change->members(2).stale_since(), 5u);
}

TEST(ReplicaSetState, AWriterGivenOnlyPartOfTheSetIsRefused) {
    const auto r = Record(3, {kIn, kIn, kIn});
    ReplicaSetInput in;
    in.region = "r";
    in.addresses = {"h:0", "h:1"};
    in.answers = {Answer(r, 0), Answer(r, 1)};
    in.quorum = 1;
    auto d = DecideReplicaSet(in);
    EXPECT_EQ(d.status.code(), StatusCode::kFailedPrecondition);
    EXPECT_NE(d.status.message().find("has member h:2"), std::string::npos) << d.status.message();
    in.writer = false;  // a reader of those two may
    d = DecideReplicaSet(in);
    ASSERT_TRUE(d.status.ok()) << d.status.ToString();
    EXPECT_EQ(d.in_sync, (std::vector<bool>{true, true}));

    // One of the three is no majority of the set's members, for a writer
    // or a reader, unless forced (a forced writer records the list given).
    in.addresses = {"h:2"};
    in.answers = {Answer(r, 2)};
    for (bool writer : {true, false}) {
        in.writer = writer;
        in.force = false;
        d = DecideReplicaSet(in);
        EXPECT_EQ(d.status.code(), StatusCode::kUnavailable);
        EXPECT_NE(d.status.message().find("reached 1 of the 3 members"), std::string::npos)
            << d.status.message();
        in.force = true;
        d = DecideReplicaSet(in);
        ASSERT_TRUE(d.status.ok()) << d.status.ToString();
        EXPECT_EQ(d.in_sync, (std::vector<bool>{true}));
        EXPECT_EQ(d.change.has_value(), writer);
        if (writer) {
            EXPECT_EQ(d.change->members_size(), 1);
        }
    }
}

TEST(ReplicaSetState, DaemonsWithoutRecordsAreLegacyButNotMixed) {
    ReplicaSetAnswer old;
    old.kind = Kind::kUnimplemented;
    auto d = DecideReplicaSet(Input({old, old, Unreached()}, 2));
    ASSERT_TRUE(d.status.ok());
    EXPECT_TRUE(d.legacy);
    EXPECT_EQ(d.in_sync, (std::vector<bool>{true, true, false}));
    EXPECT_FALSE(d.change.has_value());
    d = DecideReplicaSet(Input({old, Answer(Record(1, {kIn, kIn}), 1)}, 1));
    EXPECT_EQ(d.status.code(), StatusCode::kFailedPrecondition);
    EXPECT_NE(d.status.message().find("upgrade every daemon"), std::string::npos);
}

TEST(ReplicaSetState, SuccessorAndSetMemberState) {
    const auto r = Record(3, {kIn, kIn, kIn});
    auto next = Successor(r, "me", 5, "replica failed");
    SetMemberState(&next, 1, kStale);
    EXPECT_EQ(next.generation(), 4u);
    EXPECT_EQ(next.members(1).stale_since(), 4u);
    auto repair = Successor(next, "me", 6, "repair started");
    SetMemberState(&repair, 1, kRepairing);
    EXPECT_EQ(repair.members(1).stale_since(), 4u);  // kept
    auto done = Successor(repair, "me", 7, "repair finished");
    SetMemberState(&done, 1, kIn);
    EXPECT_EQ(done.members(1).stale_since(), 0u);
    EXPECT_EQ(done.members(1).state(), kIn);
    EXPECT_FALSE(SameMembers(done, repair));
}

TEST(ReplicaSetState, RecordedNeedsEveryInSyncMemberAndAMajority) {
    // 3 members, 2 stale: the one in sync alone is no majority.
    auto r = Record(5, {kIn, kStale, kStale});
    Status s = RecordedVerdict(r, {true, false, false}, false, "recording replica 1 stale");
    EXPECT_EQ(s.code(), StatusCode::kQuorumLost);
    EXPECT_NE(s.message().find("1 of 2 needed accepted"), std::string::npos) << s.message();
    EXPECT_TRUE(RecordedVerdict(r, {true, true, false}, false, "x").ok());
    EXPECT_TRUE(RecordedVerdict(r, {true, false, false}, true, "x").ok());  // forced
    // Every in-sync member must accept.
    r = Record(5, {kIn, kIn, kStale});
    s = RecordedVerdict(r, {true, false, true}, false, "x");
    EXPECT_EQ(s.code(), StatusCode::kQuorumLost);
    EXPECT_NE(s.message().find("in-sync replica 1"), std::string::npos) << s.message();
    // A set of 2 cannot drop a member.
    r = Record(2, {kIn, kStale});
    EXPECT_EQ(RecordedVerdict(r, {true, false}, false, "x").code(), StatusCode::kQuorumLost);
}

// Cluster mode: etcd's record decides, whatever the daemons hold and
// however few were reached; a writer always records a new generation.
TEST(ReplicaSetState, TheClustersRecordDecidesWithoutAMajority) {
    const auto authority = Record(5, {kIn, kIn, kStale});
    // Daemon 0 behind (generation 3), daemon 1 not reached, daemon 2 stale.
    ReplicaSetInput in =
        Input({Answer(Record(3, {kIn, kIn, kIn}), 0), Unreached(), Answer(authority, 2)});
    in.authority = &authority;
    const ReplicaSetDecision d = DecideReplicaSet(in);
    ASSERT_TRUE(d.status.ok()) << d.status.ToString();
    EXPECT_EQ(d.in_sync, (std::vector<bool>{true, false, false}));
    EXPECT_NE(d.why[1].find("not reached"), std::string::npos);
    EXPECT_NE(d.why[2].find("stale"), std::string::npos) << d.why[2];
    ASSERT_TRUE(d.change.has_value());
    EXPECT_EQ(d.change->generation(), 6u);
    EXPECT_EQ(d.change->members(0).state(), kIn);
    EXPECT_EQ(d.change->members(1).state(), kStale);  // not reached: recorded stale
    EXPECT_EQ(d.change->members(1).stale_since(), 6u);
    EXPECT_EQ(d.change->members(2).stale_since(), 5u);  // stays as it was

    // Another daemon where a node was is not in sync; a reader records nothing.
    ReplicaSetInput reader = Input({Answer(authority, 0), Answer(authority, 7), Unreached()});
    reader.authority = &authority;
    reader.writer = false;
    const ReplicaSetDecision r = DecideReplicaSet(reader);
    EXPECT_EQ(r.in_sync, (std::vector<bool>{true, false, false}));
    EXPECT_NE(r.why[1].find("another daemon"), std::string::npos) << r.why[1];
    EXPECT_FALSE(r.change.has_value());
}

}  // namespace
}  // namespace rpma::client
