// Connection management: handshake, rejection, unreachable peers, graceful
// and abrupt endings.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>
#include <thread>
#include <vector>

#include "tests/unit/provider/tcp/tcp_test_support.h"

namespace rpma::provider::tcp::testing {
namespace {

using TcpConnection = ConnectedPair;

TEST(TcpDevice, ContextIsProviderOwnedDeviceNamedTcp0) {
    ibv_context *ctx = GetDevice().Context();
    ASSERT_NE(ctx, nullptr);
    ASSERT_NE(ctx->device, nullptr);
    EXPECT_STREQ(ctx->device->name, "tcp0");
    EXPECT_EQ(ctx->cmd_fd, -1);
    EXPECT_EQ(ctx->async_fd, -1);
    EXPECT_EQ(ctx->num_comp_vectors, 1);
    EXPECT_TRUE(OwnsContext(ctx));
    EXPECT_FALSE(OwnsContext(nullptr));
    ibv_context other{};
    EXPECT_FALSE(OwnsContext(&other));
    EXPECT_FALSE(GetDevice().IsOdpCapable());
}

TEST(TcpDevice, ResolveOfUnknownHostFailsWithEhostunreach) {
    std::unique_ptr<provider::CmId> id;
    EXPECT_EQ(GetDevice().Resolve("no-such-host.invalid", "7204", kTimeoutMs, &id), EHOSTUNREACH);
    EXPECT_EQ(id, nullptr);
}

TEST(TcpDevice, ResolveOfMalformedPortFailsWithEinval) {
    std::unique_ptr<provider::CmId> id;
    EXPECT_EQ(GetDevice().Resolve("127.0.0.1", "not-a-port-name", kTimeoutMs, &id), EINVAL);
}

// Out of file descriptors, a connection that cannot have its event fd is
// refused with EMFILE instead of living on with an invalid one (whose
// waiters would poll fd -1). In a child: it lowers its fd limit.
TEST(TcpDevice, ResolveWithoutAFreeFileDescriptorFailsWithEmfile) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_EXIT(
        {
            InChild(10);
            provider::Device &device = GetDevice();
            rlimit limit{};
            ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &limit), 0);
            limit.rlim_cur = std::min<rlim_t>(limit.rlim_cur, 512);
            ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &limit), 0);
            std::vector<int> fds;
            for (int fd; fds.size() < 512 && (fd = dup(STDERR_FILENO)) >= 0;)
                fds.push_back(fd);
            ASSERT_EQ(errno, EMFILE);
            std::unique_ptr<provider::CmId> id;
            EXPECT_EQ(device.Resolve("127.0.0.1", "7204", kTimeoutMs, &id), EMFILE);
            EXPECT_EQ(id, nullptr);
            close(fds.back());
            EXPECT_EQ(device.Resolve("127.0.0.1", "7204", kTimeoutMs, &id), 0);
            EXPECT_NE(id, nullptr);
            ExitChild();
        },
        ::testing::ExitedWithCode(0), "");
}

TEST_F(TcpConnection, HandshakeCarriesPrivateDataBothWays) {
    PairOptions options;
    options.client_private_data = {1, 2, 3, 4};
    options.server_private_data.assign(56, 0xab);  // the maximum
    Connect(options);
    EXPECT_EQ(server.id->RequestPrivateData(), options.client_private_data);
    EXPECT_EQ(client_established_data, options.server_private_data);
}

TEST_F(TcpConnection, PrivateDataLongerThan56BytesIsRefused) {
    StartListening();
    CreateClient({});
    uint8_t data[57] = {};
    EXPECT_EQ(client.id->Connect(data, sizeof(data), kTimeoutMs), EINVAL);
}

TEST_F(TcpConnection, QpNumbersAreNonZeroUnique24Bit) {
    Connect();
    const uint32_t a = client.qp().QpNum();
    const uint32_t b = server.qp().QpNum();
    EXPECT_NE(a, 0u);
    EXPECT_NE(b, 0u);
    EXPECT_NE(a, b);
    EXPECT_LE(a, 0xffffffu);
    EXPECT_LE(b, 0xffffffu);
}

TEST_F(TcpConnection, RejectedRequestGivesRejectedEvent) {
    StartListening();
    CreateClient({});
    uint8_t token = 7;
    ASSERT_EQ(client.id->Connect(&token, 1, kTimeoutMs), 0);
    ASSERT_TRUE(WaitReadable(listener->Fd()));
    std::unique_ptr<provider::CmId> request;
    ASSERT_EQ(listener->NextRequest(&request), 0);
    EXPECT_EQ(request->RequestPrivateData(), std::vector<uint8_t>{7});
    EXPECT_EQ(request->Reject(), 0);
    request.reset();
    EXPECT_EQ(WaitEventType(*client.id), CmEventType::kRejected);
}

