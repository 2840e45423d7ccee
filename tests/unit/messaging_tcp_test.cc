// Messaging behaviour only the tcp provider lets a test provoke quickly:
// its receiver-not-ready bound can be shortened. On verbs librpma connects
// with rnr_retry_count 7, which retries for ever, so a send that never finds
// a receive never fails there. Not run on verbs (see BUILD.bazel).
#include <gtest/gtest.h>

#include <chrono>
#include <vector>

#include "connected_pair.h"
#include "librpma.h"
#include "rpma_core/src/provider/tcp/tcp_device.h"

namespace {

class TcpMessaging : public rpma_test::ConnectedPair {};

TEST_F(TcpMessaging, SendThatNeverFindsAReceiveFailsWithRnrRetryExceeded) {
    ASSERT_FALSE(rpma_test::OnVerbs()) << "a test of the tcp provider";
    std::vector<char> out(64);
    rpma_mr_local *out_mr = nullptr;
    ASSERT_EQ(rpma_mr_reg(peer_, out.data(), out.size(), RPMA_MR_USAGE_SEND, &out_mr), 0);
    auto &device = rpma::provider::tcp::GetDevice();
    device.SetReceiverNotReadyTimeout(std::chrono::milliseconds(100));
    ASSERT_EQ(rpma_send(client_, out_mr, 0, out.size(), RPMA_F_COMPLETION_ALWAYS, nullptr), 0);
    ibv_wc wc = NextCompletion(client_);
    device.SetReceiverNotReadyTimeout(rpma::provider::tcp::Device::kDefaultReceiverNotReadyTimeout);
    EXPECT_EQ(wc.status, IBV_WC_RNR_RETRY_EXC_ERR) << ibv_wc_status_str(wc.status);
    // Like an RC QP in the error state, the connection is broken for good.
    ASSERT_EQ(rpma_conn_delete(&client_), 0);
    ASSERT_EQ(rpma_conn_delete(&server_), 0);
    ASSERT_EQ(rpma_mr_dereg(&out_mr), 0);
}

}  // namespace
