#include "cluster/records.h"

#include <gtest/gtest.h>

namespace rpma::cluster {
namespace {

TEST(RecordsTest, KeysLiveUnderThePrefix) {
    const Keys keys("/x/");
    EXPECT_EQ(keys.Node("n1"), "/x/nodes/n1");
    EXPECT_EQ(keys.Region("log"), "/x/regions/log");
    EXPECT_EQ(keys.Writer("log"), "/x/writers/log");
}

TEST(RecordsTest, PrefixMustBeSlashDelimited) {
    EXPECT_TRUE(CheckPrefix("/rpma/").ok());
    EXPECT_EQ(CheckPrefix("/rpma").error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_EQ(CheckPrefix("rpma/").error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_EQ(CheckPrefix("/").error_code(), grpc::StatusCode::INVALID_ARGUMENT);
}

TEST(RecordsTest, PrefixEndCoversExactlyThePrefix) {
    EXPECT_EQ(PrefixEnd("/rpma/"), "/rpma0");
    EXPECT_EQ(PrefixEnd(std::string("a\xff", 2)), "b");
}

TEST(RecordsTest, RegionRecordRoundTripsThroughJson) {
    RegionRecord record;
    record.set_name("log");
    record.set_size_bytes(1 << 20);
    record.set_state(RegionRecord::STATE_READY);
    record.set_writer_epoch(3);
    auto *member = record.mutable_replica_set()->add_members();
    member->set_daemon_id("0123456789abcdef0123456789abcdef");
    member->set_state(::rpmad::v1::ReplicaSetMember::STATE_IN_SYNC);
    const std::string json = ToJson(record);
    EXPECT_NE(json.find("\"writer_epoch\""), std::string::npos) << json;
    RegionRecord back;
    ASSERT_TRUE(FromJson(json, "k", &back).ok());
    EXPECT_EQ(back.SerializeAsString(), record.SerializeAsString());
}

TEST(RecordsTest, GarbageIsDataLossNamingTheKey) {
    NodeRecord node;
    const grpc::Status s = FromJson("{not json", "/rpma/nodes/x", &node);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::DATA_LOSS);
    EXPECT_NE(s.error_message().find("/rpma/nodes/x"), std::string::npos);
}

TEST(RecordsTest, EndpointsParse) {
    EtcdOptions options;
    ASSERT_TRUE(ParseEndpoints("http://127.0.0.1:2379,127.0.0.2:2380", &options).ok());
    EXPECT_EQ(options.endpoints, (std::vector<std::string>{"127.0.0.1:2379", "127.0.0.2:2380"}));
    ASSERT_TRUE(ParseEndpoints("https://[::1]:2379", &options).ok());
    EXPECT_EQ(options.endpoints, (std::vector<std::string>{"https://[::1]:2379"}));
    EXPECT_EQ(ParseEndpoints("", &options).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_EQ(ParseEndpoints("etcd1", &options).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_EQ(ParseEndpoints("http://a:1/x", &options).error_code(),
              grpc::StatusCode::INVALID_ARGUMENT);
}

}  // namespace
}  // namespace rpma::cluster
