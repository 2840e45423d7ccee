// Inline progress: application threads that wait (blocking GetEvent) or
// busy-poll (Poll on an empty CQ) drive the inbound side of the connections
// feeding their CQs themselves; the progress thread keeps serving whatever
// nobody waits on. Several tests stall the progress thread to show that the
// waiting thread alone completes the work. The InlineProgress tests at the
// end check the role alone (no connection; a socket pair for the direct
// read): the waiters' mutes and the lease, the lock released across the
// direct recv, and a socket released under that recv closed by its reader.
#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <future>
#include <mutex>
#include <thread>

#include "rpma_core/src/provider/tcp/tcp_cm_id.h"
#include "rpma_core/src/provider/tcp/tcp_connection.h"
#include "rpma_core/src/provider/tcp/tcp_inline_progress.h"
#include "rpma_core/src/provider/tcp/tcp_signaling_queue.h"
#include "tests/unit/provider/tcp/tcp_socket_pair.h"
#include "tests/unit/provider/tcp/tcp_test_support.h"

namespace rpma::provider::tcp::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

// Aborts the test binary when a blocking call the test makes never returns
// (a hang would otherwise only show as a timeout of the whole target).
class Watchdog {
  public:
    explicit Watchdog(const char *what, int timeout_ms = kTimeoutMs)
        : thread_([this, what, timeout_ms] {
              std::unique_lock lock(mu_);
              if (!cv_.wait_for(lock, milliseconds(timeout_ms), [this] { return done_; })) {
                  fprintf(stderr, "watchdog: %s did not return within %d ms\n", what, timeout_ms);
                  abort();
              }
          }) {}
    ~Watchdog() {
        {
            std::lock_guard lock(mu_);
            done_ = true;
        }
        cv_.notify_all();
        thread_.join();
    }

  private:
    std::mutex mu_;
    std::condition_variable cv_;
    bool done_ = false;
    std::thread thread_;
};

// Holds the progress thread inside a task until destroyed.
class StalledProgressThread {
  public:
    StalledProgressThread() : state_(std::make_shared<State>()) {
        GetDevice().Engine().Post([state = state_] {
            std::unique_lock lock(state->mu);
            state->stalled = true;
            state->cv.notify_all();
            state->cv.wait(lock, [&] { return state->released; });
        });
        std::unique_lock lock(state_->mu);
        EXPECT_TRUE(state_->cv.wait_for(lock, milliseconds(kTimeoutMs),
                                        [this] { return state_->stalled; }));
    }
    ~StalledProgressThread() {
        std::lock_guard lock(state_->mu);
        state_->released = true;
        state_->cv.notify_all();
    }

  private:
    struct State {
        std::mutex mu;
        std::condition_variable cv;
        bool stalled = false;
        bool released = false;
    };
    std::shared_ptr<State> state_;
};

// Restores the device's inline linger when a test changed it.
class LingerGuard {
  public:
    explicit LingerGuard(std::chrono::microseconds linger) : saved_(GetDevice().InlineLinger()) {
        GetDevice().SetInlineLinger(linger);
    }
    ~LingerGuard() { GetDevice().SetInlineLinger(saved_); }

  private:
    std::chrono::microseconds saved_;
};

// Arms the CQ and blocks in GetEvent (inline progress) until it fired; then
// polls one completion. With the progress thread stalled nothing can complete
// before the wait, so it skips the poll after arming that verbs callers need
// (a Poll of an empty CQ drives progress too) and the completion is produced
// inside GetEvent.
ibv_wc BlockingWaitOne(CompletionSink &sink, const char *what, bool stalled = false) {
    ibv_wc wc{};
    wc.status = IBV_WC_GENERAL_ERR;
    Watchdog watchdog(what);
    for (;;) {
        if (sink.cq->RequestNotify() != 0)
            return wc;
        if (!stalled && sink.cq->Poll(1, &wc) == 1)
            return wc;
        provider::CompletionQueue *fired = nullptr;
        const int err = sink.channel->GetEvent(&fired);
        EXPECT_EQ(err, 0) << what;
        if (err != 0)
            return wc;
        EXPECT_EQ(fired, sink.cq.get()) << what;
        sink.channel->AckEvents(fired, 1);
        if (sink.cq->Poll(1, &wc) == 1)
            return wc;
    }
}

bool ChannelReadableNow(CompletionSink &sink) {
    pollfd pfd{sink.channel->Fd(), POLLIN, 0};
    return poll(&pfd, 1, 0) == 1;
}

