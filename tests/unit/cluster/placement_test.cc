#include "cluster/placement.h"

#include <gtest/gtest.h>

namespace rpma::cluster {
namespace {

NodeRecord Node(const std::string &id, const std::string &zone, uint64_t free_bytes,
                bool draining = false) {
    NodeRecord node;
    node.set_node_id(id);
    node.set_zone(zone);
    node.set_free_bytes(free_bytes);
    node.set_capacity_bytes(free_bytes * 2);
    node.set_draining(draining);
    return node;
}

PlacementRequest Request(size_t replicas, uint64_t size_bytes,
                         std::vector<std::string> exclude = {},
                         std::vector<std::string> zones_taken = {}) {
    PlacementRequest request;
    request.replicas = replicas;
    request.size_bytes = size_bytes;
    request.exclude = std::move(exclude);
    request.zones_taken = std::move(zones_taken);
    return request;
}

std::vector<std::string> Ids(const std::vector<NodeRecord> &nodes) {
    std::vector<std::string> ids;
    for (const auto &n : nodes)
        ids.push_back(n.node_id());
    return ids;
}

TEST(PlacementTest, DistinctZonesBeforeMoreFreeBytes) {
    // a and b share zone z1 and have the most room; c (z2) and d (z3) have
    // less: three replicas go to three zones.
    const std::vector<NodeRecord> live = {Node("a", "z1", 900), Node("b", "z1", 800),
                                          Node("c", "z2", 100), Node("d", "z3", 200)};
    std::vector<NodeRecord> chosen;
    ASSERT_TRUE(Place(live, Request(3, 50), &chosen).ok());
    EXPECT_EQ(Ids(chosen), (std::vector<std::string>{"a", "d", "c"}));
}

TEST(PlacementTest, FewerZonesThanReplicasFillsByFreeBytes) {
    const std::vector<NodeRecord> live = {Node("a", "z1", 900), Node("b", "z1", 800),
                                          Node("c", "z2", 100)};
    std::vector<NodeRecord> chosen;
    ASSERT_TRUE(Place(live, Request(3, 50), &chosen).ok());
    EXPECT_EQ(Ids(chosen), (std::vector<std::string>{"a", "c", "b"}));
}

TEST(PlacementTest, SkipsFullDrainingAndExcludedNodes) {
    const std::vector<NodeRecord> live = {Node("a", "z1", 900, /*draining=*/true),
                                          Node("b", "z2", 10), Node("c", "z3", 500),
                                          Node("d", "z4", 400)};
    std::vector<NodeRecord> chosen;
    ASSERT_TRUE(Place(live, Request(1, 50, {"c"}), &chosen).ok());
    EXPECT_EQ(Ids(chosen), (std::vector<std::string>{"d"}));
}

TEST(PlacementTest, ReplacementAvoidsZonesTaken) {
    const std::vector<NodeRecord> live = {Node("a", "z1", 900), Node("b", "z2", 100)};
    std::vector<NodeRecord> chosen;
    ASSERT_TRUE(Place(live, Request(1, 50, {}, {"z1"}), &chosen).ok());
    EXPECT_EQ(Ids(chosen), (std::vector<std::string>{"b"}));
}

TEST(PlacementTest, TooFewNodesSaysWhyEachWasSkipped) {
    const std::vector<NodeRecord> live = {Node("a", "z1", 900), Node("b", "z2", 10),
                                          Node("c", "z3", 900, /*draining=*/true)};
    std::vector<NodeRecord> chosen;
    const grpc::Status s = Place(live, Request(2, 50), &chosen);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
    EXPECT_NE(s.error_message().find("1 of 3 live qualify"), std::string::npos)
        << s.error_message();
    EXPECT_NE(s.error_message().find("b: 10 bytes free"), std::string::npos);
    EXPECT_NE(s.error_message().find("c: draining"), std::string::npos);
    EXPECT_TRUE(chosen.empty());
}

}  // namespace
}  // namespace rpma::cluster
