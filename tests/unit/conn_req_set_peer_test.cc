// rpma_ext_conn_req_move_to_peer as rpmad uses it: one endpoint, a peer per
// region, each incoming request moved into the peer of the region it may
// reach. The tests attack that isolation from the client with another
// region's descriptor (its rkey and address).
#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <string>

#include "connected_pair.h"
#include "librpma.h"
#include "rpma_core/src/peer.h"
#include "rpma_core/src/provider/tcp/tcp_device.h"
#include "rpma_ext.h"

namespace {

using rpma_test::ExpectEvent;
using rpma_test::TestAddr;

constexpr size_t kSize = 4096;
constexpr int kRemoteUsage =
    RPMA_MR_USAGE_WRITE_DST | RPMA_MR_USAGE_READ_SRC | RPMA_MR_USAGE_FLUSH_TYPE_VISIBILITY;

// A buffer registered with one peer, and its descriptor as a client gets it.
struct Region {
    alignas(64) std::array<char, kSize> bytes{};
    rpma_mr_local *mr = nullptr;

    void Register(rpma_peer *peer, char fill, int usage) {
        bytes.fill(fill);
        ASSERT_EQ(rpma_mr_reg(peer, bytes.data(), kSize, usage, &mr), 0);
    }
    void RemoteView(rpma_mr_remote **remote) const {
        size_t size = 0;
        ASSERT_EQ(rpma_mr_get_descriptor_size(mr, &size), 0);
        std::string desc(size, '\0');
        ASSERT_EQ(rpma_mr_get_descriptor(mr, desc.data()), 0);
        ASSERT_EQ(rpma_mr_remote_from_descriptor(desc.data(), size, remote), 0);
    }
    bool All(char c) const {
        for (char b : bytes)
            if (b != c)
                return false;
        return true;
    }
    // Before its peer goes.
    void Deregister() { EXPECT_EQ(rpma_mr_dereg(&mr), 0); }
    ~Region() { Deregister(); }
};

// The server: peer A (whose endpoint the clients reach, with region A) and
// peer B (region B). The client has a peer of its own.
class Isolation : public ::testing::Test {
  protected:
    void SetUp() override {
        peer_a_ = rpma_test::NewPeer();
        peer_b_ = rpma_test::NewPeer();
        client_peer_ = rpma_test::NewPeer();
        ASSERT_NE(peer_a_, nullptr);
        ASSERT_NE(peer_b_, nullptr);
        ASSERT_NE(client_peer_, nullptr);
        region_a_.Register(peer_a_, 'a', kRemoteUsage | RPMA_MR_USAGE_WRITE_SRC);
        region_b_.Register(peer_b_, 'b', kRemoteUsage);
        local_.Register(client_peer_, 'l',
                        RPMA_MR_USAGE_WRITE_SRC | RPMA_MR_USAGE_READ_DST | kRemoteUsage);
        port_ = rpma_test::FreePort();
        ASSERT_EQ(rpma_ep_listen(peer_a_, TestAddr(), port_.c_str(), &ep_), 0);
    }

    void TearDown() override {
        EXPECT_EQ(rpma_conn_delete(&client_), 0);
        EXPECT_EQ(rpma_conn_delete(&server_), 0);
        EXPECT_EQ(rpma_ep_shutdown(&ep_), 0);
        local_.Deregister();
        region_a_.Deregister();
        region_b_.Deregister();
        EXPECT_EQ(rpma_peer_delete(&client_peer_), 0);
        EXPECT_EQ(rpma_peer_delete(&peer_b_), 0);
        EXPECT_EQ(rpma_peer_delete(&peer_a_), 0);
    }

    // The client's connection request has arrived; returns it.
    rpma_conn_req *Incoming(const rpma_conn_cfg *server_cfg = nullptr) {
        rpma_conn_req *outgoing = nullptr;
        EXPECT_EQ(rpma_conn_req_new(client_peer_, TestAddr(), port_.c_str(), nullptr, &outgoing),
                  0);
        EXPECT_EQ(rpma_conn_req_connect(&outgoing, nullptr, &client_), 0);
        rpma_conn_req *incoming = nullptr;
        EXPECT_EQ(rpma_ep_next_conn_req(ep_, server_cfg, &incoming), 0);
        return incoming;
    }

