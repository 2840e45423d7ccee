#include <gtest/gtest.h>

#include "connected_pair.h"
#include "librpma.h"

namespace {

class Srq : public ::testing::Test {
  protected:
    void SetUp() override { peer_ = rpma_test::NewPeer(); }
    void TearDown() override { EXPECT_EQ(rpma_peer_delete(&peer_), 0); }
    rpma_peer *peer_ = nullptr;
};

TEST_F(Srq, DefaultSrqHasItsOwnReceiveCq) {
    rpma_srq *srq = nullptr;
    ASSERT_EQ(rpma_srq_new(peer_, nullptr, &srq), 0);
    rpma_cq *rcq = nullptr;
    ASSERT_EQ(rpma_srq_get_rcq(srq, &rcq), 0);
    EXPECT_NE(rcq, nullptr);
    ASSERT_EQ(rpma_srq_delete(&srq), 0);
    EXPECT_EQ(srq, nullptr);
}

TEST_F(Srq, RcqSizeZeroMeansNoReceiveCq) {
    rpma_srq_cfg *cfg = nullptr;
    ASSERT_EQ(rpma_srq_cfg_new(&cfg), 0);
    ASSERT_EQ(rpma_srq_cfg_set_rcq_size(cfg, 0), 0);
    rpma_srq *srq = nullptr;
    ASSERT_EQ(rpma_srq_new(peer_, cfg, &srq), 0);
    rpma_cq *rcq = reinterpret_cast<rpma_cq *>(0x1);
    ASSERT_EQ(rpma_srq_get_rcq(srq, &rcq), 0);
    EXPECT_EQ(rcq, nullptr);
    ASSERT_EQ(rpma_srq_delete(&srq), 0);
    ASSERT_EQ(rpma_srq_cfg_delete(&cfg), 0);
}

TEST_F(Srq, ArgumentErrors) {
    rpma_srq *srq = nullptr;
    EXPECT_EQ(rpma_srq_new(nullptr, nullptr, &srq), RPMA_E_INVAL);
    EXPECT_EQ(rpma_srq_new(peer_, nullptr, nullptr), RPMA_E_INVAL);
    EXPECT_EQ(rpma_srq_delete(nullptr), RPMA_E_INVAL);
    EXPECT_EQ(rpma_srq_delete(&srq), 0) << "deleting NULL is a no-op";
    ASSERT_EQ(rpma_srq_new(peer_, nullptr, &srq), 0);
    char buffer[16];
    rpma_mr_local *mr = nullptr;
    ASSERT_EQ(rpma_mr_reg(peer_, buffer, sizeof(buffer), RPMA_MR_USAGE_RECV, &mr), 0);
    rpma_cq *rcq;
    EXPECT_EQ(rpma_srq_recv(nullptr, mr, 0, 8, nullptr), RPMA_E_INVAL);
    EXPECT_EQ(rpma_srq_recv(srq, nullptr, 0, 8, nullptr), RPMA_E_INVAL);
    EXPECT_EQ(rpma_srq_recv(srq, mr, 0, 8, nullptr), 0);
    EXPECT_EQ(rpma_srq_get_rcq(nullptr, &rcq), RPMA_E_INVAL);
    EXPECT_EQ(rpma_srq_get_rcq(srq, nullptr), RPMA_E_INVAL);
    ASSERT_EQ(rpma_srq_delete(&srq), 0);
    ASSERT_EQ(rpma_mr_dereg(&mr), 0);
}

// The tcp provider's SRQ holds exactly rq_size receives. A verbs device may
// make it deeper than asked (ibv_create_srq reports the depth it gave;
// Soft-RoCE rounds up to a power of two, minus one), but it too refuses a
// receive once it is full.
TEST_F(Srq, PostingPastItsDepthIsAProviderError) {
    rpma_srq_cfg *cfg = nullptr;
    ASSERT_EQ(rpma_srq_cfg_new(&cfg), 0);
    ASSERT_EQ(rpma_srq_cfg_set_rq_size(cfg, 2), 0);
    rpma_srq *srq = nullptr;
    ASSERT_EQ(rpma_srq_new(peer_, cfg, &srq), 0);
    char buffer[16];
    rpma_mr_local *mr = nullptr;
    ASSERT_EQ(rpma_mr_reg(peer_, buffer, sizeof(buffer), RPMA_MR_USAGE_RECV, &mr), 0);
    EXPECT_EQ(rpma_srq_recv(srq, mr, 0, 8, nullptr), 0);
    EXPECT_EQ(rpma_srq_recv(srq, mr, 8, 8, nullptr), 0);
    if (rpma_test::OnVerbs()) {
        constexpr int kMaxExtra = 64;
        int extra = 0;
        int ret = 0;
        while (extra < kMaxExtra && (ret = rpma_srq_recv(srq, mr, 0, 8, nullptr)) == 0)
            ++extra;
        EXPECT_EQ(ret, RPMA_E_PROVIDER) << "still taking receives after " << extra << " extra";
        if (rpma_test::OnSoftRoce()) {
            EXPECT_EQ(extra, 1) << "Soft-RoCE: a 2-deep SRQ holds 3";
        }
    } else {
        EXPECT_EQ(rpma_srq_recv(srq, mr, 0, 8, nullptr), RPMA_E_PROVIDER);
    }
    ASSERT_EQ(rpma_srq_delete(&srq), 0);
    ASSERT_EQ(rpma_mr_dereg(&mr), 0);
    ASSERT_EQ(rpma_srq_cfg_delete(&cfg), 0);
}

}  // namespace
