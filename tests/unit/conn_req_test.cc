#include <gtest/gtest.h>

#include <string>

#include "connected_pair.h"
#include "librpma.h"

namespace {

class ConnReq : public ::testing::Test {
  protected:
    void SetUp() override {
        peer_ = rpma_test::NewPeer();
        port_ = rpma_test::FreePort();
    }
    void TearDown() override { EXPECT_EQ(rpma_peer_delete(&peer_), 0); }
    rpma_peer *peer_ = nullptr;
    std::string port_;
};

TEST_F(ConnReq, NewRejectsNullArguments) {
    rpma_conn_req *req = nullptr;
    const char *port = port_.c_str();
    EXPECT_EQ(rpma_conn_req_new(nullptr, rpma_test::TestAddr(), port, nullptr, &req), RPMA_E_INVAL);
    EXPECT_EQ(rpma_conn_req_new(peer_, nullptr, port, nullptr, &req), RPMA_E_INVAL);
    EXPECT_EQ(rpma_conn_req_new(peer_, rpma_test::TestAddr(), nullptr, nullptr, &req),
              RPMA_E_INVAL);
    EXPECT_EQ(rpma_conn_req_new(peer_, rpma_test::TestAddr(), port, nullptr, nullptr),
              RPMA_E_INVAL);
    EXPECT_EQ(req, nullptr);
}

TEST_F(ConnReq, UnresolvableAddressIsAProviderError) {
    rpma_conn_req *req = nullptr;
    EXPECT_EQ(rpma_conn_req_new(peer_, "no-such-host.invalid", port_.c_str(), nullptr, &req),
              RPMA_E_PROVIDER);
    EXPECT_EQ(req, nullptr);
}

TEST_F(ConnReq, SharedChannelWithAnSrqOwningItsCqIsInvalid) {
    rpma_srq *srq = nullptr;
    ASSERT_EQ(rpma_srq_new(peer_, nullptr, &srq), 0);  // default: an RCQ of its own
    rpma_conn_cfg *cfg = nullptr;
    ASSERT_EQ(rpma_conn_cfg_new(&cfg), 0);
    ASSERT_EQ(rpma_conn_cfg_set_srq(cfg, srq), 0);
    ASSERT_EQ(rpma_conn_cfg_set_compl_channel(cfg, true), 0);
    rpma_conn_req *req = nullptr;
    EXPECT_EQ(rpma_conn_req_new(peer_, rpma_test::TestAddr(), port_.c_str(), cfg, &req),
              RPMA_E_INVAL);
    EXPECT_EQ(req, nullptr);
    ASSERT_EQ(rpma_conn_cfg_delete(&cfg), 0);
    ASSERT_EQ(rpma_srq_delete(&srq), 0);
}

TEST_F(ConnReq, DeleteRejectsNullAndAcceptsNullObject) {
    EXPECT_EQ(rpma_conn_req_delete(nullptr), RPMA_E_INVAL);
    rpma_conn_req *req = nullptr;
    EXPECT_EQ(rpma_conn_req_delete(&req), 0);
    ASSERT_EQ(rpma_conn_req_new(peer_, rpma_test::TestAddr(), port_.c_str(), nullptr, &req), 0);
    ASSERT_EQ(rpma_conn_req_delete(&req), 0);
    EXPECT_EQ(req, nullptr);
}

TEST_F(ConnReq, ConnectValidatesArgumentsAndConsumesTheRequest) {
    rpma_conn *conn = nullptr;
    EXPECT_EQ(rpma_conn_req_connect(nullptr, nullptr, &conn), RPMA_E_INVAL);
    rpma_conn_req *req = nullptr;
    EXPECT_EQ(rpma_conn_req_connect(&req, nullptr, &conn), RPMA_E_INVAL);

    ASSERT_EQ(rpma_conn_req_new(peer_, rpma_test::TestAddr(), port_.c_str(), nullptr, &req), 0);
    EXPECT_EQ(rpma_conn_req_connect(&req, nullptr, nullptr), RPMA_E_INVAL);
    EXPECT_EQ(req, nullptr) << "the request is consumed even when connecting fails";

    ASSERT_EQ(rpma_conn_req_new(peer_, rpma_test::TestAddr(), port_.c_str(), nullptr, &req), 0);
    rpma_conn_private_data empty{nullptr, 4};
    EXPECT_EQ(rpma_conn_req_connect(&req, &empty, &conn), RPMA_E_INVAL);
    EXPECT_EQ(req, nullptr);

    char data[4] = "abc";
    ASSERT_EQ(rpma_conn_req_new(peer_, rpma_test::TestAddr(), port_.c_str(), nullptr, &req), 0);
    rpma_conn_private_data zero_length{data, 0};
    EXPECT_EQ(rpma_conn_req_connect(&req, &zero_length, &conn), RPMA_E_INVAL);
    EXPECT_EQ(req, nullptr);
    EXPECT_EQ(conn, nullptr);
}

TEST_F(ConnReq, GetPrivateDataAndRecvRejectNullArguments) {
    rpma_conn_req *req = nullptr;
    ASSERT_EQ(rpma_conn_req_new(peer_, rpma_test::TestAddr(), port_.c_str(), nullptr, &req), 0);
    rpma_conn_private_data pdata;
    EXPECT_EQ(rpma_conn_req_get_private_data(nullptr, &pdata), RPMA_E_INVAL);
    EXPECT_EQ(rpma_conn_req_get_private_data(req, nullptr), RPMA_E_INVAL);
    char buffer[64];
    rpma_mr_local *mr = nullptr;
    ASSERT_EQ(rpma_mr_reg(peer_, buffer, sizeof(buffer), RPMA_MR_USAGE_RECV, &mr), 0);
    EXPECT_EQ(rpma_conn_req_recv(nullptr, mr, 0, 8, nullptr), RPMA_E_INVAL);
    EXPECT_EQ(rpma_conn_req_recv(req, nullptr, 0, 8, nullptr), RPMA_E_INVAL);
    ASSERT_EQ(rpma_conn_req_delete(&req), 0);
    ASSERT_EQ(rpma_mr_dereg(&mr), 0);
}

// The server reads the client's private data from the request, and it moves
// to the connection; the client reads the server's after ESTABLISHED.
class PrivateData : public rpma_test::ConnectedPair {};

// On verbs rdma_cm pads it (see ReceivedPrivateData): exactly what librpma
// applications see there.
TEST_F(PrivateData, TravelsBothWaysAndStaysWithTheConnection) {
    rpma_conn_private_data pdata{};
    ASSERT_EQ(rpma_conn_get_private_data(server_, &pdata), 0);
    EXPECT_TRUE(rpma_test::ReceivedPrivateData(pdata, hello_, sizeof(hello_)));
    ASSERT_EQ(rpma_conn_get_private_data(client_, &pdata), 0);
    EXPECT_TRUE(rpma_test::ReceivedPrivateData(pdata, welcome_, sizeof(welcome_)));
}

}  // namespace