class TcpInlineProgress : public ConnectedPair {
  protected:
    void SetUp() override {
        ConnectedPair::SetUp();
        ASSERT_NO_FATAL_FAILURE(Connect(Options()));
        local = std::make_unique<Buffer>(*client_pd, 8192, kRemoteAll);
        remote = std::make_unique<Buffer>(*server_pd, 8192, kRemoteAll);
    }
    void TearDown() override {
        local.reset();
        remote.reset();
    }
    virtual PairOptions Options() { return {}; }

    void PostWrite(uint64_t wr_id, size_t offset, uint32_t length, bool signaled = true) {
        ibv_sge sge = local->Sge(offset, length);
        ASSERT_EQ(client.qp().PostSend(SendWr(IBV_WR_RDMA_WRITE, &sge, wr_id, remote->addr(offset),
                                              remote->rkey(), signaled)),
                  0);
    }
    void PostSend(Endpoint &from, Buffer &buffer, size_t offset, uint32_t length, uint64_t wr_id,
                  bool signaled = true) {
        ibv_sge sge = buffer.Sge(offset, length);
        ASSERT_EQ(from.qp().PostSend(SendWr(IBV_WR_SEND, &sge, wr_id, 0, 0, signaled)), 0);
    }
    void PostRecv(Endpoint &to, Buffer &buffer, size_t offset, uint32_t length, uint64_t wr_id) {
        ibv_sge sge = buffer.Sge(offset, length);
        ASSERT_EQ(to.qp().PostRecv(RecvWr(&sge, wr_id)), 0);
    }

    std::unique_ptr<Buffer> local;
    std::unique_ptr<Buffer> remote;
};

TEST_F(TcpInlineProgress, BlockedWaitersCompleteARoundTripWithTheProgressThreadStalled) {
    // Nobody but the two waiting threads can read a socket: the server's
    // waiter receives the message and acknowledges it, the client's waiter
    // reads the acknowledgement.
    memset(local->data(), 'x', 100);
    PostRecv(server, *remote, 0, 4096, 7);
    StalledProgressThread stalled;
    auto server_side = std::async(std::launch::async, [this] {
        return BlockingWaitOne(server.recv, "the server's inline wait", /*stalled=*/true);
    });
    PostSend(client, *local, 0, 100, 1);
    const ibv_wc sent = BlockingWaitOne(client.send, "the client's inline wait", /*stalled=*/true);
    const ibv_wc received = server_side.get();
    EXPECT_EQ(sent.status, IBV_WC_SUCCESS);
    EXPECT_EQ(sent.wr_id, 1u);
    EXPECT_EQ(sent.opcode, IBV_WC_SEND);
    EXPECT_EQ(received.status, IBV_WC_SUCCESS);
    EXPECT_EQ(received.wr_id, 7u);
    EXPECT_EQ(received.byte_len, 100u);
    EXPECT_EQ(remote->data()[99], 'x');
}

// An event that fired before the waiter muted the socket (the progress
// thread read it after the waiter last looked at the channel) ends the
// direct wait before its recv, which would sit out a timeout the kernel
// rounds up to several milliseconds (the 3-replica p99 at a 2 ms round
// trip, client/BENCH.md).
TEST_F(TcpInlineProgress, ADirectWaitWithAnEventAlreadyFiredDoesNotRead) {
    Connection &connection = static_cast<CmId &>(*client.id).connection();
    SignalingQueue<CompletionQueue *> events;
    ASSERT_TRUE(events.Valid());
    events.Push(nullptr);
    bool muted = false;
    CompletionQueue *caught = nullptr;
    EXPECT_EQ(connection.WaitDirect(&muted, &caught, events), Connection::DirectRead::kRead);
    connection.EndInlineWait(&muted);
    EXPECT_FALSE(muted);
    // Without one, the same wait reads the idle socket until it times out.
    CompletionQueue *taken = nullptr;
    ASSERT_EQ(events.Pop(&taken), 0);
    EXPECT_EQ(connection.WaitDirect(&muted, &caught, events), Connection::DirectRead::kTimedOut);
    connection.EndInlineWait(&muted);
    EXPECT_FALSE(muted);
}

