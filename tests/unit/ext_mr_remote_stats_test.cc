// rpma_ext_mr_get_remote_stats: what peers did to a registered region. On
// tcp the counters say exactly what the target applied (refused operations
// count nothing, another region stays at 0); on verbs the NIC applies the
// operations unseen and the call says RPMA_E_NOSUPP.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <ostream>
#include <string>
#include <thread>

#include "connected_pair.h"
#include "librpma.h"
#include "rpma/mr.hpp"
#include "rpma/peer.hpp"
#include "rpma_ext.h"

// Found by argument-dependent lookup: the struct is in the global namespace.
static bool operator==(const rpma_ext_mr_remote_stats &a, const rpma_ext_mr_remote_stats &b) {
    return a.bytes_written == b.bytes_written && a.bytes_read == b.bytes_read &&
           a.flushes == b.flushes && a.bytes_persisted == b.bytes_persisted;
}

static std::ostream &operator<<(std::ostream &out, const rpma_ext_mr_remote_stats &s) {
    return out << "{written " << s.bytes_written << ", read " << s.bytes_read << ", flushes "
               << s.flushes << ", persisted " << s.bytes_persisted << "}";
}

namespace {

constexpr size_t kSize = 16384;

// The server registers `target_` (the client's dst_) and `other_`, which no
// one touches; the client works from `local_`.
class ExtMrRemoteStats : public rpma_test::ConnectedPair {
  protected:
    void SetUp() override {
        ConnectedPair::SetUp();
        if (HasFatalFailure())
            return;
        const int target_usage = RPMA_MR_USAGE_WRITE_DST | RPMA_MR_USAGE_READ_SRC |
                                 RPMA_MR_USAGE_FLUSH_TYPE_VISIBILITY |
                                 RPMA_MR_USAGE_FLUSH_TYPE_PERSISTENT;
        ASSERT_EQ(rpma_mr_reg(peer_, target_.data(), kSize, target_usage, &target_mr_), 0);
        ASSERT_EQ(rpma_mr_reg(peer_, other_.data(), kSize, target_usage, &other_mr_), 0);
        ASSERT_EQ(rpma_mr_reg(peer_, local_.data(), kSize,
                              RPMA_MR_USAGE_WRITE_SRC | RPMA_MR_USAGE_READ_DST, &local_mr_),
                  0);
        uint8_t desc[21];
        ASSERT_EQ(rpma_mr_get_descriptor(target_mr_, desc), 0);
        ASSERT_EQ(rpma_mr_remote_from_descriptor(desc, sizeof(desc), &dst_), 0);
        rpma_peer_cfg *pcfg = nullptr;
        ASSERT_EQ(rpma_peer_cfg_new(&pcfg), 0);
        ASSERT_EQ(rpma_peer_cfg_set_direct_write_to_pmem(pcfg, true), 0);
        ASSERT_EQ(rpma_conn_apply_remote_peer_cfg(client_, pcfg), 0);
        ASSERT_EQ(rpma_peer_cfg_delete(&pcfg), 0);
    }
    void TearDown() override {
        EXPECT_EQ(rpma_mr_remote_delete(&dst_), 0);
        EXPECT_EQ(rpma_mr_dereg(&local_mr_), 0);
        EXPECT_EQ(rpma_mr_dereg(&other_mr_), 0);
        EXPECT_EQ(rpma_mr_dereg(&target_mr_), 0);
        ConnectedPair::TearDown();
    }

    static rpma_ext_mr_remote_stats Stats(const rpma_mr_local *mr) {
        rpma_ext_mr_remote_stats stats{};
        EXPECT_EQ(rpma_ext_mr_get_remote_stats(mr, &stats), 0);
        return stats;
    }
    void ExpectSuccess(ibv_wc_opcode opcode) {
        ibv_wc wc = NextCompletion(client_);
        EXPECT_EQ(wc.status, IBV_WC_SUCCESS) << ibv_wc_status_str(wc.status);
        EXPECT_EQ(wc.opcode, opcode);
    }