TEST_F(TcpConnection, DestroyingAnUnansweredRequestRejectsIt) {
    StartListening();
    CreateClient({});
    ASSERT_EQ(client.id->Connect(nullptr, 0, kTimeoutMs), 0);
    ASSERT_TRUE(WaitReadable(listener->Fd()));
    std::unique_ptr<provider::CmId> request;
    ASSERT_EQ(listener->NextRequest(&request), 0);
    request.reset();
    EXPECT_EQ(WaitEventType(*client.id), CmEventType::kRejected);
}

TEST_F(TcpConnection, ClosingTheListenerRejectsQueuedRequests) {
    StartListening();
    CreateClient({});
    ASSERT_EQ(client.id->Connect(nullptr, 0, kTimeoutMs), 0);
    ASSERT_TRUE(WaitReadable(listener->Fd()));
    listener.reset();
    EXPECT_EQ(WaitEventType(*client.id), CmEventType::kRejected);
}

TEST_F(TcpConnection, NextRequestWithoutPendingRequestReturnsEagain) {
    StartListening();
    std::unique_ptr<provider::CmId> request;
    EXPECT_EQ(listener->NextRequest(&request), EAGAIN);
}

TEST_F(TcpConnection, ConnectingWhereNothingListensGivesUnreachable) {
    // Take a free port, then stop listening on it.
    StartListening();
    listener.reset();
    CreateClient({});
    ASSERT_EQ(client.id->Connect(nullptr, 0, kTimeoutMs), 0);
    EXPECT_EQ(WaitEventType(*client.id), CmEventType::kUnreachable);
}

TEST_F(TcpConnection, ServerThatNeverAnswersGivesUnreachableAfterTheReplyTimeout) {
    GetDevice().SetAwaitingReplyTimeout(std::chrono::milliseconds(100));
    StartListening();
    CreateClient({});
    ASSERT_EQ(client.id->Connect(nullptr, 0, kTimeoutMs), 0);
    // The request is queued but nobody accepts it.
    EXPECT_EQ(WaitEventType(*client.id), CmEventType::kUnreachable);
    GetDevice().SetAwaitingReplyTimeout(Device::kDefaultAwaitingReplyTimeout);
}

TEST_F(TcpConnection, ConnectTimeoutDoesNotBoundTheServersTimeToAccept) {
    StartListening();
    CreateClient({});
    ASSERT_EQ(client.id->Connect(nullptr, 0, /*timeout_ms=*/50), 0);
    // The server application takes longer than the connect timeout to look
    // at the request; with rdma_cm that is fine, and so it is here.
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    TakeRequest({});
    ASSERT_EQ(server.id->Accept(nullptr, 0), 0);
    EXPECT_EQ(WaitEventType(*client.id), CmEventType::kEstablished);
    EXPECT_EQ(WaitEventType(*server.id), CmEventType::kEstablished);
}

TEST_F(TcpConnection, NextEventWithoutEventReturnsEagain) {
    Connect();
    CmEvent event;
    EXPECT_EQ(client.id->NextEvent(&event), EAGAIN);
    EXPECT_EQ(server.id->NextEvent(&event), EAGAIN);
}

TEST_F(TcpConnection, PostingBeforeTheConnectionIsEstablishedFailsWithEnotconn) {
    StartListening();
    CreateClient({});
    Buffer local(*client_pd, 64, kRemoteAll);
    ibv_sge sge = local.Sge(0, 8);
    EXPECT_EQ(client.qp().PostSend(SendWr(IBV_WR_SEND, &sge, 1)), ENOTCONN);
}

TEST_F(TcpConnection, GracefulDisconnectCompletesEarlierWritesAndClosesBothSides) {
    Connect();
    Buffer local(*client_pd, 4096, kRemoteAll);
    Buffer remote(*server_pd, 4096, kRemoteAll);
    memset(local.data(), 0x5a, 4096);
    ibv_sge sge = local.Sge(0, 4096);
    ASSERT_EQ(client.qp().PostSend(
                  SendWr(IBV_WR_RDMA_WRITE, &sge, 1, remote.addr(), remote.rkey(), true)),
              0);
    ASSERT_EQ(client.id->Disconnect(), 0);
    EXPECT_EQ(client.send.WaitOne().status, IBV_WC_SUCCESS);
    EXPECT_EQ(WaitEventType(*server.id), CmEventType::kDisconnected);
    EXPECT_EQ(WaitEventType(*client.id), CmEventType::kDisconnected);
    EXPECT_EQ(remote.data()[4095], 0x5a);
    // As a QP in the error state: the post is taken and flushed.
    ASSERT_EQ(client.qp().PostSend(
                  SendWr(IBV_WR_RDMA_WRITE, &sge, 2, remote.addr(), remote.rkey(), false)),
              0);
    const ibv_wc flushed = client.send.WaitOne();
    EXPECT_EQ(flushed.wr_id, 2u);
    EXPECT_EQ(flushed.status, IBV_WC_WR_FLUSH_ERR);
}