TEST_F(TcpInlineProgress, WaiterAlsoServesOneSidedRequestsOnItsConnection) {
    // The server thread waits for a message; meanwhile the client writes and
    // flushes into its memory. With the progress thread stalled, the waiter
    // is the one applying the write and answering the flush.
    PostRecv(server, *remote, 4096, 64, 9);
    StalledProgressThread stalled;
    auto server_side = std::async(std::launch::async, [this] {
        return BlockingWaitOne(server.recv, "the server's inline wait", /*stalled=*/true);
    });
    memset(local->data(), 'w', 4096);
    PostWrite(1, 0, 4096, /*signaled=*/false);
    ASSERT_EQ(client.qp().PostFlush(remote->addr(), remote->rkey(), 4096, FlushType::kPersistent,
                                    /*signaled=*/true, 2),
              0);
    const ibv_wc flushed =
        BlockingWaitOne(client.send, "the client's inline wait", /*stalled=*/true);
    EXPECT_EQ(flushed.status, IBV_WC_SUCCESS);
    EXPECT_EQ(flushed.wr_id, 2u);
    EXPECT_EQ(flushed.opcode, IBV_WC_RDMA_READ);  // as librpma's flush reports it
    EXPECT_EQ(remote->data()[4095], 'w');
    // Release the server's waiter. Signaled: an unsignaled request posted
    // right after an inline wait may wait for the next doorbell, whose
    // deadline the stalled progress thread could not run.
    PostSend(client, *local, 0, 8, 3, /*signaled=*/true);
    const ibv_wc received = server_side.get();
    EXPECT_EQ(received.status, IBV_WC_SUCCESS);
    EXPECT_EQ(received.wr_id, 9u);
}

class TcpInlineProgressLinger : public TcpInlineProgress,
                                public ::testing::WithParamInterface<int> {
  protected:
    std::chrono::microseconds Linger() const { return std::chrono::microseconds(GetParam()); }
};

TEST_P(TcpInlineProgressLinger, TwoWaitersOnTheCqsOfOneConnectionShareTheSocket) {
    LingerGuard linger(Linger());
    // The client's send and receive CQs have channels of their own: one
    // thread waits on each, both mute the same socket.
    PostRecv(client, *local, 4096, 64, 20);
    std::atomic<bool> receiver_done{false};
    auto receiver = std::async(std::launch::async, [&] {
        ibv_wc wc = BlockingWaitOne(client.recv, "the receive waiter");
        receiver_done = true;
        return wc;
    });
    auto sender = std::async(std::launch::async,
                             [&] { return BlockingWaitOne(client.send, "the send waiter"); });
    std::this_thread::sleep_for(milliseconds(20));  // let both reach poll()
    // A message for the receive waiter: whichever waiter reads the socket,
    // the receive waiter gets it and the send waiter keeps waiting.
    Buffer server_buffer(*server_pd, 64, kRemoteAll);
    memset(server_buffer.data(), 's', 64);
    PostSend(server, server_buffer, 0, 64, 30, /*signaled=*/false);
    const ibv_wc received = receiver.get();
    EXPECT_TRUE(receiver_done);
    EXPECT_EQ(received.status, IBV_WC_SUCCESS);
    EXPECT_EQ(received.wr_id, 20u);
    EXPECT_EQ(local->data()[4096 + 63], 's');
    EXPECT_EQ(sender.wait_for(milliseconds(0)), std::future_status::timeout);
    // Now the send waiter's own completion; it still mutes the socket alone.
    PostWrite(21, 0, 8);
    const ibv_wc written = sender.get();
    EXPECT_EQ(written.status, IBV_WC_SUCCESS);
    EXPECT_EQ(written.wr_id, 21u);
    // Both gone: the progress thread serves the socket again (at once, or
    // once the linger ran out). Nobody waits inline for this one.
    PostRecv(client, *local, 4096, 64, 22);
    ASSERT_EQ(client.recv.cq->RequestNotify(), 0);
    PostSend(server, server_buffer, 0, 64, 31, /*signaled=*/false);
    const auto start = steady_clock::now();
    ASSERT_TRUE(WaitReadable(client.recv.channel->Fd()));
    EXPECT_LT(steady_clock::now() - start, milliseconds(1000));
    const ibv_wc again = client.recv.WaitOne();
    EXPECT_EQ(again.wr_id, 22u);
    EXPECT_EQ(again.status, IBV_WC_SUCCESS);
}

