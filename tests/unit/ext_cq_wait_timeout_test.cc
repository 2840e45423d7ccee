// rpma_ext_cq_wait_timeout: rpma_cq_wait with a deadline. A completion ends
// the wait at once; without one the call returns RPMA_E_NO_COMPLETION once
// the time is up, whatever O_NONBLOCK says; the CQ is re-armed for the next
// wait either way.
#include <fcntl.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "connected_pair.h"
#include "librpma.h"
#include "rpma_ext.h"

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// Longer than any completion on loopback takes, short enough for a test
// that waits it out on purpose.
constexpr int kShortMs = 100;
// A bound no healthy completion comes near.
constexpr int kLongMs = 20000;

class ExtCqWaitTimeout : public rpma_test::ConnectedPair {
  protected:
    void SetUp() override {
        ConnectedPair::SetUp();
        ASSERT_EQ(rpma_mr_reg(peer_, buffer_, sizeof(buffer_),
                              RPMA_MR_USAGE_WRITE_DST | RPMA_MR_USAGE_WRITE_SRC, &mr_),
                  0);
        size_t size = 0;
        ASSERT_EQ(rpma_mr_get_descriptor_size(mr_, &size), 0);
        std::string desc(size, '\0');
        ASSERT_EQ(rpma_mr_get_descriptor(mr_, desc.data()), 0);
        ASSERT_EQ(rpma_mr_remote_from_descriptor(desc.data(), size, &remote_), 0);
        ASSERT_EQ(rpma_conn_get_cq(client_, &cq_), 0);
    }
    void TearDown() override {
        EXPECT_EQ(rpma_mr_remote_delete(&remote_), 0);
        EXPECT_EQ(rpma_mr_dereg(&mr_), 0);
        ConnectedPair::TearDown();
    }

    // A signaled 8-byte write from the buffer's start to its middle.
    void PostWrite() {
        ASSERT_EQ(rpma_write(client_, remote_, 32, mr_, 0, 8, RPMA_F_COMPLETION_ALWAYS, nullptr),
                  0);
    }
    // Waits with `timeout_ms` until the write's completion can be taken.
    // *waited: a wait ended for it; false when the completion was there at
    // the first poll (then its event still waits in the channel, as with
    // librpma: the CQ was armed when it arrived).
    void ExpectCompletionWithin(int timeout_ms, bool *waited = nullptr) {
        ibv_wc wc{};
        const auto start = Clock::now();
        bool ignored;
        if (waited == nullptr)
            waited = &ignored;
        *waited = false;
        for (;;) {
            const int got = rpma_cq_get_wc(cq_, 1, &wc, nullptr);
            if (got == 0)
                break;
            ASSERT_EQ(got, RPMA_E_NO_COMPLETION);
            ASSERT_EQ(rpma_ext_cq_wait_timeout(cq_, timeout_ms), 0);
            *waited = true;
        }
        EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
        EXPECT_EQ(wc.opcode, IBV_WC_RDMA_WRITE);
        EXPECT_LT(Clock::now() - start, milliseconds(kLongMs));
    }
    void ExpectTimeoutAfter(int timeout_ms) {
        const auto start = Clock::now();
        EXPECT_EQ(rpma_ext_cq_wait_timeout(cq_, timeout_ms), RPMA_E_NO_COMPLETION);
        const auto waited = Clock::now() - start;
        EXPECT_GE(waited, milliseconds(timeout_ms));
        EXPECT_LT(waited, milliseconds(timeout_ms + kLongMs));
    }

    alignas(64) char buffer_[64] = {};
    rpma_mr_local *mr_ = nullptr;
    rpma_mr_remote *remote_ = nullptr;
    rpma_cq *cq_ = nullptr;
};

TEST_F(ExtCqWaitTimeout, NullCqIsInvalid) {
    EXPECT_EQ(rpma_ext_cq_wait_timeout(nullptr, kShortMs), RPMA_E_INVAL);
}

TEST_F(ExtCqWaitTimeout, NothingPostedTimesOutAfterTheTimeout) {
    ExpectTimeoutAfter(kShortMs);
}

TEST_F(ExtCqWaitTimeout, ZeroTimeoutReturnsAtOnceWhenNothingFired) {
    const auto start = Clock::now();
    EXPECT_EQ(rpma_ext_cq_wait_timeout(cq_, 0), RPMA_E_NO_COMPLETION);
    EXPECT_LT(Clock::now() - start, milliseconds(kShortMs));
}

TEST_F(ExtCqWaitTimeout, CompletionEndsTheWaitAndEachWaitIsRearmed) {
    // Each round needs the event of its own completion: the wait re-armed
    // the CQ.
    for (int round = 0; round < 3; ++round) {
        PostWrite();
        bool waited = false;
        ExpectCompletionWithin(kLongMs, &waited);
        if (HasFailure())
            return;
        // A completion that arrived before the first poll (a busy machine
        // lets the progress thread finish the write first) left its event
        // behind: take it, so that the next round waits for its own.
        if (!waited)
            rpma_ext_cq_wait_timeout(cq_, 0);
    }
    // Nothing left: the next wait runs out its time.
    ExpectTimeoutAfter(kShortMs);
}

TEST_F(ExtCqWaitTimeout, BoundedWaitIgnoresONonblock) {
    int fd = -1;
    ASSERT_EQ(rpma_cq_get_fd(cq_, &fd), 0);
    ASSERT_EQ(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK), 0);
    // rpma_cq_wait gives up at once on a non-blocking fd; a bounded wait
    // waits its time.
    EXPECT_EQ(rpma_cq_wait(cq_), RPMA_E_NO_COMPLETION);
    ExpectTimeoutAfter(kShortMs);
    PostWrite();
    ExpectCompletionWithin(kLongMs);
}

TEST_F(ExtCqWaitTimeout, NegativeTimeoutWaitsAsRpmaCqWait) {
    PostWrite();
    ExpectCompletionWithin(-1);
}

// A CQ whose connection shares one channel between its CQs is waited for
// with rpma_conn_wait, as with rpma_cq_wait.
class ExtCqWaitTimeoutSharedChannel : public rpma_test::ConnectedPair {
  protected:
    rpma_conn_cfg *ClientCfg() override {
        EXPECT_EQ(rpma_conn_cfg_new(&cfg_), 0);
        EXPECT_EQ(rpma_conn_cfg_set_compl_channel(cfg_, true), 0);
        return cfg_;
    }
    void TearDown() override {
        ConnectedPair::TearDown();
        EXPECT_EQ(rpma_conn_cfg_delete(&cfg_), 0);
    }
    rpma_conn_cfg *cfg_ = nullptr;
};

TEST_F(ExtCqWaitTimeoutSharedChannel, IsRefused) {
    rpma_cq *cq = nullptr;
    ASSERT_EQ(rpma_conn_get_cq(client_, &cq), 0);
    EXPECT_EQ(rpma_ext_cq_wait_timeout(cq, kShortMs), RPMA_E_SHARED_CHANNEL);
}

}  // namespace
