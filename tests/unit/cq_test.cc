#include <fcntl.h>
#include <gtest/gtest.h>

#include "connected_pair.h"
#include "librpma.h"

namespace {

class Cq : public rpma_test::ConnectedPair {
  protected:
    rpma_cq *ClientCq() {
        rpma_cq *cq = nullptr;
        EXPECT_EQ(rpma_conn_get_cq(client_, &cq), 0);
        return cq;
    }
};

TEST_F(Cq, ArgumentErrors) {
    rpma_cq *cq = ClientCq();
    ibv_wc wc[2];
    int got = 0, fd = -1;
    EXPECT_EQ(rpma_cq_get_fd(nullptr, &fd), RPMA_E_INVAL);
    EXPECT_EQ(rpma_cq_get_fd(cq, nullptr), RPMA_E_INVAL);
    EXPECT_EQ(rpma_cq_wait(nullptr), RPMA_E_INVAL);
    EXPECT_EQ(rpma_cq_get_wc(nullptr, 1, wc, &got), RPMA_E_INVAL);
    EXPECT_EQ(rpma_cq_get_wc(cq, 1, nullptr, &got), RPMA_E_INVAL);
    EXPECT_EQ(rpma_cq_get_wc(cq, 0, wc, &got), RPMA_E_INVAL);
    EXPECT_EQ(rpma_cq_get_wc(cq, 2, wc, nullptr), RPMA_E_INVAL);
}

TEST_F(Cq, EmptyQueueHasNoCompletionAndNonBlockingWaitSaysSo) {
    rpma_cq *cq = ClientCq();
    ibv_wc wc;
    EXPECT_EQ(rpma_cq_get_wc(cq, 1, &wc, nullptr), RPMA_E_NO_COMPLETION);
    int fd = -1;
    ASSERT_EQ(rpma_cq_get_fd(cq, &fd), 0);
    ASSERT_EQ(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK), 0);
    EXPECT_EQ(rpma_cq_wait(cq), RPMA_E_NO_COMPLETION);
}

TEST_F(Cq, GetWcReturnsSeveralCompletionsAtOnce) {
    char buffer[64] = {};
    rpma_mr_local *mr = nullptr;
    ASSERT_EQ(rpma_mr_reg(peer_, buffer, sizeof(buffer),
                          RPMA_MR_USAGE_WRITE_DST | RPMA_MR_USAGE_WRITE_SRC, &mr),
              0);
    uint8_t desc[21];
    ASSERT_EQ(rpma_mr_get_descriptor(mr, desc), 0);
    rpma_mr_remote *remote = nullptr;
    ASSERT_EQ(rpma_mr_remote_from_descriptor(desc, sizeof(desc), &remote), 0);
    for (int i = 0; i < 3; ++i)
        ASSERT_EQ(rpma_write(client_, remote, 32, mr, 0, 8, RPMA_F_COMPLETION_ALWAYS, nullptr), 0);

    rpma_cq *cq = ClientCq();
    ibv_wc wc[5];
    int total = 0;
    while (total < 3) {
        int got = 0;
        int ret = rpma_cq_get_wc(cq, 5, wc, &got);
        if (ret == RPMA_E_NO_COMPLETION) {
            ASSERT_EQ(rpma_cq_wait(cq), 0);
            continue;
        }
        ASSERT_EQ(ret, 0);
        ASSERT_GE(got, 1);
        ASSERT_LE(got, 3 - total);
        for (int i = 0; i < got; ++i)
            EXPECT_EQ(wc[i].status, IBV_WC_SUCCESS);
        total += got;
    }
    ASSERT_EQ(rpma_mr_remote_delete(&remote), 0);
    ASSERT_EQ(rpma_mr_dereg(&mr), 0);
}

}  // namespace