TEST_P(TcpInlineProgressLinger, ProgressThreadServesATargetWhoseAppIsBlockedElsewhere) {
    LingerGuard linger(Linger());
    // The server application waited inline once (so its connection was
    // muted, and lingers), then blocks in an unrelated call. One-sided work
    // aimed at it must still be applied, by the progress thread.
    PostRecv(server, *remote, 4096, 64, 40);
    int pipe_fds[2];
    ASSERT_EQ(pipe(pipe_fds), 0);
    auto server_app = std::async(std::launch::async, [&] {
        ibv_wc wc = BlockingWaitOne(server.recv, "the server's inline wait");
        char byte;
        [[maybe_unused]] ssize_t got = read(pipe_fds[0], &byte, 1);  // the unrelated call
        return wc;
    });
    std::this_thread::sleep_for(milliseconds(20));  // the server waits in GetEvent
    PostSend(client, *local, 0, 8, 41, /*signaled=*/false);
    std::this_thread::sleep_for(milliseconds(20));  // the server is in read() now
    for (int round = 0; round < 3; ++round) {
        memset(local->data(), 'a' + round, 4096);
        PostWrite(42, 0, 4096, /*signaled=*/false);
        ASSERT_EQ(client.qp().PostFlush(remote->addr(), remote->rkey(), 4096,
                                        FlushType::kPersistent, /*signaled=*/true, 43),
                  0);
        const ibv_wc flushed = BlockingWaitOne(client.send, "the client's wait for the flush");
        EXPECT_EQ(flushed.status, IBV_WC_SUCCESS);
        EXPECT_EQ(flushed.wr_id, 43u);
        // A READ of what was written comes back from the same blocked target.
        ibv_sge sge = local->Sge(4096, 4096);
        ASSERT_EQ(client.qp().PostSend(
                      SendWr(IBV_WR_RDMA_READ, &sge, 44, remote->addr(), remote->rkey())),
                  0);
        const ibv_wc read = BlockingWaitOne(client.send, "the client's wait for the read");
        EXPECT_EQ(read.status, IBV_WC_SUCCESS);
        EXPECT_EQ(read.wr_id, 44u);
        EXPECT_EQ(local->data()[4096 + 4095], 'a' + round);
    }
    ASSERT_EQ(write(pipe_fds[1], "x", 1), 1);
    EXPECT_EQ(server_app.get().wr_id, 40u);
    close(pipe_fds[0]);
    close(pipe_fds[1]);
}

