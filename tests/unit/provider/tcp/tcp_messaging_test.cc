// Two-sided operations: SEND, SEND_WITH_IMM, WRITE_WITH_IMM into posted
// receives (private or shared), receiver-not-ready back-pressure and limits.
#include <arpa/inet.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "tests/unit/provider/tcp/tcp_test_support.h"

namespace rpma::provider::tcp::testing {
namespace {

class TcpMessaging : public ConnectedPair {
  protected:
    void SetUp() override {
        ConnectedPair::SetUp();
        ASSERT_NO_FATAL_FAILURE(Connect(Options()));
    }
    virtual PairOptions Options() { return {}; }

    int Send(Buffer &src, size_t offset, uint32_t length, uint64_t wr_id) {
        ibv_sge sge = src.Sge(offset, length);
        return client.qp().PostSend(SendWr(IBV_WR_SEND, &sge, wr_id));
    }
    int Receive(provider::QueuePair &qp, Buffer &dst, size_t offset, uint32_t length,
                uint64_t wr_id) {
        ibv_sge sge = dst.Sge(offset, length);
        return qp.PostRecv(RecvWr(&sge, wr_id));
    }
};

TEST_F(TcpMessaging, SendsFillPostedReceivesInOrder) {
    Buffer out(*client_pd, 4096, kRemoteAll);
    Buffer in(*server_pd, 4096, kRemoteAll);
    for (int i = 0; i < 4; ++i)
        ASSERT_EQ(Receive(server.qp(), in, i * 1024, 1024, 100 + i), 0);
    for (int i = 0; i < 4; ++i) {
        memset(out.data() + i * 1024, 'a' + i, 100 + i);
        ASSERT_EQ(Send(out, i * 1024, 100 + i, i), 0);
    }
    auto recvs = server.recv.Wait(4);
    ASSERT_EQ(recvs.size(), 4u);
    for (int i = 0; i < 4; ++i) {
        EXPECT_EQ(recvs[i].wr_id, 100u + i);
        EXPECT_EQ(recvs[i].status, IBV_WC_SUCCESS);
        EXPECT_EQ(recvs[i].opcode, IBV_WC_RECV);
        EXPECT_EQ(recvs[i].byte_len, 100u + i);
        EXPECT_EQ(recvs[i].wc_flags & IBV_WC_WITH_IMM, 0u);
        EXPECT_EQ(recvs[i].qp_num, server.qp().QpNum());
        EXPECT_EQ(in.data()[i * 1024 + 99 + i], 'a' + i);
        EXPECT_EQ(in.data()[i * 1024 + 100 + i], 0);
    }
    auto sends = client.send.Wait(4);
    ASSERT_EQ(sends.size(), 4u);
    for (int i = 0; i < 4; ++i) {
        EXPECT_EQ(sends[i].wr_id, static_cast<uint64_t>(i));
        EXPECT_EQ(sends[i].opcode, IBV_WC_SEND);
    }
}

class TcpMessagingDeepQueues : public TcpMessaging {
  protected:
    PairOptions Options() override {
        PairOptions options;
        options.sq_size = 1u << 16;
        options.rq_size = 1u << 16;
        options.cq_size = 1 << 16;
        return options;
    }
};

TEST_F(TcpMessagingDeepQueues, SmallSendsBackedUpBehindATargetThatStoppedReadingArriveInOrder) {
    // Small SENDs go out with one send() each, without a queue entry, while
    // the socket takes them; the target stops reading at the first one (no
    // receive posted), so the socket fills and the rest queue up behind a
    // partly sent one. Once receives are posted everything arrives, in order.
    // More than the sending socket's buffer takes (4 MiB at most).
    constexpr int kMessages = 40000;
    constexpr uint32_t kLength = 192;
    Buffer out(*client_pd, kMessages * kLength, kRemoteAll);
    Buffer in(*server_pd, kMessages * kLength, kRemoteAll);
    for (int i = 0; i < kMessages; ++i) {
        memset(out.data() + i * kLength, i % 251, kLength);
        ibv_sge sge = out.Sge(i * kLength, kLength);
        const bool signaled = i % 5000 == 4999;
        ASSERT_EQ(client.qp().PostSend(SendWr(IBV_WR_SEND, &sge, i, 0, 0, signaled)), 0) << i;
    }
    for (int i = 0; i < kMessages; ++i)
        ASSERT_EQ(Receive(server.qp(), in, i * kLength, kLength, i), 0);
    const auto recvs = server.recv.Wait(kMessages);
    ASSERT_EQ(recvs.size(), static_cast<size_t>(kMessages));
    for (int i = 0; i < kMessages; ++i) {
        ASSERT_EQ(recvs[i].wr_id, static_cast<uint64_t>(i));
        ASSERT_EQ(recvs[i].status, IBV_WC_SUCCESS);
        ASSERT_EQ(recvs[i].byte_len, kLength);
    }
    EXPECT_EQ(memcmp(in.data(), out.data(), kMessages * kLength), 0);
    const auto sends = client.send.Wait(kMessages / 5000);
    ASSERT_EQ(sends.size(), static_cast<size_t>(kMessages / 5000));
    for (const ibv_wc &wc : sends)
        EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
}

TEST_F(TcpMessaging, SendWithImmDeliversTheImmediateInNetworkOrder) {
    Buffer out(*client_pd, 64, kRemoteAll);
    Buffer in(*server_pd, 64, kRemoteAll);
    ASSERT_EQ(Receive(server.qp(), in, 0, 64, 1), 0);
    ibv_sge sge = out.Sge(0, 8);
    ibv_send_wr wr = SendWr(IBV_WR_SEND_WITH_IMM, &sge, 2);
    wr.imm_data = htonl(0x12345678);
    ASSERT_EQ(client.qp().PostSend(wr), 0);
    const ibv_wc wc = server.recv.WaitOne();
    EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
    EXPECT_EQ(wc.opcode, IBV_WC_RECV);
    EXPECT_TRUE(wc.wc_flags & IBV_WC_WITH_IMM);
    EXPECT_EQ(ntohl(wc.imm_data), 0x12345678u);
    EXPECT_EQ(wc.byte_len, 8u);
}

TEST_F(TcpMessaging, WriteWithImmLandsDataThenConsumesAReceive) {
    Buffer out(*client_pd, 256, kRemoteAll);
    Buffer target(*server_pd, 256, kRemoteAll);
    Buffer untouched(*server_pd, 64, kRemoteAll);
    memset(out.data(), 0x77, 256);
    ASSERT_EQ(Receive(server.qp(), untouched, 0, 64, 5), 0);
    ibv_sge sge = out.Sge(0, 200);
    ibv_send_wr wr = SendWr(IBV_WR_RDMA_WRITE_WITH_IMM, &sge, 6, target.addr(10), target.rkey());
    wr.imm_data = htonl(0xcafe);
    ASSERT_EQ(client.qp().PostSend(wr), 0);
    const ibv_wc wc = server.recv.WaitOne();
    EXPECT_EQ(wc.wr_id, 5u);
    EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
    EXPECT_EQ(wc.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
    EXPECT_TRUE(wc.wc_flags & IBV_WC_WITH_IMM);
    EXPECT_EQ(ntohl(wc.imm_data), 0xcafeu);
    EXPECT_EQ(wc.byte_len, 200u);
    EXPECT_EQ(target.data()[10], 0x77);
    EXPECT_EQ(target.data()[209], 0x77);
    EXPECT_EQ(target.data()[210], 0);
    EXPECT_EQ(untouched.data()[0], 0);
    const ibv_wc sent = client.send.WaitOne();
    EXPECT_EQ(sent.opcode, IBV_WC_RDMA_WRITE);
    EXPECT_EQ(sent.status, IBV_WC_SUCCESS);
}

TEST_F(TcpMessaging, MessageLargerThanTheReceiveFailsWithLocalLengthError) {
    Buffer out(*client_pd, 256, kRemoteAll);
    Buffer in(*server_pd, 256, kRemoteAll);
    ASSERT_EQ(Receive(server.qp(), in, 0, 16, 1), 0);
    ASSERT_EQ(Receive(server.qp(), in, 16, 16, 2), 0);
    memset(out.data(), 1, 256);
    ASSERT_EQ(Send(out, 0, 17, 3), 0);
    auto recvs = server.recv.Wait(2);
    ASSERT_EQ(recvs.size(), 2u);
    EXPECT_EQ(recvs[0].wr_id, 1u);
    EXPECT_EQ(recvs[0].status, IBV_WC_LOC_LEN_ERR);
    EXPECT_EQ(recvs[1].wr_id, 2u);
    EXPECT_EQ(recvs[1].status, IBV_WC_WR_FLUSH_ERR);
    EXPECT_EQ(client.send.WaitOne().status, IBV_WC_REM_INV_REQ_ERR);
    EXPECT_EQ(in.data()[0], 0);  // nothing overran the buffer
    ExpectBroken();
}

TEST_F(TcpMessaging, SendWaitsForAReceivePostedLater) {
    Buffer out(*client_pd, 64, kRemoteAll);
    Buffer in(*server_pd, 64, kRemoteAll);
    memcpy(out.data(), "late", 4);
    ASSERT_EQ(Send(out, 0, 4, 1), 0);
    ASSERT_EQ(Send(out, 0, 4, 2), 0);
    // Nothing may complete while the target has nowhere to put the data.
    EXPECT_TRUE(client.send.Wait(1, 50).empty());
    ASSERT_EQ(Receive(server.qp(), in, 0, 32, 10), 0);
    ASSERT_EQ(Receive(server.qp(), in, 32, 32, 11), 0);
    auto recvs = server.recv.Wait(2);
    ASSERT_EQ(recvs.size(), 2u);
    EXPECT_EQ(recvs[0].wr_id, 10u);
    EXPECT_EQ(recvs[1].wr_id, 11u);
    EXPECT_EQ(memcmp(in.data(), "late", 4), 0);
    EXPECT_EQ(memcmp(in.data() + 32, "late", 4), 0);
    EXPECT_EQ(client.send.Wait(2).size(), 2u);
}

TEST_F(TcpMessaging, SendThatNeverFindsAReceiveFailsWithRnrRetryExceeded) {
    GetDevice().SetReceiverNotReadyTimeout(std::chrono::milliseconds(100));
    Buffer out(*client_pd, 64, kRemoteAll);
    const auto start = std::chrono::steady_clock::now();
    ASSERT_EQ(Send(out, 0, 8, 1), 0);
    const ibv_wc wc = client.send.WaitOne();
    GetDevice().SetReceiverNotReadyTimeout(Device::kDefaultReceiverNotReadyTimeout);
    EXPECT_EQ(wc.status, IBV_WC_RNR_RETRY_EXC_ERR);
    EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(100));
    ExpectBroken();
}

TEST_F(TcpMessaging, ReceiveQueueFullFailsWithEnomem) {
    Buffer in(*server_pd, 64, kRemoteAll);
    for (int i = 0; i < 16; ++i)
        ASSERT_EQ(Receive(server.qp(), in, 0, 64, i), 0);
    EXPECT_EQ(Receive(server.qp(), in, 0, 64, 16), ENOMEM);
}

TEST_F(TcpMessaging, ReceiveIntoUnregisteredBufferFailsWithLocalProtectionError) {
    Buffer out(*client_pd, 64, kRemoteAll);
    Buffer in(*server_pd, 64, kRemoteAll);
    ibv_sge sge = in.Sge(0, 64);
    sge.lkey ^= 0x4321;
    ASSERT_EQ(server.qp().PostRecv(RecvWr(&sge, 1)), 0);
    ASSERT_EQ(Send(out, 0, 8, 2), 0);
    EXPECT_EQ(server.recv.WaitOne().status, IBV_WC_LOC_PROT_ERR);
    EXPECT_EQ(client.send.WaitOne().status, IBV_WC_REM_OP_ERR);
}

class TcpSharedReceiveQueue : public ConnectedPair {};

TEST_F(TcpSharedReceiveQueue, OneSharedQueueServesTwoQueuePairs) {
    std::unique_ptr<provider::SharedReceiveQueue> srq;
    ASSERT_EQ(server_pd->CreateSrq(8, &srq), 0);
    PairOptions options;
    options.server_srq = srq.get();
    Connect(options);
    // A second connection through the same listener, sharing the SRQ.
    Endpoint client2;
    Endpoint server2;
    ASSERT_NO_FATAL_FAILURE(ConnectAnother(client2, server2, options));

    Buffer in(*server_pd, 128, kRemoteAll);
    Buffer out(*client_pd, 64, kRemoteAll);
    ibv_sge recv0 = in.Sge(0, 64);
    ibv_sge recv1 = in.Sge(64, 64);
    ASSERT_EQ(srq->PostRecv(RecvWr(&recv0, 1)), 0);
    ASSERT_EQ(srq->PostRecv(RecvWr(&recv1, 2)), 0);
    // A QP with an SRQ takes no receives of its own.
    EXPECT_EQ(server.qp().PostRecv(RecvWr(&recv0, 3)), EINVAL);

    memcpy(out.data(), "one", 3);
    memcpy(out.data() + 32, "two", 3);
    ibv_sge first = out.Sge(0, 3);
    ASSERT_EQ(client.qp().PostSend(SendWr(IBV_WR_SEND, &first, 10)), 0);
    const ibv_wc a = server.recv.WaitOne();
    EXPECT_EQ(a.wr_id, 1u);
    EXPECT_EQ(a.qp_num, server.qp().QpNum());
    ibv_sge second = out.Sge(32, 3);
    ASSERT_EQ(client2.qp().PostSend(SendWr(IBV_WR_SEND, &second, 20)), 0);
    const ibv_wc b = server2.recv.WaitOne();
    EXPECT_EQ(b.wr_id, 2u);
    EXPECT_EQ(b.qp_num, server2.qp().QpNum());
    EXPECT_EQ(memcmp(in.data(), "one", 3), 0);
    EXPECT_EQ(memcmp(in.data() + 64, "two", 3), 0);

    // A sender blocked on the empty SRQ resumes when the SRQ gets a receive.
    ASSERT_EQ(client2.qp().PostSend(SendWr(IBV_WR_SEND, &second, 21)), 0);
    EXPECT_TRUE(server2.recv.Wait(1, 50).empty());
    ASSERT_EQ(srq->PostRecv(RecvWr(&recv0, 4)), 0);
    EXPECT_EQ(server2.recv.WaitOne().wr_id, 4u);

    server2.id.reset();
    client2.id.reset();
    client.id.reset();
    server.id.reset();
}

TEST(TcpSharedReceiveQueueLimits, FullSharedQueueFailsWithEnomem) {
    std::unique_ptr<provider::ProtectionDomain> pd;
    ASSERT_EQ(GetDevice().AllocPd(&pd), 0);
    std::unique_ptr<provider::SharedReceiveQueue> srq;
    ASSERT_EQ(pd->CreateSrq(2, &srq), 0);
    Buffer in(*pd, 64, kRemoteAll);
    ibv_sge sge = in.Sge(0, 64);
    EXPECT_EQ(srq->PostRecv(RecvWr(&sge, 1)), 0);
    EXPECT_EQ(srq->PostRecv(RecvWr(&sge, 2)), 0);
    EXPECT_EQ(srq->PostRecv(RecvWr(&sge, 3)), ENOMEM);
    EXPECT_EQ(pd->CreateSrq(0, &srq), EINVAL);
}

}  // namespace
}  // namespace rpma::provider::tcp::testing
