#include <fcntl.h>
#include <gtest/gtest.h>

#include "connected_pair.h"
#include "librpma.h"

namespace {

class Conn : public rpma_test::ConnectedPair {};

TEST_F(Conn, GettersRejectNullArguments) {
    int fd;
    uint32_t qp_num;
    rpma_cq *cq;
    rpma_conn_private_data pdata;
    rpma_conn_event event;
    EXPECT_EQ(rpma_conn_get_event_fd(nullptr, &fd), RPMA_E_INVAL);
    EXPECT_EQ(rpma_conn_get_event_fd(client_, nullptr), RPMA_E_INVAL);
    EXPECT_EQ(rpma_conn_next_event(nullptr, &event), RPMA_E_INVAL);
    EXPECT_EQ(rpma_conn_next_event(client_, nullptr), RPMA_E_INVAL);
    EXPECT_EQ(rpma_conn_get_private_data(nullptr, &pdata), RPMA_E_INVAL);
    EXPECT_EQ(rpma_conn_get_private_data(client_, nullptr), RPMA_E_INVAL);
    EXPECT_EQ(rpma_conn_get_qp_num(nullptr, &qp_num), RPMA_E_INVAL);
    EXPECT_EQ(rpma_conn_get_qp_num(client_, nullptr), RPMA_E_INVAL);
    EXPECT_EQ(rpma_conn_get_cq(nullptr, &cq), RPMA_E_INVAL);
    EXPECT_EQ(rpma_conn_get_cq(client_, nullptr), RPMA_E_INVAL);
    EXPECT_EQ(rpma_conn_get_rcq(nullptr, &cq), RPMA_E_INVAL);
    EXPECT_EQ(rpma_conn_get_rcq(client_, nullptr), RPMA_E_INVAL);
    EXPECT_EQ(rpma_conn_get_compl_fd(nullptr, &fd), RPMA_E_INVAL);
    EXPECT_EQ(rpma_conn_get_compl_fd(client_, nullptr), RPMA_E_INVAL);
    EXPECT_EQ(rpma_conn_apply_remote_peer_cfg(client_, nullptr), RPMA_E_INVAL);
    EXPECT_EQ(rpma_conn_disconnect(nullptr), RPMA_E_INVAL);
    EXPECT_EQ(rpma_conn_delete(nullptr), RPMA_E_INVAL);
}

TEST_F(Conn, QueryResultsDescribeTheConnection) {
    uint32_t client_qp = 0, server_qp = 0;
    ASSERT_EQ(rpma_conn_get_qp_num(client_, &client_qp), 0);
    ASSERT_EQ(rpma_conn_get_qp_num(server_, &server_qp), 0);
    EXPECT_NE(client_qp, 0u);
    EXPECT_NE(client_qp, server_qp);
    rpma_cq *cq = nullptr;
    rpma_cq *rcq = reinterpret_cast<rpma_cq *>(0x1);
    ASSERT_EQ(rpma_conn_get_cq(client_, &cq), 0);
    EXPECT_NE(cq, nullptr);
    ASSERT_EQ(rpma_conn_get_rcq(client_, &rcq), 0);
    EXPECT_EQ(rcq, nullptr) << "rcq_size is 0 by default";
}

TEST_F(Conn, WithoutASharedChannelConnWaitAndComplFdAreNotShared) {
    int fd = -1;
    EXPECT_EQ(rpma_conn_get_compl_fd(client_, &fd), RPMA_E_NOT_SHARED_CHNL);
    rpma_cq *cq = nullptr;
    bool is_rcq = false;
    EXPECT_EQ(rpma_conn_wait(client_, 0, &cq, &is_rcq), RPMA_E_NOT_SHARED_CHNL);
    EXPECT_EQ(rpma_conn_wait(nullptr, 0, &cq, &is_rcq), RPMA_E_INVAL);
    EXPECT_EQ(rpma_conn_wait(client_, 0, nullptr, &is_rcq), RPMA_E_INVAL);
}

TEST_F(Conn, NonBlockingEventFdWithNothingPendingReturnsNoEvent) {
    int fd = -1;
    ASSERT_EQ(rpma_conn_get_event_fd(client_, &fd), 0);
    ASSERT_EQ(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK), 0);
    rpma_conn_event event;
    EXPECT_EQ(rpma_conn_next_event(client_, &event), RPMA_E_NO_EVENT);
    ASSERT_EQ(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK), 0);
}