TEST_P(TcpInlineProgressLinger, UnsignaledRequestAfterAWaitIsSentWithoutAnotherCall) {
    LingerGuard linger(Linger());
    // An inline wait, then one small unsignaled request and nothing else
    // from the client: it may wait for a doorbell only for the linger.
    PostWrite(50, 0, 8);
    EXPECT_EQ(BlockingWaitOne(client.send, "the client's inline wait").status, IBV_WC_SUCCESS);
    PostRecv(server, *remote, 4096, 64, 51);
    ASSERT_EQ(server.recv.cq->RequestNotify(), 0);
    ibv_sge sge = local->Sge(0, 16);
    ibv_send_wr wr = SendWr(IBV_WR_RDMA_WRITE_WITH_IMM, &sge, 52, remote->addr(), remote->rkey(),
                            /*signaled=*/false);
    wr.imm_data = htonl(0x1234);
    ASSERT_EQ(client.qp().PostSend(wr), 0);
    const auto start = steady_clock::now();
    ASSERT_TRUE(WaitReadable(server.recv.channel->Fd()));
    EXPECT_LT(steady_clock::now() - start, milliseconds(1000));
    const ibv_wc received = server.recv.WaitOne();
    EXPECT_EQ(received.wr_id, 51u);
    EXPECT_EQ(received.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
    EXPECT_EQ(received.imm_data, htonl(0x1234));
}

TEST_P(TcpInlineProgressLinger, PeerVanishingDuringTheLingerIsNoticedWithoutAnotherCall) {
    LingerGuard linger(Linger());
    // After an inline wait the socket belongs to the application's thread
    // for the linger, out of the progress thread's epoll set; a peer that
    // vanishes then is found once the linger ends, with nobody waiting.
    PostWrite(120, 0, 8);
    EXPECT_EQ(BlockingWaitOne(client.send, "the client's inline wait").status, IBV_WC_SUCCESS);
    PostRecv(client, *local, 1024, 64, 121);
    server.id.reset();  // no disconnect: the socket just closes
    EXPECT_EQ(WaitEventType(*client.id), CmEventType::kConnectError);
    const ibv_wc flushed = client.recv.WaitOne();
    EXPECT_EQ(flushed.wr_id, 121u);
    EXPECT_EQ(flushed.status, IBV_WC_WR_FLUSH_ERR);
}

// Off, the default, and far longer than any of these tests' steps.
INSTANTIATE_TEST_SUITE_P(Linger, TcpInlineProgressLinger,
                         ::testing::Values(0,
                                           static_cast<int>(Device::kDefaultInlineLinger.count()),
                                           50000),
                         [](const ::testing::TestParamInfo<int> &info) {
                             return "linger_" + std::to_string(info.param) + "us";
                         });

TEST_F(TcpInlineProgress, BusyPollerCompletesWorkItselfAndLeavesTheCqArmed) {
    // One thread polls both ends' CQs and nothing else runs: the polls make
    // all the progress. A completion a poll returns does not fire the
    // channel; the CQ stays armed for the next one.
    ASSERT_EQ(client.send.cq->RequestNotify(), 0);
    {
        StalledProgressThread stalled;
        memset(local->data(), 'p', 64);
        PostWrite(60, 0, 64);
        ibv_wc wc{};
        const auto deadline = steady_clock::now() + milliseconds(kTimeoutMs);
        int got = 0;
        while (got == 0 && steady_clock::now() < deadline) {
            got = client.send.cq->Poll(1, &wc);
            ASSERT_GE(got, 0);
            ibv_wc server_wc;
            ASSERT_EQ(server.send.cq->Poll(1, &server_wc), 0);  // drives the target
        }
        ASSERT_EQ(got, 1);
        EXPECT_EQ(wc.wr_id, 60u);
        EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
        EXPECT_EQ(remote->data()[63], 'p');
        EXPECT_FALSE(ChannelReadableNow(client.send));
    }
    // Still armed: the next completion (progress thread, nobody polling)
    // fires the channel.
    PostWrite(61, 0, 64);
    ASSERT_TRUE(WaitReadable(client.send.channel->Fd()));
    EXPECT_EQ(client.send.WaitOne().wr_id, 61u);
}

TEST_F(TcpInlineProgress, BusyPollThatLeavesCompletionsBehindFiresTheChannel) {
    // A poll returns one of two completions it made: the other is left in an
    // armed CQ, so the channel fires for it (a thread waiting on the channel
    // must not sleep while it sits there).
    ASSERT_EQ(client.send.cq->RequestNotify(), 0);
    StalledProgressThread stalled;
    memset(local->data(), 'a', 8);
    memset(local->data() + 8, 'b', 8);
    PostWrite(70, 0, 8);
    PostWrite(71, 8, 8);
    // Drive the target by polling its CQ until both writes landed (this
    // thread applies them itself, so it may look at the memory).
    const auto deadline = steady_clock::now() + milliseconds(kTimeoutMs);
    while ((remote->data()[0] != 'a' || remote->data()[8] != 'b') &&
           steady_clock::now() < deadline) {
        ibv_wc none;
        ASSERT_EQ(server.send.cq->Poll(1, &none), 0);
    }
    ASSERT_EQ(remote->data()[8], 'b');
    ibv_wc wc{};
    int got = 0;
    while (got == 0 && steady_clock::now() < deadline)
        got = client.send.cq->Poll(1, &wc);
    ASSERT_EQ(got, 1);
    EXPECT_EQ(wc.wr_id, 70u);
    EXPECT_TRUE(ChannelReadableNow(client.send));
    ASSERT_EQ(client.send.cq->Poll(1, &wc), 1);
    EXPECT_EQ(wc.wr_id, 71u);
    provider::CompletionQueue *fired = nullptr;
    ASSERT_EQ(client.send.channel->GetEvent(&fired), 0);
    EXPECT_EQ(fired, client.send.cq.get());
    client.send.channel->AckEvents(fired, 1);
}

TEST_F(TcpInlineProgress, BusyPollerNeverBlocksNorStarvesTheProgressThread) {
    // A thread spins on an empty CQ of the connection while request/response
    // traffic on the same connection is completed through the channel fd,
    // i.e. by whoever gets the socket first; everything completes and no
    // Poll call takes long.
    std::atomic<bool> stop{false};
    std::atomic<int64_t> longest_poll_us{0};
    Buffer server_buffer(*server_pd, 64, kRemoteAll);
    auto spinner = std::async(std::launch::async, [&] {
        while (!stop) {
            ibv_wc wc;
            const auto start = steady_clock::now();
            const int got = client.recv.cq->Poll(1, &wc);
            const auto took =
                std::chrono::duration_cast<std::chrono::microseconds>(steady_clock::now() - start)
                    .count();
            if (took > longest_poll_us)
                longest_poll_us = took;
            if (got != 0)
                return got;  // nothing is ever received by the client
        }
        return 0;
    });
    constexpr int kRounds = 300;
    for (int i = 0; i < kRounds; ++i) {
        PostRecv(server, *remote, 4096, 64, 1000 + i);
        PostSend(client, *local, 0, 32, i, /*signaled=*/true);
        const ibv_wc received = server.recv.WaitOne();
        ASSERT_EQ(received.status, IBV_WC_SUCCESS);
        ASSERT_EQ(received.wr_id, static_cast<uint64_t>(1000 + i));
        const ibv_wc sent = client.send.WaitOne();
        ASSERT_EQ(sent.status, IBV_WC_SUCCESS);
        ASSERT_EQ(sent.wr_id, static_cast<uint64_t>(i));
    }
    stop = true;
    EXPECT_EQ(spinner.get(), 0);
    // Generous: a poll is a try-lock and a non-blocking read.
    EXPECT_LT(longest_poll_us.load(), 500000);
}

// A thread waiting on a single connection sleeps in a blocking recv on its
// socket (ReadInboundBlocking), without the connection's lock. Another
// thread that ends the connection meanwhile must wake it and hand it its
// completions, whichever of the two gets there first.
TEST_F(TcpInlineProgress, WaiterInABlockingReadWakesWhenAnotherThreadDisconnects) {
    PostRecv(server, *remote, 0, 64, 80);
    auto server_side = std::async(std::launch::async, [this] {
        return BlockingWaitOne(server.recv, "the server's inline wait");
    });
    ASSERT_EQ(server.id->Disconnect(), 0);
    const ibv_wc flushed = server_side.get();
    EXPECT_EQ(flushed.wr_id, 80u);
    EXPECT_EQ(flushed.status, IBV_WC_WR_FLUSH_ERR);
    EXPECT_EQ(WaitEventType(*client.id), CmEventType::kDisconnected);
}

TEST_F(TcpInlineProgress, WaiterInABlockingReadWakesWhenAnotherThreadBreaksTheConnection) {
    // A request with a local protection error breaks the connection in the
    // posting thread: the socket is closed under the waiter's recv.
    PostRecv(client, *local, 0, 64, 90);
    auto client_side = std::async(std::launch::async, [this] {
        return BlockingWaitOne(client.recv, "the client's inline wait");
    });
    ibv_sge sge = local->Sge(0, 64);
    sge.lkey ^= 0x5a5a;
    ASSERT_EQ(client.qp().PostSend(SendWr(IBV_WR_SEND, &sge, 91, 0, 0, /*signaled=*/true)), 0);
    const ibv_wc flushed = client_side.get();
    EXPECT_EQ(flushed.wr_id, 90u);
    EXPECT_EQ(flushed.status, IBV_WC_WR_FLUSH_ERR);
    const ibv_wc failed = client.send.WaitOne();
    EXPECT_EQ(failed.wr_id, 91u);
    EXPECT_EQ(failed.status, IBV_WC_LOC_PROT_ERR);
}

TEST_F(TcpInlineProgress, ChannelMadeNonBlockingAfterBlockingWaitsAnswersEagain) {
    // Waits remember that the fd was blocking; one made non-blocking later
    // still gets EAGAIN (after at most a direct read's timeout), and from
    // then on at once.
    for (int i = 0; i < 3; ++i) {
        PostWrite(100 + i, 0, 64);
        EXPECT_EQ(BlockingWaitOne(client.send, "a blocking wait").status, IBV_WC_SUCCESS);
    }
    const int fd = client.send.channel->Fd();
    ASSERT_EQ(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK), 0);
    for (int i = 0; i < 2; ++i) {
        Watchdog watchdog("a non-blocking GetEvent");
        ASSERT_EQ(client.send.cq->RequestNotify(), 0);
        // Events left by waits that found their completion by polling come
        // first (as with verbs); then there is nothing.
        provider::CompletionQueue *fired = nullptr;
        int err;
        while ((err = client.send.channel->GetEvent(&fired)) == 0)
            client.send.channel->AckEvents(fired, 1);
        EXPECT_EQ(err, EAGAIN);
    }
    ASSERT_EQ(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK), 0);
    PostWrite(110, 0, 64);
    EXPECT_EQ(BlockingWaitOne(client.send, "a blocking wait again").wr_id, 110u);
}

