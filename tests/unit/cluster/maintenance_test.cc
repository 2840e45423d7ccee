#include "cluster/maintenance.h"

#include <gtest/gtest.h>

namespace rpma::cluster {
namespace {

using Member = ::rpmad::v1::ReplicaSetMember;

v1::NodeRecord Node(const std::string &id, const std::string &zone, bool draining = false) {
    v1::NodeRecord node;
    node.set_node_id(id);
    node.set_zone(zone);
    node.set_control_address(id + ":7300");
    node.set_data_address(id + ".data:7301");
    node.set_free_bytes(1 << 30);
    node.set_draining(draining);
    return node;
}

MaintenanceInput Input(std::vector<std::pair<std::string, Member::State>> members,
                       std::vector<v1::NodeRecord> live) {
    MaintenanceInput in;
    in.region.set_name("r");
    in.region.set_size_bytes(1 << 20);
    for (const auto &[id, state] : members) {
        auto *m = in.region.mutable_replica_set()->add_members();
        m->set_daemon_id(id);
        m->set_state(state);
        m->set_stale_since(state == Member::STATE_IN_SYNC ? 0 : 4);
    }
    in.live = std::move(live);
    in.now_unix = 1000;
    in.replace_after_seconds = 300;
    return in;
}

TEST(MaintenanceTest, AHealthySetNeedsNothing) {
    const auto plan =
        PlanMaintenance(Input({{"a", Member::STATE_IN_SYNC}, {"b", Member::STATE_IN_SYNC}},
                              {Node("a", "1"), Node("b", "2")}));
    EXPECT_TRUE(plan.actions.empty());
    EXPECT_TRUE(plan.waiting.empty());
}

TEST(MaintenanceTest, AStaleReplicaOnALiveNodeIsRepairedWhereItIs) {
    const auto plan =
        PlanMaintenance(Input({{"a", Member::STATE_IN_SYNC}, {"b", Member::STATE_STALE}},
                              {Node("a", "1"), Node("b", "2")}));
    ASSERT_EQ(plan.actions.size(), 1u);
    EXPECT_EQ(plan.actions[0].member, 1);
    EXPECT_EQ(plan.actions[0].node_id, "b");
    EXPECT_EQ(plan.actions[0].data_address, "b.data:7301");
    EXPECT_FALSE(plan.actions[0].replacement);
}

TEST(MaintenanceTest, ADeadNodeIsReplacedOnlyAfterReplaceAfterInAnotherZone) {
    auto in = Input({{"a", Member::STATE_IN_SYNC}, {"b", Member::STATE_STALE}},
                    {Node("a", "1"), Node("c", "1"), Node("d", "2")});
    in.dead_since["b"] = 900;  // 100 s of 300
    auto plan = PlanMaintenance(in);
    EXPECT_TRUE(plan.actions.empty());
    ASSERT_EQ(plan.waiting.size(), 1u);
    EXPECT_NE(plan.waiting[0].find("dead since 900 (unix time), replaced once dead for 300 s"),
              std::string::npos)
        << plan.waiting[0];
    in.dead_since["b"] = 600;
    plan = PlanMaintenance(in);
    ASSERT_EQ(plan.actions.size(), 1u);
    EXPECT_EQ(plan.actions[0].member, 1);
    EXPECT_EQ(plan.actions[0].node_id, "d");  // zone 2: a's zone 1 is taken
    EXPECT_EQ(plan.actions[0].control_address, "d:7300");
    EXPECT_EQ(plan.actions[0].data_address, "d.data:7301");
    EXPECT_TRUE(plan.actions[0].replacement);
}

TEST(MaintenanceTest, ADrainingNodesReplicaMovesAndNoRoomWaitsSayingWhy) {
    auto in = Input({{"a", Member::STATE_IN_SYNC}, {"b", Member::STATE_IN_SYNC}},
                    {Node("a", "1"), Node("b", "2", /*draining=*/true)});
    auto plan = PlanMaintenance(in);
    EXPECT_TRUE(plan.actions.empty());
    ASSERT_EQ(plan.waiting.size(), 1u);
    EXPECT_NE(plan.waiting[0].find("draining"), std::string::npos);
    in.live.push_back(Node("e", "3"));
    plan = PlanMaintenance(in);
    ASSERT_EQ(plan.actions.size(), 1u);
    EXPECT_EQ(plan.actions[0].node_id, "e");
    EXPECT_EQ(plan.actions[0].moved_from_address, "b:7300");
}

}  // namespace
}  // namespace rpma::cluster