    void Accept(rpma_conn_req **incoming) {
        ASSERT_EQ(rpma_conn_req_connect(incoming, nullptr, &server_), 0);
        ExpectEvent(client_, RPMA_CONN_ESTABLISHED);
        ExpectEvent(server_, RPMA_CONN_ESTABLISHED);
    }

    rpma_peer *peer_a_ = nullptr;
    rpma_peer *peer_b_ = nullptr;
    rpma_peer *client_peer_ = nullptr;
    Region region_a_;
    Region region_b_;
    Region local_;  // the client's
    std::string port_;
    rpma_ep *ep_ = nullptr;
    rpma_conn *client_ = nullptr;
    rpma_conn *server_ = nullptr;
};

// A connection accepted after its request moved to peer B.
class MovedToB : public Isolation {
  protected:
    void SetUp() override {
        Isolation::SetUp();
        if (HasFatalFailure())
            return;
        rpma_conn_req *incoming = Incoming();
        ASSERT_NE(incoming, nullptr);
        ASSERT_EQ(rpma_ext_conn_req_move_to_peer(incoming, peer_b_), 0);
        Accept(&incoming);
        region_a_.RemoteView(&remote_a_);
        region_b_.RemoteView(&remote_b_);
    }
    void TearDown() override {
        EXPECT_EQ(rpma_mr_remote_delete(&remote_a_), 0);
        EXPECT_EQ(rpma_mr_remote_delete(&remote_b_), 0);
        if (client_ != nullptr && server_ != nullptr)
            rpma_test::Disconnect(client_, server_);
        Isolation::TearDown();
    }

    ibv_wc Completion(rpma_conn *conn) { return rpma_test::NextCompletion(conn); }

    void ExpectRemoteAccessError() {
        ibv_wc wc = Completion(client_);
        EXPECT_EQ(wc.status, IBV_WC_REM_ACCESS_ERR) << ibv_wc_status_str(wc.status);
        EXPECT_TRUE(region_a_.All('a')) << "region A changed";
        BrokenForGood();
    }

    // Like an RC QP in the error state, the connection is broken: nothing
    // graceful is left for the fixture to do.
    void BrokenForGood() {
        EXPECT_EQ(rpma_conn_delete(&client_), 0);
        EXPECT_EQ(rpma_conn_delete(&server_), 0);
    }