    std::array<char, kSize> target_{};
    std::array<char, kSize> other_{};
    std::array<char, kSize> local_{};
    rpma_mr_local *target_mr_ = nullptr;
    rpma_mr_local *other_mr_ = nullptr;
    rpma_mr_local *local_mr_ = nullptr;
    rpma_mr_remote *dst_ = nullptr;
};

TEST_F(ExtMrRemoteStats, NullArgumentsAreInvalid) {
    rpma_ext_mr_remote_stats stats{};
    EXPECT_EQ(rpma_ext_mr_get_remote_stats(nullptr, &stats), RPMA_E_INVAL);
    EXPECT_EQ(rpma_ext_mr_get_remote_stats(target_mr_, nullptr), RPMA_E_INVAL);
}

TEST_F(ExtMrRemoteStats, VerbsCannotSeeThePeersOperations) {
    if (!rpma_test::OnVerbs())
        GTEST_SKIP() << "the tcp provider counts (RPMA_PROVIDER=verbs runs this in the VM tier)";
    rpma_ext_mr_remote_stats stats{1, 2, 3, 4};
    EXPECT_EQ(rpma_ext_mr_get_remote_stats(target_mr_, &stats), RPMA_E_NOSUPP);
    EXPECT_EQ(stats, (rpma_ext_mr_remote_stats{1, 2, 3, 4})) << "untouched on failure";
}

TEST_F(ExtMrRemoteStats, StartAtZeroAtRegistration) {
    if (rpma_test::OnVerbs())
        GTEST_SKIP() << "verbs cannot count";
    EXPECT_EQ(Stats(target_mr_), (rpma_ext_mr_remote_stats{0, 0, 0, 0}));
}

TEST_F(ExtMrRemoteStats, CountExactlyWhatPeersWroteReadAndPersisted) {
    if (rpma_test::OnVerbs())
        GTEST_SKIP() << "verbs cannot count";
    // WRITE_WITH_IMM needs a receive at the target; its payload lands in
    // the region all the same.
    ASSERT_EQ(rpma_recv(server_, nullptr, 0, 0, nullptr), 0);
    const int always = RPMA_F_COMPLETION_ALWAYS;
    ASSERT_EQ(rpma_write(client_, dst_, 0, local_mr_, 0, 4096, always, nullptr), 0);
    ExpectSuccess(IBV_WC_RDMA_WRITE);
    ASSERT_EQ(rpma_write(client_, dst_, 5000, local_mr_, 0, 100, always, nullptr), 0);
    ExpectSuccess(IBV_WC_RDMA_WRITE);
    ASSERT_EQ(rpma_write_with_imm(client_, dst_, 6000, local_mr_, 0, 300, always, 7, nullptr), 0);
    ExpectSuccess(IBV_WC_RDMA_WRITE);
    EXPECT_EQ(NextCompletion(server_).opcode, IBV_WC_RECV_RDMA_WITH_IMM);
    const char word[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    ASSERT_EQ(rpma_atomic_write(client_, dst_, 8192, word, always, nullptr), 0);
    ExpectSuccess(IBV_WC_RDMA_WRITE);
    ASSERT_EQ(rpma_flush(client_, dst_, 0, 4096, RPMA_FLUSH_TYPE_PERSISTENT, always, nullptr), 0);
    ExpectSuccess(IBV_WC_RDMA_READ);
    ASSERT_EQ(rpma_flush(client_, dst_, 5000, 1400, RPMA_FLUSH_TYPE_PERSISTENT, always, nullptr),
              0);
    ExpectSuccess(IBV_WC_RDMA_READ);
    // A visibility flush persists nothing.
    ASSERT_EQ(rpma_flush(client_, dst_, 0, 64, RPMA_FLUSH_TYPE_VISIBILITY, always, nullptr), 0);
    ExpectSuccess(IBV_WC_RDMA_READ);
    ASSERT_EQ(rpma_read(client_, local_mr_, 0, dst_, 100, 1000, always, nullptr), 0);
    ExpectSuccess(IBV_WC_RDMA_READ);

    EXPECT_EQ(Stats(target_mr_),
              (rpma_ext_mr_remote_stats{4096 + 100 + 300 + 8, 1000, 2, 4096 + 1400}));
    EXPECT_EQ(Stats(other_mr_), (rpma_ext_mr_remote_stats{0, 0, 0, 0}));
    EXPECT_EQ(Stats(local_mr_), (rpma_ext_mr_remote_stats{0, 0, 0, 0}))
        << "the initiator's own source and destination are not the peers' doing";
}

TEST_F(ExtMrRemoteStats, RefusedWriteCountsNothing) {
    if (rpma_test::OnVerbs())
        GTEST_SKIP() << "verbs cannot count";
    const int always = RPMA_F_COMPLETION_ALWAYS;
    ASSERT_EQ(rpma_write(client_, dst_, 0, local_mr_, 0, 64, always, nullptr), 0);
    ExpectSuccess(IBV_WC_RDMA_WRITE);
    // Straddles the region's end: the target refuses it whole.
    ASSERT_EQ(rpma_write(client_, dst_, kSize - 8, local_mr_, 0, 16, always, nullptr), 0);
    ibv_wc wc = NextCompletion(client_);
    EXPECT_EQ(wc.status, IBV_WC_REM_ACCESS_ERR) << ibv_wc_status_str(wc.status);
    EXPECT_EQ(Stats(target_mr_), (rpma_ext_mr_remote_stats{64, 0, 0, 0}));
    // The refusal broke the connection (as an RC QP's error state does).
    ASSERT_EQ(rpma_conn_delete(&client_), 0);
    ASSERT_EQ(rpma_conn_delete(&server_), 0);
}

TEST_F(ExtMrRemoteStats, WriteToARegionWithoutRemoteWriteCountsNothing) {
    if (rpma_test::OnVerbs())
        GTEST_SKIP() << "verbs cannot count";
    std::array<char, 64> readonly{};
    rpma_mr_local *readonly_mr = nullptr;
    ASSERT_EQ(
        rpma_mr_reg(peer_, readonly.data(), readonly.size(), RPMA_MR_USAGE_READ_SRC, &readonly_mr),
        0);
    uint8_t desc[21];
    ASSERT_EQ(rpma_mr_get_descriptor(readonly_mr, desc), 0);
    rpma_mr_remote *readonly_dst = nullptr;
    ASSERT_EQ(rpma_mr_remote_from_descriptor(desc, sizeof(desc), &readonly_dst), 0);
    ASSERT_EQ(
        rpma_write(client_, readonly_dst, 0, local_mr_, 0, 8, RPMA_F_COMPLETION_ALWAYS, nullptr),
        0);
    ibv_wc wc = NextCompletion(client_);
    EXPECT_EQ(wc.status, IBV_WC_REM_ACCESS_ERR) << ibv_wc_status_str(wc.status);
    EXPECT_EQ(Stats(readonly_mr), (rpma_ext_mr_remote_stats{0, 0, 0, 0}));
    ASSERT_EQ(rpma_conn_delete(&client_), 0);
    ASSERT_EQ(rpma_conn_delete(&server_), 0);
    EXPECT_EQ(rpma_mr_remote_delete(&readonly_dst), 0);
    EXPECT_EQ(rpma_mr_dereg(&readonly_mr), 0);
}

// Two connections write into one region at once: no count is lost.
TEST_F(ExtMrRemoteStats, ConcurrentConnectionsAllCount) {
    if (rpma_test::OnVerbs())
        GTEST_SKIP() << "verbs cannot count";
    // A second client connection, through the same endpoint.
    // The fixture does not keep its endpoint's port: a second endpoint.
    const std::string port = rpma_test::FreePort();
    rpma_conn_req *outgoing = nullptr;
    rpma_ep *ep = nullptr;
    ASSERT_EQ(rpma_ep_listen(peer_, rpma_test::TestAddr(), port.c_str(), &ep), 0);
    ASSERT_EQ(rpma_conn_req_new(peer_, rpma_test::TestAddr(), port.c_str(), nullptr, &outgoing), 0);
    rpma_conn *client2 = nullptr;
    ASSERT_EQ(rpma_conn_req_connect(&outgoing, nullptr, &client2), 0);
    rpma_conn_req *incoming = nullptr;
    ASSERT_EQ(rpma_ep_next_conn_req(ep, nullptr, &incoming), 0);
    rpma_conn *server2 = nullptr;
    ASSERT_EQ(rpma_conn_req_connect(&incoming, nullptr, &server2), 0);
    rpma_test::ExpectEvent(client2, RPMA_CONN_ESTABLISHED);
    rpma_test::ExpectEvent(server2, RPMA_CONN_ESTABLISHED);

    constexpr int kWrites = 2000;
    constexpr size_t kLength = 64;
    auto writer = [&](rpma_conn *conn, size_t offset) {
        for (int i = 0; i < kWrites; ++i) {
            // Unsignaled writes hold send queue slots until a later signaled
            // one completes (the default queue holds 10): every 4th is
            // signaled, the last one too.
            const bool signaled = i % 4 == 3 || i + 1 == kWrites;
            const int flags = signaled ? RPMA_F_COMPLETION_ALWAYS : RPMA_F_COMPLETION_ON_ERROR;
            ASSERT_EQ(rpma_write(conn, dst_, offset, local_mr_, 0, kLength, flags, nullptr), 0);
            if (signaled) {
                ibv_wc wc = rpma_test::NextCompletion(conn);
                ASSERT_EQ(wc.status, IBV_WC_SUCCESS) << ibv_wc_status_str(wc.status);
            }
        }
    };
    std::thread first(writer, client_, 0);
    std::thread second(writer, client2, 8192);
    first.join();
    second.join();
    EXPECT_EQ(Stats(target_mr_).bytes_written, 2 * kWrites * kLength);

    rpma_test::Disconnect(client2, server2);
    EXPECT_EQ(rpma_conn_delete(&client2), 0);
    EXPECT_EQ(rpma_conn_delete(&server2), 0);
    EXPECT_EQ(rpma_ep_shutdown(&ep), 0);
}

// rpma::MemoryRegion::RemoteStats: the same counters, or the C call's error.
TEST(ExtMrRemoteStatsCpp, RemoteStatsWrapsTheCCall) {
    rpma::Result<rpma::Peer> peer =
        rpma::Peer::ForAddress(rpma_test::TestAddr(), RPMA_UTIL_IBV_CONTEXT_LOCAL);
    ASSERT_TRUE(peer.ok()) << peer.error().message();
    std::array<std::byte, 64> bytes{};
    rpma::Result<rpma::MemoryRegion> mr =
        rpma::MemoryRegion::Register(*peer, bytes, RPMA_MR_USAGE_WRITE_DST);
    ASSERT_TRUE(mr.ok()) << mr.error().message();
    rpma::Result<rpma_ext_mr_remote_stats> stats = mr->RemoteStats();
    if (rpma_test::OnVerbs()) {
        ASSERT_FALSE(stats.ok());
        EXPECT_EQ(stats.error().code(), RPMA_E_NOSUPP);
        EXPECT_NE(stats.error().message().find("rpma_ext_mr_get_remote_stats"), std::string::npos);
    } else {
        ASSERT_TRUE(stats.ok()) << stats.error().message();
        EXPECT_EQ(*stats, (rpma_ext_mr_remote_stats{0, 0, 0, 0}));
    }
    rpma::Result<rpma_ext_mr_remote_stats> empty = rpma::MemoryRegion().RemoteStats();
    ASSERT_FALSE(empty.ok());
    EXPECT_EQ(empty.error().code(), RPMA_E_INVAL);
}

}  // namespace
