#include <fcntl.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "connected_pair.h"
#include "librpma.h"

namespace {

class Ep : public ::testing::Test {
  protected:
    void SetUp() override { peer_ = rpma_test::NewPeer(); }
    void TearDown() override { EXPECT_EQ(rpma_peer_delete(&peer_), 0); }
    rpma_peer *peer_ = nullptr;
};

TEST_F(Ep, ListenRejectsNullArguments) {
    rpma_ep *ep = nullptr;
    EXPECT_EQ(rpma_ep_listen(nullptr, rpma_test::TestAddr(), "7000", &ep), RPMA_E_INVAL);
    EXPECT_EQ(rpma_ep_listen(peer_, nullptr, "7000", &ep), RPMA_E_INVAL);
    EXPECT_EQ(rpma_ep_listen(peer_, rpma_test::TestAddr(), nullptr, &ep), RPMA_E_INVAL);
    EXPECT_EQ(rpma_ep_listen(peer_, rpma_test::TestAddr(), "7000", nullptr), RPMA_E_INVAL);
    EXPECT_EQ(ep, nullptr);
}

TEST_F(Ep, ListeningTwiceOnOnePortFailsWithProviderError) {
    std::string port = rpma_test::FreePort();
    rpma_ep *first = nullptr;
    rpma_ep *second = nullptr;
    ASSERT_EQ(rpma_ep_listen(peer_, rpma_test::TestAddr(), port.c_str(), &first), 0);
    EXPECT_EQ(rpma_ep_listen(peer_, rpma_test::TestAddr(), port.c_str(), &second), RPMA_E_PROVIDER);
    EXPECT_EQ(second, nullptr);
    ASSERT_EQ(rpma_ep_shutdown(&first), 0);
    EXPECT_EQ(first, nullptr);
}

TEST_F(Ep, ShutdownAndGetFdRejectNullArguments) {
    EXPECT_EQ(rpma_ep_shutdown(nullptr), RPMA_E_INVAL);
    rpma_ep *none = nullptr;
    EXPECT_EQ(rpma_ep_shutdown(&none), 0);
    std::string port = rpma_test::FreePort();
    rpma_ep *ep = nullptr;
    ASSERT_EQ(rpma_ep_listen(peer_, rpma_test::TestAddr(), port.c_str(), &ep), 0);
    int fd = -1;
    EXPECT_EQ(rpma_ep_get_fd(nullptr, &fd), RPMA_E_INVAL);
    EXPECT_EQ(rpma_ep_get_fd(ep, nullptr), RPMA_E_INVAL);
    ASSERT_EQ(rpma_ep_get_fd(ep, &fd), 0);
    EXPECT_GE(fd, 0);
    ASSERT_EQ(rpma_ep_shutdown(&ep), 0);
}

TEST_F(Ep, NonBlockingNextConnReqWithNothingPendingReturnsNoEvent) {
    std::string port = rpma_test::FreePort();
    rpma_ep *ep = nullptr;
    ASSERT_EQ(rpma_ep_listen(peer_, rpma_test::TestAddr(), port.c_str(), &ep), 0);
    int fd = -1;
    ASSERT_EQ(rpma_ep_get_fd(ep, &fd), 0);
    ASSERT_EQ(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK), 0);
    rpma_conn_req *req = nullptr;
    EXPECT_EQ(rpma_ep_next_conn_req(ep, nullptr, &req), RPMA_E_NO_EVENT);
    EXPECT_EQ(rpma_ep_next_conn_req(nullptr, nullptr, &req), RPMA_E_INVAL);
    EXPECT_EQ(rpma_ep_next_conn_req(ep, nullptr, nullptr), RPMA_E_INVAL);
    EXPECT_EQ(req, nullptr);
    ASSERT_EQ(rpma_ep_shutdown(&ep), 0);
}

TEST_F(Ep, RejectedRequestReportsRejectedToTheClient) {
    std::string port = rpma_test::FreePort();
    rpma_ep *ep = nullptr;
    ASSERT_EQ(rpma_ep_listen(peer_, rpma_test::TestAddr(), port.c_str(), &ep), 0);
    rpma_conn_req *outgoing = nullptr;
    ASSERT_EQ(rpma_conn_req_new(peer_, rpma_test::TestAddr(), port.c_str(), nullptr, &outgoing), 0);
    rpma_conn *client = nullptr;
    ASSERT_EQ(rpma_conn_req_connect(&outgoing, nullptr, &client), 0);

    rpma_conn_req *incoming = nullptr;
    ASSERT_EQ(rpma_ep_next_conn_req(ep, nullptr, &incoming), 0);
    ASSERT_EQ(rpma_conn_req_delete(&incoming), 0);
    EXPECT_EQ(incoming, nullptr);
    rpma_test::ExpectEvent(client, RPMA_CONN_REJECTED);

    ASSERT_EQ(rpma_conn_delete(&client), 0);
    ASSERT_EQ(rpma_ep_shutdown(&ep), 0);
}

// The tcp provider's connect is refused: UNREACHABLE. On InfiniBand and
// RoCE the remote CM answers a request for a service nobody listens on with
// a reject (IB_CM_REJ_INVALID_SERVICE_ID): REJECTED, as with librpma.
TEST_F(Ep, ConnectingWhereNothingListensIsUnreachableOnTcpAndRejectedOnVerbs) {
    std::string port = rpma_test::FreePort();
    rpma_conn_cfg *cfg = nullptr;
    ASSERT_EQ(rpma_conn_cfg_new(&cfg), 0);
    ASSERT_EQ(rpma_conn_cfg_set_timeout(cfg, 500), 0);
    rpma_conn_req *outgoing = nullptr;
    ASSERT_EQ(rpma_conn_req_new(peer_, rpma_test::TestAddr(), port.c_str(), cfg, &outgoing), 0);
    rpma_conn *client = nullptr;
    ASSERT_EQ(rpma_conn_req_connect(&outgoing, nullptr, &client), 0);
    rpma_test::ExpectEvent(client,
                           rpma_test::OnVerbs() ? RPMA_CONN_REJECTED : RPMA_CONN_UNREACHABLE);
    ASSERT_EQ(rpma_conn_delete(&client), 0);
    ASSERT_EQ(rpma_conn_cfg_delete(&cfg), 0);
}

}  // namespace