class TcpInlineProgressSmallSendQueue : public TcpInlineProgress {
  protected:
    PairOptions Options() override {
        PairOptions options;
        options.sq_size = 8;
        return options;
    }
};

TEST_F(TcpInlineProgressSmallSendQueue, UnsignaledRequestsAloneDoNotHoldTheSendQueue) {
    // Acknowledgements are only requested by signaled requests, or once half
    // the send queue waits for one: a stream of unsignaled writes never
    // fills it for good.
    const auto deadline = steady_clock::now() + milliseconds(kTimeoutMs);
    for (int i = 0; i < 200; ++i) {
        ibv_sge sge = local->Sge(0, 8);
        int err;
        while ((err = client.qp().PostSend(SendWr(IBV_WR_RDMA_WRITE, &sge, i, remote->addr(),
                                                  remote->rkey(), /*signaled=*/false))) == ENOMEM &&
               steady_clock::now() < deadline) {
            std::this_thread::yield();
        }
        ASSERT_EQ(err, 0) << "write " << i;
    }
    ibv_sge sge = local->Sge(0, 8);
    int err;
    while ((err = client.qp().PostSend(
                SendWr(IBV_WR_RDMA_WRITE, &sge, 999, remote->addr(), remote->rkey()))) == ENOMEM &&
           steady_clock::now() < deadline) {
        std::this_thread::yield();
    }
    ASSERT_EQ(err, 0);
    EXPECT_EQ(client.send.WaitOne().wr_id, 999u);
}