    rpma_mr_remote *remote_a_ = nullptr;
    rpma_mr_remote *remote_b_ = nullptr;
};

constexpr int kAlways = RPMA_F_COMPLETION_ALWAYS;

TEST_F(MovedToB, ClientWritesFlushesAndReadsBackTheRegionOfItsPeer) {
    ASSERT_EQ(rpma_write(client_, remote_b_, 0, local_.mr, 0, 64, kAlways, nullptr), 0);
    ASSERT_EQ(rpma_flush(client_, remote_b_, 0, 64, RPMA_FLUSH_TYPE_VISIBILITY, kAlways, nullptr),
              0);
    ibv_wc write = Completion(client_);
    EXPECT_EQ(write.status, IBV_WC_SUCCESS) << ibv_wc_status_str(write.status);
    ibv_wc flush = Completion(client_);
    EXPECT_EQ(flush.status, IBV_WC_SUCCESS) << ibv_wc_status_str(flush.status);
    EXPECT_EQ(memcmp(region_b_.bytes.data(), std::string(64, 'l').data(), 64), 0);

    ASSERT_EQ(rpma_read(client_, local_.mr, 128, remote_b_, 64, 64, kAlways, nullptr), 0);
    ibv_wc read = Completion(client_);
    EXPECT_EQ(read.status, IBV_WC_SUCCESS) << ibv_wc_status_str(read.status);
    EXPECT_EQ(memcmp(local_.bytes.data() + 128, std::string(64, 'b').data(), 64), 0);
}

TEST_F(MovedToB, WriteWithTheDescriptorOfTheEndpointPeersRegionIsARemoteAccessError) {
    ASSERT_EQ(rpma_write(client_, remote_a_, 0, local_.mr, 0, 64, kAlways, nullptr), 0);
    ExpectRemoteAccessError();
}

TEST_F(MovedToB, ReadWithTheDescriptorOfTheEndpointPeersRegionIsARemoteAccessError) {
    ASSERT_EQ(rpma_read(client_, local_.mr, 0, remote_a_, 0, 64, kAlways, nullptr), 0);
    ExpectRemoteAccessError();
    EXPECT_TRUE(local_.All('l')) << "region A's bytes reached the client";
}

TEST_F(MovedToB, FlushWithTheDescriptorOfTheEndpointPeersRegionIsARemoteAccessError) {
    ASSERT_EQ(rpma_flush(client_, remote_a_, 0, 64, RPMA_FLUSH_TYPE_VISIBILITY, kAlways, nullptr),
              0);
    ExpectRemoteAccessError();
}

TEST_F(MovedToB, ServerCannotUseMemoryOfTheEndpointsPeerAsLocalMemory) {
    rpma_mr_remote *client_region = nullptr;
    local_.RemoteView(&client_region);
    ASSERT_EQ(rpma_write(server_, client_region, 0, region_a_.mr, 0, 64, kAlways, nullptr), 0);
    ibv_wc wc = Completion(server_);
    // Soft-RoCE (rxe, Linux 6.1) reports an lkey of another protection
    // domain as a local QP operation error, measured; RNICs and the tcp
    // provider as a local protection error.
    const ibv_wc_status expected =
        rpma_test::OnSoftRoce() ? IBV_WC_LOC_QP_OP_ERR : IBV_WC_LOC_PROT_ERR;
    EXPECT_EQ(wc.status, expected) << ibv_wc_status_str(wc.status);
    EXPECT_TRUE(local_.All('l')) << "region A's bytes reached the client";
    EXPECT_EQ(rpma_mr_remote_delete(&client_region), 0);
    BrokenForGood();
}

TEST_F(Isolation, NullArgumentsAndOutgoingRequestsAreInvalid) {
    rpma_conn_req *outgoing = nullptr;
    ASSERT_EQ(rpma_conn_req_new(client_peer_, TestAddr(), port_.c_str(), nullptr, &outgoing), 0);
    EXPECT_EQ(rpma_ext_conn_req_move_to_peer(outgoing, peer_b_), RPMA_E_INVAL);
    EXPECT_EQ(rpma_ext_conn_req_move_to_peer(outgoing, nullptr), RPMA_E_INVAL);
    EXPECT_EQ(rpma_ext_conn_req_move_to_peer(nullptr, peer_b_), RPMA_E_INVAL);
    EXPECT_EQ(rpma_conn_req_delete(&outgoing), 0);
}

TEST_F(Isolation, AnIncomingRequestKnowsTheClientsAddress) {
    rpma_conn_req *incoming = Incoming();
    ASSERT_NE(incoming, nullptr);
    sockaddr_storage address{};
    ASSERT_EQ(rpma_ext_conn_req_get_peer_addr(incoming, &address), 0);
    ASSERT_EQ(address.ss_family, AF_INET);
    char host[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in &>(address).sin_addr, host, sizeof(host));
    EXPECT_STREQ(host, TestAddr());
    EXPECT_NE(reinterpret_cast<sockaddr_in &>(address).sin_port, 0);
    EXPECT_EQ(rpma_ext_conn_req_get_peer_addr(incoming, nullptr), RPMA_E_INVAL);
    EXPECT_EQ(rpma_ext_conn_req_get_peer_addr(nullptr, &address), RPMA_E_INVAL);
    Accept(&incoming);
    rpma_test::Disconnect(client_, server_);
}

TEST_F(Isolation, AConnectedRequestIsConsumedAndCannotMove) {
    rpma_conn_req *incoming = Incoming();
    ASSERT_NE(incoming, nullptr);
    Accept(&incoming);
    EXPECT_EQ(incoming, nullptr);
    EXPECT_EQ(rpma_ext_conn_req_move_to_peer(incoming, peer_b_), RPMA_E_INVAL);
    rpma_test::Disconnect(client_, server_);
}

TEST_F(Isolation, MovingToAPeerOfAnotherDeviceIsInvalidAndTheRequestStaysUsable) {
    // A second tcp device: a device context of its own, on whichever
    // provider the request arrived.
    rpma::provider::tcp::Device other_device;
    rpma_peer other;
    other.device = &other_device;
    ASSERT_EQ(other_device.AllocPd(&other.pd), 0);

    rpma_conn_req *incoming = Incoming();
    ASSERT_NE(incoming, nullptr);
    EXPECT_EQ(rpma_ext_conn_req_move_to_peer(incoming, &other), RPMA_E_INVAL);
    // Still in peer A: accepted, it reaches region A.
    Accept(&incoming);
    rpma_mr_remote *remote_a = nullptr;
    region_a_.RemoteView(&remote_a);
    ASSERT_EQ(rpma_write(client_, remote_a, 0, local_.mr, 0, 8, kAlways, nullptr), 0);
    ibv_wc wc = rpma_test::NextCompletion(client_);
    EXPECT_EQ(wc.status, IBV_WC_SUCCESS) << ibv_wc_status_str(wc.status);
    EXPECT_EQ(memcmp(region_a_.bytes.data(), "llllllll", 8), 0);
    EXPECT_EQ(rpma_mr_remote_delete(&remote_a), 0);
    rpma_test::Disconnect(client_, server_);
}

TEST_F(Isolation, ARequestUsingAnSrqCannotMove) {
    rpma_srq *srq = nullptr;
    ASSERT_EQ(rpma_srq_new(peer_a_, nullptr, &srq), 0);
    rpma_conn_cfg *cfg = nullptr;
    ASSERT_EQ(rpma_conn_cfg_new(&cfg), 0);
    ASSERT_EQ(rpma_conn_cfg_set_srq(cfg, srq), 0);
    rpma_conn_req *incoming = Incoming(cfg);
    ASSERT_NE(incoming, nullptr);
    EXPECT_EQ(rpma_ext_conn_req_move_to_peer(incoming, peer_b_), RPMA_E_INVAL);
    EXPECT_EQ(rpma_conn_req_delete(&incoming), 0);
    ExpectEvent(client_, RPMA_CONN_REJECTED);
    EXPECT_EQ(rpma_conn_cfg_delete(&cfg), 0);
    EXPECT_EQ(rpma_srq_delete(&srq), 0);
}

TEST_F(Isolation, ARequestWithPostedReceivesCannotMove) {
    rpma_conn_req *incoming = Incoming();
    ASSERT_NE(incoming, nullptr);
    Region receive;
    receive.Register(peer_a_, 'r', RPMA_MR_USAGE_RECV);
    ASSERT_EQ(rpma_conn_req_recv(incoming, receive.mr, 0, 8, nullptr), 0);
    EXPECT_EQ(rpma_ext_conn_req_move_to_peer(incoming, peer_b_), RPMA_E_INVAL);
    EXPECT_EQ(rpma_conn_req_delete(&incoming), 0);
    ExpectEvent(client_, RPMA_CONN_REJECTED);
}

TEST_F(Isolation, MovingToItsOwnPeerChangesNothing) {
    rpma_conn_req *incoming = Incoming();
    ASSERT_NE(incoming, nullptr);
    EXPECT_EQ(rpma_ext_conn_req_move_to_peer(incoming, peer_a_), 0);
    Accept(&incoming);
    rpma_test::Disconnect(client_, server_);
}

TEST_F(Isolation, AMovedRequestThatIsDeletedIsRejectedAtTheClient) {
    rpma_conn_req *incoming = Incoming();
    ASSERT_NE(incoming, nullptr);
    ASSERT_EQ(rpma_ext_conn_req_move_to_peer(incoming, peer_b_), 0);
    EXPECT_EQ(rpma_conn_req_delete(&incoming), 0);
    EXPECT_EQ(incoming, nullptr);
    ExpectEvent(client_, RPMA_CONN_REJECTED);
}

}  // namespace
