// Completion queues and channels: ibverbs' notification semantics.
#include <fcntl.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "tests/unit/log_capture.h"
#include "tests/unit/provider/tcp/tcp_test_support.h"

namespace rpma::provider::tcp::testing {
namespace {

class TcpCompletion : public ConnectedPair {
  protected:
    void SetUp() override {
        ConnectedPair::SetUp();
        ASSERT_NO_FATAL_FAILURE(Connect());
        local = std::make_unique<Buffer>(*client_pd, 64, kRemoteAll);
        remote = std::make_unique<Buffer>(*server_pd, 64, kRemoteAll);
    }
    void TearDown() override {
        local.reset();
        remote.reset();
    }

    void SignaledWrite(uint64_t wr_id) {
        ibv_sge sge = local->Sge(0, 8);
        ASSERT_EQ(client.qp().PostSend(
                      SendWr(IBV_WR_RDMA_WRITE, &sge, wr_id, remote->addr(), remote->rkey())),
                  0);
    }

    std::unique_ptr<Buffer> local;
    std::unique_ptr<Buffer> remote;
};

TEST_F(TcpCompletion, ArmedQueueFiresItsChannelOnTheNextCompletion) {
    ASSERT_EQ(client.send.cq->RequestNotify(), 0);
    SignaledWrite(1);
    ASSERT_TRUE(WaitReadable(client.send.channel->Fd()));
    provider::CompletionQueue *fired = nullptr;
    ASSERT_EQ(client.send.channel->GetEvent(&fired), 0);
    EXPECT_EQ(fired, client.send.cq.get());
    client.send.channel->AckEvents(fired, 1);
    ibv_wc wc;
    EXPECT_EQ(client.send.cq->Poll(1, &wc), 1);
    EXPECT_EQ(wc.wr_id, 1u);
}

TEST_F(TcpCompletion, QueueFiresOncePerArming) {
    // Hold the target with a SEND it has no receive for, queue two writes
    // behind it, then release it: one acknowledgement completes all three.
    Buffer server_scratch(*server_pd, 64, kRemoteAll);
    ibv_sge send_sge = local->Sge(0, 8);
    ASSERT_EQ(client.qp().PostSend(SendWr(IBV_WR_SEND, &send_sge, 1)), 0);
    SignaledWrite(2);
    SignaledWrite(3);
    ASSERT_EQ(client.send.cq->RequestNotify(), 0);
    ibv_sge recv_sge = server_scratch.Sge(0, 64);
    ASSERT_EQ(server.qp().PostRecv(RecvWr(&recv_sge, 9)), 0);

    provider::CompletionChannel &channel = *client.send.channel;
    ASSERT_TRUE(WaitReadable(channel.Fd()));
    provider::CompletionQueue *fired = nullptr;
    ASSERT_EQ(channel.GetEvent(&fired), 0);
    channel.AckEvents(fired, 1);
    ibv_wc wc[3];
    int got = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kTimeoutMs);
    while (got < 3 && std::chrono::steady_clock::now() < deadline)
        got += client.send.cq->Poll(3 - got, wc + got);
    ASSERT_EQ(got, 3);
    ASSERT_EQ(fcntl(channel.Fd(), F_SETFL, O_NONBLOCK), 0);
    EXPECT_EQ(channel.GetEvent(&fired), EAGAIN);
}

TEST_F(TcpCompletion, CompletionsQueuedBeforeArmingDoNotFire) {
    // As in ibverbs: arming reports the next new completion only; callers
    // poll after arming to catch what is already there.
    provider::CompletionChannel &channel = *client.send.channel;
    ASSERT_EQ(client.send.cq->RequestNotify(), 0);
    SignaledWrite(1);
    ASSERT_TRUE(WaitReadable(channel.Fd()));
    provider::CompletionQueue *fired = nullptr;
    ASSERT_EQ(channel.GetEvent(&fired), 0);
    channel.AckEvents(fired, 1);

    // Completion 1 is still queued; arming now must not fire.
    ASSERT_EQ(client.send.cq->RequestNotify(), 0);
    ASSERT_EQ(fcntl(channel.Fd(), F_SETFL, O_NONBLOCK), 0);
    EXPECT_EQ(channel.GetEvent(&fired), EAGAIN);

    // A new completion does.
    SignaledWrite(2);
    ASSERT_TRUE(WaitReadable(channel.Fd()));
    ASSERT_EQ(channel.GetEvent(&fired), 0);
    EXPECT_EQ(fired, client.send.cq.get());
    channel.AckEvents(fired, 1);
    ibv_wc wc[2];
    ASSERT_EQ(client.send.cq->Poll(2, wc), 2);
    EXPECT_EQ(wc[0].wr_id, 1u);
    EXPECT_EQ(wc[1].wr_id, 2u);
}

TEST_F(TcpCompletion, TwoQueuesShareOneChannelAndEventsNameTheQueue) {
    std::unique_ptr<provider::CompletionChannel> channel;
    ASSERT_EQ(device().CreateCompletionChannel(&channel), 0);
    std::unique_ptr<provider::CompletionQueue> cq_a;
    std::unique_ptr<provider::CompletionQueue> cq_b;
    ASSERT_EQ(device().CreateCq(8, channel.get(), &cq_a), 0);
    ASSERT_EQ(device().CreateCq(8, channel.get(), &cq_b), 0);

    // A fresh connection whose send CQ is cq_a and receive CQ cq_b.
    Endpoint c;
    Endpoint s;
    ASSERT_EQ(device().Resolve("127.0.0.1", port.c_str(), kTimeoutMs, &c.id), 0);
    QueuePairInit init;
    init.send_cq = cq_a.get();
    init.recv_cq = cq_b.get();
    init.sq_size = 4;
    init.rq_size = 4;
    ASSERT_EQ(c.id->CreateQp(*client_pd, init), 0);
    ASSERT_EQ(c.id->Connect(nullptr, 0, kTimeoutMs), 0);
    ASSERT_TRUE(WaitReadable(listener->Fd()));
    ASSERT_EQ(listener->NextRequest(&s.id), 0);
    s.send.Create(device(), 8);
    s.recv.Create(device(), 8);
    QueuePairInit server_init;
    server_init.send_cq = s.send.cq.get();
    server_init.recv_cq = s.recv.cq.get();
    server_init.sq_size = 4;
    server_init.rq_size = 4;
    ASSERT_EQ(s.id->CreateQp(*server_pd, server_init), 0);
    ASSERT_EQ(s.id->Accept(nullptr, 0), 0);
    ASSERT_EQ(WaitEventType(*c.id), CmEventType::kEstablished);
    ASSERT_EQ(WaitEventType(*s.id), CmEventType::kEstablished);

    Buffer in(*client_pd, 64, kRemoteAll);
    ibv_sge recv_sge = in.Sge(0, 64);
    ASSERT_EQ(c.qp().PostRecv(RecvWr(&recv_sge, 7)), 0);
    ASSERT_EQ(cq_a->RequestNotify(), 0);
    ASSERT_EQ(cq_b->RequestNotify(), 0);

    // The server sends: only cq_b (client's receive CQ) fires.
    Buffer out(*server_pd, 64, kRemoteAll);
    ibv_sge send_sge = out.Sge(0, 4);
    ASSERT_EQ(s.qp().PostSend(SendWr(IBV_WR_SEND, &send_sge, 1)), 0);
    ASSERT_TRUE(WaitReadable(channel->Fd()));
    provider::CompletionQueue *fired = nullptr;
    ASSERT_EQ(channel->GetEvent(&fired), 0);
    EXPECT_EQ(fired, cq_b.get());
    channel->AckEvents(fired, 1);

    // The client writes: cq_a fires.
    ibv_sge write_sge = in.Sge(0, 4);
    ASSERT_EQ(
        c.qp().PostSend(SendWr(IBV_WR_RDMA_WRITE, &write_sge, 2, remote->addr(), remote->rkey())),
        0);
    ASSERT_TRUE(WaitReadable(channel->Fd()));
    ASSERT_EQ(channel->GetEvent(&fired), 0);
    EXPECT_EQ(fired, cq_a.get());
    channel->AckEvents(fired, 1);

    c.id.reset();
    s.id.reset();
}

TEST(TcpCompletionQueue, PollOfEmptyQueueReturnsZeroAndRejectsBadArguments) {
    std::unique_ptr<provider::CompletionQueue> cq;
    ASSERT_EQ(GetDevice().CreateCq(4, nullptr, &cq), 0);
    ibv_wc wc;
    EXPECT_EQ(cq->Poll(1, &wc), 0);
    EXPECT_EQ(cq->Poll(-1, &wc), -EINVAL);
    EXPECT_EQ(cq->Capacity(), 4);
    EXPECT_EQ(cq->RequestNotify(), 0);  // no channel: nothing to fire
    EXPECT_EQ(GetDevice().CreateCq(0, nullptr, &cq), EINVAL);
}

// As ibv_destroy_comp_channel fails with EBUSY while a CQ uses the channel,
// the tcp provider refuses it (logged): the channel stays valid for the CQ,
// which works on and is destroyed cleanly. (It used to free the channel:
// the CQ's destructor then wrote to freed memory.)
TEST(TcpCompletionChannel, DestroyedWhileACqUsesItIsRefusedAndTheCqKeepsIt) {
    rpma_test::LogCapture log;
    CompletionSink sink;
    ASSERT_NO_FATAL_FAILURE(sink.Create(GetDevice(), 4));
    sink.channel.reset();
    EXPECT_TRUE(log.Contains("destroying a completion channel failed: Device or resource busy"))
        << log.Text();
    EXPECT_EQ(sink.cq->RequestNotify(), 0);
    ibv_wc wc;
    EXPECT_EQ(sink.cq->Poll(1, &wc), 0);
    sink.cq.reset();
}

TEST(TcpCompletionChannel, DestroyedAfterItsCqsLogsNothing) {
    rpma_test::LogCapture log;
    CompletionSink sink;
    ASSERT_NO_FATAL_FAILURE(sink.Create(GetDevice(), 4));
    sink.cq.reset();
    sink.channel.reset();
    EXPECT_FALSE(log.Contains("completion channel")) << log.Text();
}

// A completion queue too small for what completes into it: as a verbs QP
// whose CQ overran enters the error state, the connection that lost a
// completion breaks. The application learns it (kConnectError), its posted
// receive is flushed, and a thread waiting on the receive CQ's channel for
// a message that will never come wakes.
class TcpCompletionOverrun : public ConnectedPair {};

TEST_F(TcpCompletionOverrun, LostCompletionBreaksTheConnectionAndWakesAWaiter) {
    PairOptions options;
    options.cq_size = 2;
    ASSERT_NO_FATAL_FAILURE(Connect(options));
    Buffer local(*client_pd, 4096, kRemoteAll);
    Buffer remote(*server_pd, 4096, kRemoteAll);
    ibv_sge receive_sge = local.Sge(1024, 64);
    ASSERT_EQ(client.qp().PostRecv(RecvWr(&receive_sge, 100)), 0);
    ASSERT_EQ(client.recv.cq->RequestNotify(), 0);
    bool woke = false;
    std::thread waiter([&] { woke = WaitReadable(client.recv.channel->Fd()); });

    const int writes = client.send.cq->Capacity() + 2;
    for (int i = 0; i < writes; ++i) {
        ibv_sge sge = local.Sge(0, 8);
        ASSERT_EQ(client.qp().PostSend(SendWr(IBV_WR_RDMA_WRITE, &sge, static_cast<uint64_t>(i),
                                              remote.addr(), remote.rkey())),
                  0);
    }
    EXPECT_EQ(WaitEventType(*client.id), CmEventType::kConnectError);
    waiter.join();
    EXPECT_TRUE(woke);
    const ibv_wc receive = client.recv.WaitOne();
    EXPECT_EQ(receive.wr_id, 100u);
    EXPECT_EQ(receive.status, IBV_WC_WR_FLUSH_ERR);
    // What fitted is there, in order.
    const std::vector<ibv_wc> sent = client.send.Wait(writes, /*timeout_ms=*/0);
    ASSERT_EQ(sent.size(), static_cast<size_t>(client.send.cq->Capacity()));
    EXPECT_EQ(sent[0].wr_id, 0u);
    EXPECT_EQ(sent[0].status, IBV_WC_SUCCESS);
}

}  // namespace
}  // namespace rpma::provider::tcp::testing