// --- InlineProgress alone ---------------------------------------------------

constexpr int kLingerUs = 1000;

TEST(InlineProgress, WaitersMuteWhileTheSocketCanBeReadAndTheLastLeavesTheLinger) {
    InlineProgress progress;
    bool first = false;
    bool second = false;
    EXPECT_FALSE(progress.Follow(&first, false)) << "not readable, not muted: nothing changes";
    EXPECT_TRUE(progress.Follow(&first, true));
    EXPECT_TRUE(first);
    EXPECT_FALSE(progress.Follow(&first, true)) << "a waiter mutes once, however often it polls";
    EXPECT_TRUE(progress.Alone());
    EXPECT_TRUE(progress.Follow(&second, true));
    EXPECT_FALSE(progress.Alone()) << "two waiters: neither reads directly";
    EXPECT_TRUE(progress.lease().Muted());

    bool deadline = true;
    EXPECT_TRUE(progress.End(&first, kLingerUs, true, &deadline));
    EXPECT_FALSE(first);
    EXPECT_FALSE(deadline) << "not the last";
    EXPECT_FALSE(progress.lease().Lingering());
    EXPECT_FALSE(progress.End(&first, kLingerUs, true, &deadline)) << "ended already";
    EXPECT_TRUE(progress.End(&second, kLingerUs, true, &deadline));
    EXPECT_TRUE(deadline) << "the last waiter's linger needs its deadline";
    EXPECT_TRUE(progress.lease().Lingering());
    EXPECT_TRUE(progress.lease().Muted()) << "the mute lingers";
}

TEST(InlineProgress, AWaiterWhoseSocketCannotBeReadLiftsItsMuteAndLeavesNoLinger) {
    InlineProgress progress;
    bool muted = false;
    ASSERT_TRUE(progress.Follow(&muted, true));
    EXPECT_TRUE(progress.Follow(&muted, false));
    EXPECT_FALSE(muted);
    EXPECT_FALSE(progress.lease().Muted());
    ASSERT_TRUE(progress.Follow(&muted, true));
    bool deadline = true;
    EXPECT_TRUE(progress.End(&muted, kLingerUs, /*can_mute=*/false, &deadline));
    EXPECT_FALSE(deadline);
    EXPECT_FALSE(progress.lease().Muted()) << "a socket that cannot be read is not kept muted";
}

// A linger renewed while the lease's deadline is pending extends the lease
// and asks the engine for nothing; once that deadline passed, it asks again.
TEST(InlineProgress, ARenewedLingerAsksNoNewDeadlineWhileOneIsPending) {
    InlineProgress progress;
    bool muted = false;
    bool deadline = false;
    ASSERT_TRUE(progress.Follow(&muted, true));
    ASSERT_TRUE(progress.End(&muted, kLingerUs, true, &deadline));
    EXPECT_TRUE(deadline);
    ASSERT_TRUE(progress.Follow(&muted, true));
    ASSERT_TRUE(progress.End(&muted, kLingerUs, true, &deadline));
    EXPECT_FALSE(deadline) << "the pending deadline extends the lease";
    EXPECT_TRUE(progress.lease().Lingering());
    EXPECT_FALSE(progress.AskDeadline(progress.lease().Until())) << "pending, and earlier";
    progress.DeadlinePassed(progress.lease().Until());
    EXPECT_TRUE(progress.AskDeadline(progress.lease().Until()));
}

