// The order of a tcp completion channel's events: a CQ that fired while a
// thread was waiting inline comes out before a CQ that fires later in that
// thread's own read, as ibv_get_cq_event hands out events in the order the
// CQs fired. (The way rpma_conn_wait once named the receive CQ first: the
// progress thread completed a SEND from its ACK while the application's
// wait was starting, and the wait then read the peer's reply itself.)
#include <sys/syscall.h>

#include <thread>

#include "rpma_core/src/provider/tcp/tcp_completion_queue.h"
#include "tests/support/thread_state.h"
#include "tests/unit/provider/tcp/tcp_test_support.h"

namespace rpma::provider::tcp::testing {
namespace {

// Until thread `tid` blocks in one of the waits of an inline wait: the
// direct read of its only connection, or the epoll set after that read
// timed out.
void UntilWaitingInline(pid_t tid) {
    for (;;) {
        const long call = rpma::testing::BlockedIn(tid);
        if (call == SYS_recvfrom || call == SYS_epoll_wait || call == SYS_epoll_pwait)
            return;
        std::this_thread::yield();
    }
}

class TcpChannelOrder : public ConnectedPair {
  protected:
    void SetUp() override {
        ConnectedPair::SetUp();
        ASSERT_NO_FATAL_FAILURE(Connect());
        // A second CQ on the client's receive channel, fed by no connection:
        // this test completes into it from its own thread, as the progress
        // thread completes into the send CQ of a shared channel.
        ASSERT_EQ(device().CreateCq(8, client.recv.channel.get(), &other), 0);
        message = std::make_unique<Buffer>(*server_pd, 64, kRemoteAll);
        landing = std::make_unique<Buffer>(*client_pd, 64, kRemoteAll);
    }
    void TearDown() override {
        message.reset();
        landing.reset();
        client.id.reset();
        server.id.reset();
        other.reset();
    }

    std::unique_ptr<provider::CompletionQueue> other;
    std::unique_ptr<Buffer> message;
    std::unique_ptr<Buffer> landing;
};

TEST_F(TcpChannelOrder, CqFiredByAnotherThreadDuringAnInlineWaitComesFirst) {
    provider::CompletionChannel &channel = *client.recv.channel;
    ibv_sge recv_sge = landing->Sge(0, 64);
    ASSERT_EQ(client.qp().PostRecv(RecvWr(&recv_sge, 1)), 0);
    ASSERT_EQ(client.recv.cq->RequestNotify(), 0);
    ASSERT_EQ(other->RequestNotify(), 0);

    std::atomic<pid_t> waiter_tid{0};
    provider::CompletionQueue *first = nullptr;
    provider::CompletionQueue *second = nullptr;
    std::thread waiter([&] {
        waiter_tid = rpma::testing::ThreadId();
        if (channel.GetAckedEvent(&first) != 0)
            return;
        channel.GetAckedEvent(&second);
    });
    while (waiter_tid.load() == 0)
        std::this_thread::yield();
    UntilWaitingInline(waiter_tid.load());

    // Fired first, from this thread: queued on the channel.
    ibv_wc wc{};
    wc.wr_id = 7;
    wc.status = IBV_WC_SUCCESS;
    wc.opcode = IBV_WC_RDMA_WRITE;
    ASSERT_TRUE(static_cast<CompletionQueue &>(*other).Push(wc));
    // Then the peer's SEND, which the waiting thread reads and completes
    // into the receive CQ itself.
    ibv_sge send_sge = message->Sge(0, 8);
    ASSERT_EQ(server.qp().PostSend(SendWr(IBV_WR_SEND, &send_sge, 2)), 0);
    waiter.join();

    EXPECT_EQ(first, other.get()) << "the CQ that fired first did not come first";
    EXPECT_EQ(second, client.recv.cq.get());
    EXPECT_EQ(server.send.WaitOne().status, IBV_WC_SUCCESS);
}

}  // namespace
}  // namespace rpma::provider::tcp::testing
