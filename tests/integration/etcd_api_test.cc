// etcd's v3 API through the stubs //proto/etcd generates from Debian's
// .proto files, against a real etcd (Debian's etcd-server) on loopback: the
// calls cluster mode builds on, each checked for what it promises:
//  - a Txn that creates a key only if it does not exist (create_revision
//    0) succeeds once; the second is refused and changes nothing;
//  - a key put under a lease goes when the lease is revoked;
//  - Election: a campaign under a lease leads, Leader names it, and a
//    second campaign waits until the first resigns.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <memory>
#include <string>

#include "etcd/etcdserver/api/v3election/v3electionpb/v3election.grpc.pb.h"
#include "etcd/etcdserver/etcdserverpb/rpc.grpc.pb.h"
#include "tests/integration/etcd_cluster.h"
#include "util/connect_channel.h"

namespace rpma::testing {
namespace {

using etcdserverpb::Compare;
using etcdserverpb::KV;
using etcdserverpb::Lease;
using v3electionpb::Election;

constexpr auto kCallTimeout = std::chrono::seconds(10);

std::unique_ptr<grpc::ClientContext> Context(std::chrono::seconds timeout = kCallTimeout) {
    auto context = std::make_unique<grpc::ClientContext>();
    context->set_deadline(std::chrono::system_clock::now() + timeout);
    return context;
}

class EtcdApiTest : public ::testing::Test {
  protected:
    void SetUp() override {
        std::string error;
        etcd_ = EtcdCluster::Start(1, &error);
        ASSERT_NE(etcd_, nullptr) << error;
        channel_ =
            rpma::util::ConnectChannel(etcd_->ClientAddress(0), grpc::InsecureChannelCredentials(),
                                       grpc::ChannelArguments(), std::chrono::seconds(10));
        kv_ = KV::NewStub(channel_);
    }

    // The value of `key`, or nullopt when it does not exist.
    std::optional<std::string> Get(const std::string &key) {
        etcdserverpb::RangeRequest request;
        request.set_key(key);
        etcdserverpb::RangeResponse response;
        const grpc::Status status = kv_->Range(Context().get(), request, &response);
        EXPECT_TRUE(status.ok()) << status.error_message();
        if (response.kvs_size() == 0)
            return std::nullopt;
        return response.kvs(0).value();
    }

    // Puts key = value only if the key does not exist; whether it did.
    bool Create(const std::string &key, const std::string &value) {
        etcdserverpb::TxnRequest txn;
        Compare *absent = txn.add_compare();
        absent->set_key(key);
        absent->set_target(Compare::CREATE);
        absent->set_result(Compare::EQUAL);
        absent->set_create_revision(0);
        etcdserverpb::PutRequest *put = txn.add_success()->mutable_request_put();
        put->set_key(key);
        put->set_value(value);
        etcdserverpb::TxnResponse response;
        const grpc::Status status = kv_->Txn(Context().get(), txn, &response);
        EXPECT_TRUE(status.ok()) << status.error_message();
        return response.succeeded();
    }

    int64_t GrantLease(int64_t ttl_seconds) {
        etcdserverpb::LeaseGrantRequest grant;
        grant.set_ttl(ttl_seconds);
        etcdserverpb::LeaseGrantResponse granted;
        const grpc::Status status =
            Lease::NewStub(channel_)->LeaseGrant(Context().get(), grant, &granted);
        EXPECT_TRUE(status.ok()) << status.error_message();
        EXPECT_TRUE(granted.error().empty()) << granted.error();
        return granted.id();
    }

    std::unique_ptr<EtcdCluster> etcd_;
    std::shared_ptr<grpc::Channel> channel_;
    std::unique_ptr<KV::Stub> kv_;
};

TEST_F(EtcdApiTest, ACreateIfAbsentTransactionSucceedsOnce) {
    EXPECT_TRUE(Create("/rpma/regions/a", "first"));
    EXPECT_FALSE(Create("/rpma/regions/a", "second"));
    EXPECT_EQ(Get("/rpma/regions/a"), "first");
}

TEST_F(EtcdApiTest, AKeyUnderALeaseGoesWithTheLease) {
    const int64_t lease = GrantLease(60);
    ASSERT_NE(lease, 0);
    etcdserverpb::PutRequest put;
    put.set_key("/rpma/nodes/n1");
    put.set_value("alive");
    put.set_lease(lease);
    etcdserverpb::PutResponse put_response;
    ASSERT_TRUE(kv_->Put(Context().get(), put, &put_response).ok());
    EXPECT_EQ(Get("/rpma/nodes/n1"), "alive");

    etcdserverpb::LeaseRevokeRequest revoke;
    revoke.set_id(lease);
    etcdserverpb::LeaseRevokeResponse revoked;
    ASSERT_TRUE(Lease::NewStub(channel_)->LeaseRevoke(Context().get(), revoke, &revoked).ok());
    EXPECT_EQ(Get("/rpma/nodes/n1"), std::nullopt);
}

TEST_F(EtcdApiTest, OneCampaignLeadsUntilItResigns) {
    auto election = Election::NewStub(channel_);
    v3electionpb::CampaignRequest first;
    first.set_name("/rpma/writers/a");
    first.set_lease(GrantLease(60));
    first.set_value("writer-1");
    v3electionpb::CampaignResponse led;
    ASSERT_TRUE(election->Campaign(Context().get(), first, &led).ok());

    v3electionpb::LeaderRequest who;
    who.set_name("/rpma/writers/a");
    v3electionpb::LeaderResponse leader;
    ASSERT_TRUE(election->Leader(Context().get(), who, &leader).ok());
    EXPECT_EQ(leader.kv().value(), "writer-1");

    // A second campaign blocks while the first leads ...
    v3electionpb::CampaignRequest second = first;
    second.set_lease(GrantLease(60));
    second.set_value("writer-2");
    auto waiting = std::async(std::launch::async, [&] {
        v3electionpb::CampaignResponse response;
        return election->Campaign(Context().get(), second, &response);
    });
    EXPECT_EQ(waiting.wait_for(std::chrono::milliseconds(500)), std::future_status::timeout);
    // ... and leads once the first resigns.
    v3electionpb::ResignRequest resign;
    *resign.mutable_leader() = led.leader();
    v3electionpb::ResignResponse resigned;
    ASSERT_TRUE(election->Resign(Context().get(), resign, &resigned).ok());
    const grpc::Status second_led = waiting.get();
    EXPECT_TRUE(second_led.ok()) << second_led.error_message();
    ASSERT_TRUE(election->Leader(Context().get(), who, &leader).ok());
    EXPECT_EQ(leader.kv().value(), "writer-2");
}

}  // namespace
}  // namespace rpma::testing