class InlineProgressRecv : public ::testing::Test {
  protected:
    void SetUp() override { ASSERT_TRUE(testing::OpenSocketPair(&ours_, &peer_)); }
    InlineProgress::Recv Recv(ssize_t *got) {
        std::unique_lock lock(mu_);
        const InlineProgress::Recv result =
            progress_.DirectRecv(lock, fd_, buffer_, sizeof(buffer_), "the peer", got);
        EXPECT_TRUE(lock.owns_lock()) << "the lock is held again on return";
        EXPECT_FALSE(progress_.ReaderBusy());
        return result;
    }

    Lock mu_;
    UniqueFd ours_;
    UniqueFd peer_;
    int fd_ = -1;
    InlineProgress progress_;
    uint8_t buffer_[64];
};

TEST_F(InlineProgressRecv, ReadsWhatArrivedWithTheSocketMadeBlockingAndTimesOutOtherwise) {
    fd_ = ours_.Get();
    ASSERT_EQ(send(peer_.Get(), "hello", 5, 0), 5);
    ssize_t got = 0;
    EXPECT_EQ(Recv(&got), InlineProgress::Recv::kReceived);
    EXPECT_EQ(got, 5);
    EXPECT_EQ(memcmp(buffer_, "hello", 5), 0);
    EXPECT_EQ(fcntl(fd_, F_GETFL) & O_NONBLOCK, 0) << "blocking, bounded by SO_RCVTIMEO";
    EXPECT_EQ(Recv(&got), InlineProgress::Recv::kTimedOut) << "nothing more came";
}

TEST_F(InlineProgressRecv, TheLockIsFreeDuringTheRecv) {
    fd_ = ours_.Get();
    std::atomic<bool> received{false};
    std::thread reader([&] {
        const auto deadline = steady_clock::now() + milliseconds(kTimeoutMs);
        ssize_t got = 0;
        while (steady_clock::now() < deadline)
            if (Recv(&got) == InlineProgress::Recv::kReceived)
                break;
        received = got == 1;
    });
    // Taking the lock while the reader is in its recv is what shows it free.
    const auto deadline = steady_clock::now() + milliseconds(kTimeoutMs);
    bool seen_busy = false;
    while (!seen_busy && steady_clock::now() < deadline) {
        std::lock_guard lock(mu_);
        seen_busy = progress_.ReaderBusy();
    }
    EXPECT_TRUE(seen_busy);
    ASSERT_EQ(send(peer_.Get(), "x", 1, 0), 1);
    reader.join();
    EXPECT_TRUE(received);
}

TEST_F(InlineProgressRecv, ASocketReleasedUnderTheRecvWakesItsReaderWhichClosesIt) {
    UniqueFd socket = std::move(ours_);
    fd_ = socket.Get();
    std::atomic<InlineProgress::Recv> result{InlineProgress::Recv::kTimedOut};
    std::thread reader([&] {
        const auto deadline = steady_clock::now() + milliseconds(kTimeoutMs);
        ssize_t got = 0;
        while (result == InlineProgress::Recv::kTimedOut && steady_clock::now() < deadline)
            result = Recv(&got);
    });
    {
        const auto deadline = steady_clock::now() + milliseconds(kTimeoutMs);
        std::unique_lock lock(mu_);
        while (!progress_.ReaderBusy() && steady_clock::now() < deadline) {
            lock.unlock();
            std::this_thread::yield();
            lock.lock();
        }
        ASSERT_TRUE(progress_.ReaderBusy());
        progress_.Release(&socket);
        EXPECT_FALSE(socket.Valid());
        EXPECT_GE(fcntl(fd_, F_GETFD), 0) << "its number is not free under the recv";
    }
    reader.join();
    EXPECT_EQ(result, InlineProgress::Recv::kClosed) << "what was read goes with the socket";
    EXPECT_EQ(fcntl(fd_, F_GETFD), -1) << "the reader closed it";
}

TEST_F(InlineProgressRecv, ASocketReleasedWithoutAReaderIsClosedAtOnce) {
    UniqueFd socket = std::move(ours_);
    const int fd = socket.Get();
    std::lock_guard lock(mu_);
    progress_.Release(&socket);
    EXPECT_FALSE(socket.Valid());
    EXPECT_EQ(fcntl(fd, F_GETFD), -1);
}

}  // namespace
}  // namespace rpma::provider::tcp::testing