TEST_F(TcpConnection, PostAfterDisconnectBeganIsFlushedBehindEarlierWork) {
    Connect();
    Buffer local(*client_pd, 4096, kRemoteAll);
    Buffer remote(*server_pd, 4096, kRemoteAll);
    ibv_sge sge = local.Sge(0, 4096);
    ASSERT_EQ(client.qp().PostSend(
                  SendWr(IBV_WR_RDMA_WRITE, &sge, 1, remote.addr(), remote.rkey(), true)),
              0);
    ASSERT_EQ(client.id->Disconnect(), 0);
    ASSERT_EQ(client.qp().PostSend(
                  SendWr(IBV_WR_RDMA_WRITE, &sge, 2, remote.addr(), remote.rkey(), true)),
              0);
    auto wcs = client.send.Wait(2);
    ASSERT_EQ(wcs.size(), 2u);
    EXPECT_EQ(wcs[0].wr_id, 1u);
    EXPECT_EQ(wcs[0].status, IBV_WC_SUCCESS);
    EXPECT_EQ(wcs[1].wr_id, 2u);
    EXPECT_EQ(wcs[1].status, IBV_WC_WR_FLUSH_ERR);
    EXPECT_EQ(WaitEventType(*server.id), CmEventType::kDisconnected);
    EXPECT_EQ(WaitEventType(*client.id), CmEventType::kDisconnected);
}

TEST_F(TcpConnection, ServerInitiatedDisconnectClosesBothSides) {
    Connect();
    ASSERT_EQ(server.id->Disconnect(), 0);
    EXPECT_EQ(WaitEventType(*client.id), CmEventType::kDisconnected);
    EXPECT_EQ(WaitEventType(*server.id), CmEventType::kDisconnected);
}

TEST_F(TcpConnection, DisconnectFlushesPostedReceives) {
    Connect();
    Buffer buffer(*server_pd, 64, kRemoteAll);
    ibv_sge sge = buffer.Sge(0, 64);
    ASSERT_EQ(server.qp().PostRecv(RecvWr(&sge, 42)), 0);
    ASSERT_EQ(client.id->Disconnect(), 0);
    EXPECT_EQ(WaitEventType(*server.id), CmEventType::kDisconnected);
    const ibv_wc wc = server.recv.WaitOne();
    EXPECT_EQ(wc.wr_id, 42u);
    EXPECT_EQ(wc.status, IBV_WC_WR_FLUSH_ERR);
}

TEST_F(TcpConnection, PeerVanishingMidStreamGivesConnectErrorAndErrorCompletions) {
    Connect();
    Buffer local(*client_pd, 4096, kRemoteAll);
    // The server posts no receive, so the client's SEND stays outstanding
    // (the target holds it, receiver not ready) when the server vanishes.
    ibv_sge send_sge = local.Sge(0, 16);
    ASSERT_EQ(client.qp().PostSend(SendWr(IBV_WR_SEND, &send_sge, 1)), 0);
    ibv_sge write_sge = local.Sge(16, 16);
    ASSERT_EQ(client.qp().PostSend(SendWr(IBV_WR_RDMA_WRITE, &write_sge, 2, 0, 0, false)), 0);
    ibv_sge recv_sge = local.Sge(1024, 64);
    ASSERT_EQ(client.qp().PostRecv(RecvWr(&recv_sge, 3)), 0);

    server.id.reset();  // no disconnect: the socket just closes

    EXPECT_EQ(WaitEventType(*client.id), CmEventType::kConnectError);
    auto sends = client.send.Wait(2);
    ASSERT_EQ(sends.size(), 2u);
    EXPECT_EQ(sends[0].wr_id, 1u);
    EXPECT_EQ(sends[0].status, IBV_WC_RETRY_EXC_ERR);
    EXPECT_EQ(sends[1].wr_id, 2u);  // unsignaled, but failed: reported
    EXPECT_EQ(sends[1].status, IBV_WC_WR_FLUSH_ERR);
    const ibv_wc recv = client.recv.WaitOne();
    EXPECT_EQ(recv.wr_id, 3u);
    EXPECT_EQ(recv.status, IBV_WC_WR_FLUSH_ERR);
    // A broken connection can still be disconnected without hanging.
    EXPECT_EQ(client.id->Disconnect(), 0);
    EXPECT_EQ(WaitEventType(*client.id), CmEventType::kDisconnected);
}

TEST_F(TcpConnection, Ipv6LoopbackConnects) {
    std::unique_ptr<provider::Listener> probe;
    if (device().Listen("::1", "0", &probe) != 0)
        GTEST_SKIP() << "no IPv6 loopback on this host";
    probe.reset();
    PairOptions options;
    options.address = "::1";
    options.client_private_data = {9};
    Connect(options);
    EXPECT_EQ(server.id->RequestPrivateData(), std::vector<uint8_t>{9});
}

}  // namespace
}  // namespace rpma::provider::tcp::testing