class SharedChannelConn : public rpma_test::ConnectedPair {
  protected:
    rpma_conn_cfg *ClientCfg() override {
        EXPECT_EQ(rpma_conn_cfg_new(&cfg_), 0);
        EXPECT_EQ(rpma_conn_cfg_set_compl_channel(cfg_, true), 0);
        EXPECT_EQ(rpma_conn_cfg_set_rcq_size(cfg_, 4), 0);
        return cfg_;
    }
    void TearDown() override {
        ConnectedPair::TearDown();
        EXPECT_EQ(rpma_conn_cfg_delete(&cfg_), 0);
    }
    rpma_conn_cfg *cfg_ = nullptr;
};

TEST_F(SharedChannelConn, CqWaitSaysSharedAndConnWaitReportsWhichCqFired) {
    rpma_cq *cq = nullptr;
    rpma_cq *rcq = nullptr;
    ASSERT_EQ(rpma_conn_get_cq(client_, &cq), 0);
    ASSERT_EQ(rpma_conn_get_rcq(client_, &rcq), 0);
    ASSERT_NE(rcq, nullptr);
    EXPECT_EQ(rpma_cq_wait(cq), RPMA_E_SHARED_CHANNEL);
    EXPECT_EQ(rpma_cq_wait(rcq), RPMA_E_SHARED_CHANNEL);
    int compl_fd = -1, cq_fd = -2;
    ASSERT_EQ(rpma_conn_get_compl_fd(client_, &compl_fd), 0);
    ASSERT_EQ(rpma_cq_get_fd(cq, &cq_fd), 0);
    EXPECT_EQ(compl_fd, cq_fd) << "both CQs signal through the one shared channel";

    // A message from the server lands in the client's receive CQ.
    char in[16] = {}, out[16] = "ping";
    rpma_mr_local *recv_mr = nullptr, *send_mr = nullptr;
    ASSERT_EQ(rpma_mr_reg(peer_, in, sizeof(in), RPMA_MR_USAGE_RECV, &recv_mr), 0);
    ASSERT_EQ(rpma_mr_reg(peer_, out, sizeof(out), RPMA_MR_USAGE_SEND, &send_mr), 0);
    ASSERT_EQ(rpma_recv(client_, recv_mr, 0, sizeof(in), nullptr), 0);
    ASSERT_EQ(rpma_send(server_, send_mr, 0, 5, RPMA_F_COMPLETION_ON_ERROR, nullptr), 0);

    rpma_cq *fired = nullptr;
    bool is_rcq = false;
    ASSERT_EQ(rpma_conn_wait(client_, 0, &fired, &is_rcq), 0);
    EXPECT_EQ(fired, rcq);
    EXPECT_TRUE(is_rcq);
    ibv_wc wc{};
    ASSERT_EQ(rpma_cq_get_wc(rcq, 1, &wc, nullptr), 0);
    EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
    EXPECT_EQ(wc.opcode, IBV_WC_RECV);
    EXPECT_STREQ(in, "ping");
    EXPECT_EQ(rpma_cq_get_wc(cq, 1, &wc, nullptr), RPMA_E_NO_COMPLETION)
        << "the main CQ never reports receives when there is a receive CQ";
    ASSERT_EQ(rpma_mr_dereg(&recv_mr), 0);
    ASSERT_EQ(rpma_mr_dereg(&send_mr), 0);
}

}  // namespace
