// Liveness (tcp_liveness.h): a peer that stops answering breaks the
// connection within the bound, as an RC QP whose retries ran out; a peer
// that is slow but alive does not. The silent peer is a scripted raw TCP
// peer (tcp_raw_peer.h) that completes the handshake and then neither reads
// nor writes while its kernel keeps acknowledging: what a stopped process
// (SIGSTOP) looks like from the other end.
#include <dirent.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <cstdarg>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "librpma.h"
#include "rpma_core/src/provider/tcp/tcp_liveness.h"
#include "tests/unit/log_capture.h"
#include "tests/unit/provider/tcp/tcp_raw_peer.h"
#include "tests/unit/provider/tcp/tcp_test_support.h"

namespace rpma::provider::tcp::testing {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

// The bound of every connection of this test binary, short so the tests
// stay fast. An RPMA_TCP_TIMEOUT_MS already in the environment wins: with
// RPMA_TCP_TIMEOUT_MS=0 (no liveness) the tests show what they catch.
constexpr int kBoundMs = 300;

[[maybe_unused]] ::testing::Environment *const kShortBound =
    ::testing::AddGlobalTestEnvironment(new RequestTimeoutEnvironment(kBoundMs));

long long MillisecondsSince(Clock::time_point start) {
    return std::chrono::duration_cast<milliseconds>(Clock::now() - start).count();
}

using rpma_test::LogCapture;

// The environment variable for the length of one test.
class ScopedEnv {
  public:
    ScopedEnv(const char *name, const char *value) : name_(name) {
        if (const char *old = getenv(name); old != nullptr)
            old_ = old;
        if (value != nullptr)
            setenv(name, value, 1);
        else
            unsetenv(name);
    }
    ~ScopedEnv() {
        if (old_.has_value())
            setenv(name_, old_->c_str(), 1);
        else
            unsetenv(name_);
    }

  private:
    const char *name_;
    std::optional<std::string> old_;
};

TEST(RequestTimeoutSetting, AcceptsMillisecondsAndZero) {
    milliseconds timeout{};
    ASSERT_TRUE(ParseRequestTimeout("250", &timeout));
    EXPECT_EQ(timeout, milliseconds(250));
    ASSERT_TRUE(ParseRequestTimeout("0", &timeout));
    EXPECT_EQ(timeout, milliseconds(0));
    for (const char *bad :
         {"", "abc", "-5", " 300", "300ms", "5", "99999999999999999999", "3600001"}) {
        timeout = milliseconds(7);
        EXPECT_FALSE(ParseRequestTimeout(bad, &timeout)) << bad;
        EXPECT_EQ(timeout, milliseconds(7)) << bad;
    }
}

TEST(RequestTimeoutSetting, InvalidEnvironmentValueIsLoggedAndTheDefaultUsed) {
    ScopedEnv env(kRequestTimeoutVariable, "3s");
    LogCapture log;
    EXPECT_EQ(RequestTimeoutFromEnvironment(), kDefaultRequestTimeout);
    EXPECT_NE(log.Text().find("RPMA_TCP_TIMEOUT_MS=3s"), std::string::npos) << log.Text();
    EXPECT_NE(log.Text().find("milliseconds"), std::string::npos) << log.Text();
}

TEST(RequestTimeoutSetting, EnvironmentSetsTheBound) {
    {
        ScopedEnv env(kRequestTimeoutVariable, "1234");
        EXPECT_EQ(RequestTimeoutFromEnvironment(), milliseconds(1234));
    }
    {
        ScopedEnv env(kRequestTimeoutVariable, nullptr);
        EXPECT_EQ(RequestTimeoutFromEnvironment(), kDefaultRequestTimeout);
    }
    // This binary's connections run with the short bound.
    EXPECT_EQ(RequestTimeoutMs().load(), kBoundMs);
}

class TcpLiveness : public ConnectedPair {
  protected:
    // The provider connects as a client to a scripted server.
    void ConnectToScripted(RawListener &raw, RawPeer *server) {
        port = raw.Port();
        ASSERT_NO_FATAL_FAILURE(CreateClient({}));
        ASSERT_EQ(client.id->Connect(nullptr, 0, kTimeoutMs), 0);
        *server = raw.Accept();
        ASSERT_TRUE(server->Valid());
        ASSERT_TRUE(server->ReadHandshake(wire::Opcode::kConnectRequest));
        ASSERT_TRUE(server->SendHandshake(wire::Opcode::kAccept, 16));
        ASSERT_EQ(WaitEventType(*client.id), CmEventType::kEstablished);
        ASSERT_TRUE(server->ReadHandshake(wire::Opcode::kReadyToUse));
    }

    // Expects the WRs `wr_ids` (in posting order) to complete, the first
    // with IBV_WC_RETRY_EXC_ERR and the rest flushed, within the bound (and
    // not before it), and the connection to be lost.
    void ExpectTimedOut(Clock::time_point posted, const std::vector<uint64_t> &wr_ids) {
        const std::vector<ibv_wc> wcs = client.send.Wait(wr_ids.size());
        const long long elapsed = MillisecondsSince(posted);
        ASSERT_EQ(wcs.size(), wr_ids.size()) << "no completion after " << elapsed << " ms";
        for (size_t i = 0; i < wcs.size(); ++i) {
            EXPECT_EQ(wcs[i].wr_id, wr_ids[i]);
            EXPECT_EQ(wcs[i].status, i == 0 ? IBV_WC_RETRY_EXC_ERR : IBV_WC_WR_FLUSH_ERR)
                << "wr " << wcs[i].wr_id << ": " << ibv_wc_status_str(wcs[i].status);
        }
        EXPECT_GE(elapsed, kBoundMs);
        // A check every quarter bound, plus scheduling on a loaded machine.
        EXPECT_LT(elapsed, 2 * kBoundMs + 1000);
        EXPECT_EQ(WaitEventType(*client.id), CmEventType::kConnectError);
    }
};

enum class Request { kWriteThenFlush, kRead, kSend };

class TcpLivenessSilentPeer : public TcpLiveness, public ::testing::WithParamInterface<Request> {};

TEST_P(TcpLivenessSilentPeer, OldestRequestFailsWithRetryExceededAndTheRestFlush) {
    RawListener raw;
    RawPeer server;
    ASSERT_NO_FATAL_FAILURE(ConnectToScripted(raw, &server));
    Buffer local(*client_pd, 4096, kRemoteAll);
    ibv_sge sge = local.Sge(0, 64);
    const Clock::time_point posted = Clock::now();
    std::vector<uint64_t> wr_ids;
    switch (GetParam()) {
        case Request::kWriteThenFlush:
            // Unsignaled, as librpma's writes usually are: the error
            // completes it all the same.
            ASSERT_EQ(client.qp().PostSend(SendWr(IBV_WR_RDMA_WRITE, &sge, 1, 0x1000, 7,
                                                  /*signaled=*/false)),
                      0);
            ASSERT_EQ(client.qp().PostFlush(0x1000, 7, 64, FlushType::kPersistent, true, 2), 0);
            wr_ids = {1, 2};
            break;
        case Request::kRead:
            ASSERT_EQ(client.qp().PostSend(SendWr(IBV_WR_RDMA_READ, &sge, 1, 0x1000, 7)), 0);
            wr_ids = {1};
            break;
        case Request::kSend:
            ASSERT_EQ(client.qp().PostSend(SendWr(IBV_WR_SEND, &sge, 1)), 0);
            wr_ids = {1};
            break;
    }
    // Posted after the first, before the bound: flushed behind it.
    ASSERT_EQ(client.qp().PostSend(SendWr(IBV_WR_SEND, &sge, 3)), 0);
    wr_ids.push_back(3);
    ASSERT_NO_FATAL_FAILURE(ExpectTimedOut(posted, wr_ids));
    // As a QP in the error state: a later WR is flushed at once.
    ASSERT_EQ(client.qp().PostSend(SendWr(IBV_WR_RDMA_READ, &sge, 4, 0x1000, 7)), 0);
    const ibv_wc late = client.send.WaitOne();
    EXPECT_EQ(late.wr_id, 4u);
    EXPECT_EQ(late.status, IBV_WC_WR_FLUSH_ERR);
    EXPECT_TRUE(server.WaitClosed());
}

INSTANTIATE_TEST_SUITE_P(EachRequest, TcpLivenessSilentPeer,
                         ::testing::Values(Request::kWriteThenFlush, Request::kRead,
                                           Request::kSend));

TEST_F(TcpLiveness, PeerThatAnswersProbesIsNotKilled) {
    // A target that is alive but slow to answer a READ (as one whose
    // answer waits for work of its own): it answers what the provider asks
    // meanwhile, and the READ outlives the bound several times over.
    RawListener raw;
    RawPeer server;
    ASSERT_NO_FATAL_FAILURE(ConnectToScripted(raw, &server));
    Buffer local(*client_pd, 4096, kRemoteAll);
    ibv_sge sge = local.Sge(0, 64);
    const Clock::time_point posted = Clock::now();
    ASSERT_EQ(client.qp().PostSend(SendWr(IBV_WR_RDMA_READ, &sge, 1, 0x1000, 7)), 0);
    wire::Header request;
    ASSERT_TRUE(server.ReadMessage(&request));
    ASSERT_EQ(request.opcode, wire::Opcode::kReadRequest);
    int probes = 0;
    while (MillisecondsSince(posted) < 3 * kBoundMs) {
        wire::Header probe;
        ASSERT_TRUE(server.ReadMessage(&probe))
            << "no probe after " << MillisecondsSince(posted) << " ms";
        ASSERT_EQ(probe.opcode, wire::Opcode::kAckRequest);
        ++probes;
        // Nothing new applied: the answer repeats the last ACK.
        ASSERT_TRUE(server.SendHeader(wire::AckHeader(request.sequence - 1)));
    }
    EXPECT_GE(probes, 3);
    wire::Header response;
    response.opcode = wire::Opcode::kReadResponse;
    response.length = 64;
    response.sequence = request.sequence;
    const std::vector<uint8_t> payload(64, 0x3c);
    ASSERT_TRUE(server.SendHeader(response));
    ASSERT_TRUE(server.Send(payload.data(), payload.size()));
    const ibv_wc wc = client.send.WaitOne();
    EXPECT_EQ(wc.status, IBV_WC_SUCCESS) << ibv_wc_status_str(wc.status);
    EXPECT_EQ(local.data()[63], 0x3c);
}

TEST_F(TcpLiveness, SlowlyStreamedReadResponseIsNotKilled) {
    // The target's kernel paces the response (SO_MAX_PACING_RATE): bytes
    // keep arriving, for longer than the bound, with no answer complete.
    constexpr uint32_t kLength = 1 << 20;
    constexpr unsigned kBytesPerSecond = 1 << 20;
    RawListener raw;
    RawPeer server;
    ASSERT_NO_FATAL_FAILURE(ConnectToScripted(raw, &server));
    ASSERT_EQ(setsockopt(server.Fd(), SOL_SOCKET, SO_MAX_PACING_RATE, &kBytesPerSecond,
                         sizeof(kBytesPerSecond)),
              0);
    Buffer local(*client_pd, kLength, kRemoteAll);
    ibv_sge sge = local.Sge(0, kLength);
    const Clock::time_point posted = Clock::now();
    ASSERT_EQ(client.qp().PostSend(SendWr(IBV_WR_RDMA_READ, &sge, 1, 0x1000, 7)), 0);
    wire::Header request;
    ASSERT_TRUE(server.ReadMessage(&request));
    wire::Header response;
    response.opcode = wire::Opcode::kReadResponse;
    response.length = kLength;
    response.sequence = request.sequence;
    const std::vector<uint8_t> payload(kLength, 0x6e);
    ASSERT_TRUE(server.SendHeader(response));
    ASSERT_TRUE(server.Send(payload.data(), payload.size()));
    const ibv_wc wc = client.send.WaitOne();
    EXPECT_EQ(wc.status, IBV_WC_SUCCESS) << ibv_wc_status_str(wc.status);
    EXPECT_EQ(local.data()[kLength - 1], 0x6e);
    // Otherwise the pacing did not hold the transfer back and this proves
    // nothing.
    EXPECT_GE(MillisecondsSince(posted), 2 * kBoundMs);
}

// A loopback TCP connection whose sending end the kernel paces and whose
// receiving end a thread drains: writing into it blocks at that pace.
class PacedSink {
  public:
    explicit PacedSink(unsigned bytes_per_second) {
        RawListener listener;
        writer_ = RawPeer::ConnectTo(listener.Port());
        reader_ = listener.Accept();
        const int small = 64 << 10;
        setsockopt(writer_.Fd(), SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
        setsockopt(writer_.Fd(), SOL_SOCKET, SO_MAX_PACING_RATE, &bytes_per_second,
                   sizeof(bytes_per_second));
        drain_ = std::thread([this] {
            uint8_t sink[64 << 10];
            while (::recv(reader_.Fd(), sink, sizeof(sink), 0) > 0) {
            }
        });
    }
    ~PacedSink() {
        shutdown(writer_.Fd(), SHUT_RDWR);
        shutdown(reader_.Fd(), SHUT_RDWR);
        drain_.join();
    }
    bool Write(const void *bytes, size_t length) { return writer_.Send(bytes, length); }

  private:
    RawPeer writer_;
    RawPeer reader_;
    std::thread drain_;
};

TEST_F(TcpLiveness, SlowlyDrainedWriteIsNotKilled) {
    // The target reads a large WRITE at the pace of a slow consumer and
    // acknowledges it only at the end: nothing comes back meanwhile, but
    // the window it reads open keeps the provider's bytes moving.
    constexpr uint32_t kLength = 8 << 20;
    RawListener raw;
    RawPeer server;
    ASSERT_NO_FATAL_FAILURE(ConnectToScripted(raw, &server));
    const int small = 64 << 10;
    setsockopt(server.Fd(), SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
    PacedSink sink(4 << 20);
    Buffer local(*client_pd, kLength, kRemoteAll);
    memset(local.data(), 0x21, kLength);
    ibv_sge sge = local.Sge(0, kLength);
    const Clock::time_point posted = Clock::now();
    ASSERT_EQ(client.qp().PostSend(SendWr(IBV_WR_RDMA_WRITE, &sge, 1, 0x1000, 7)), 0);
    wire::Header request;
    uint8_t header[wire::kHeaderSize];
    ASSERT_TRUE(server.Read(header, sizeof(header)));
    ASSERT_EQ(wire::ParseHeader(header, &request), wire::ParseError::kNone);
    ASSERT_EQ(request.opcode, wire::Opcode::kWrite);
    std::vector<uint8_t> chunk(16 << 10);
    for (size_t left = kLength; left > 0;) {
        const size_t part = std::min(left, chunk.size());
        ASSERT_TRUE(server.Read(chunk.data(), part));
        ASSERT_TRUE(sink.Write(chunk.data(), part));
        left -= part;
    }
    ASSERT_TRUE(server.SendHeader(wire::AckHeader(request.sequence)));
    const ibv_wc wc = client.send.WaitOne();
    EXPECT_EQ(wc.status, IBV_WC_SUCCESS) << ibv_wc_status_str(wc.status);
    EXPECT_GE(MillisecondsSince(posted), 2 * kBoundMs);
}

TEST_F(TcpLiveness, SendWaitingForAReceiveIsNotKilled) {
    // Receiver not ready (for less than its RNR bound, longer than the
    // liveness bound): the target holds the SEND and tells the sender it
    // lives, as RNR NAKs do on verbs.
    ASSERT_NO_FATAL_FAILURE(Connect());
    Buffer local(*client_pd, 4096, kRemoteAll);
    Buffer remote(*server_pd, 4096, kRemoteAll);
    memset(local.data(), 0x44, 64);
    ibv_sge sge = local.Sge(0, 64);
    ASSERT_EQ(client.qp().PostSend(SendWr(IBV_WR_SEND, &sge, 1)), 0);
    EXPECT_TRUE(client.send.Wait(1, 3 * kBoundMs).empty());
    ibv_sge recv_sge = remote.Sge(0, 64);
    ASSERT_EQ(server.qp().PostRecv(RecvWr(&recv_sge, 2)), 0);
    const ibv_wc sent = client.send.WaitOne();
    EXPECT_EQ(sent.status, IBV_WC_SUCCESS) << ibv_wc_status_str(sent.status);
    const ibv_wc received = server.recv.WaitOne();
    EXPECT_EQ(received.status, IBV_WC_SUCCESS);
    EXPECT_EQ(remote.data()[63], 0x44);
}

TEST_F(TcpLiveness, UnsignaledWriteLeftAloneIsNotALoss) {
    // A target acknowledges unsignaled writes lazily; with nothing else
    // posted that ACK is what the provider's probe fetches.
    ASSERT_NO_FATAL_FAILURE(Connect());
    Buffer local(*client_pd, 4096, kRemoteAll);
    Buffer remote(*server_pd, 4096, kRemoteAll);
    ibv_sge sge = local.Sge(0, 64);
    ASSERT_EQ(client.qp().PostSend(SendWr(IBV_WR_RDMA_WRITE, &sge, 1, remote.addr(), remote.rkey(),
                                          /*signaled=*/false)),
              0);
    EXPECT_FALSE(WaitEvent(*client.id, 3 * kBoundMs).has_value());
    EXPECT_FALSE(WaitEvent(*server.id, 0).has_value());
    memset(local.data(), 0x55, 64);
    ASSERT_EQ(
        client.qp().PostSend(SendWr(IBV_WR_RDMA_WRITE, &sge, 2, remote.addr(), remote.rkey())), 0);
    const ibv_wc wc = client.send.WaitOne();
    EXPECT_EQ(wc.wr_id, 2u);
    EXPECT_EQ(wc.status, IBV_WC_SUCCESS) << ibv_wc_status_str(wc.status);
    EXPECT_EQ(remote.data()[63], 0x55);
}

// The TCP sockets of this process connected to or from `port`.
std::vector<int> SocketsOfPort(uint16_t port) {
    std::vector<int> fds;
    DIR *dir = opendir("/proc/self/fd");
    if (dir == nullptr)
        return fds;
    while (const dirent *entry = readdir(dir)) {
        const int fd = atoi(entry->d_name);
        if (fd <= 2 || fd == dirfd(dir))
            continue;
        int type = 0;
        socklen_t length = sizeof(type);
        if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &length) != 0 || type != SOCK_STREAM)
            continue;
        sockaddr_storage peer{};
        length = sizeof(peer);
        if (getpeername(fd, reinterpret_cast<sockaddr *>(&peer), &length) != 0)
            continue;  // a listener
        const auto *in = reinterpret_cast<const sockaddr_in *>(&peer);
        if (peer.ss_family == AF_INET && (ntohs(in->sin_port) == port || LocalPort(fd) == port))
            fds.push_back(fd);
    }
    closedir(dir);
    return fds;
}

int IntOption(int fd, int level, int name) {
    int value = -1;
    socklen_t length = sizeof(value);
    EXPECT_EQ(getsockopt(fd, level, name, &value, &length), 0) << strerror(errno);
    return value;
}

TEST_F(TcpLiveness, SocketsNoticeAVanishedHostEvenWhenIdle) {
    // Keepalive after the bound (whole seconds), and no byte left
    // unacknowledged longer than the bound: both ends.
    ASSERT_NO_FATAL_FAILURE(Connect());
    const std::vector<int> fds = SocketsOfPort(static_cast<uint16_t>(std::stoi(port)));
    ASSERT_EQ(fds.size(), 2u);
    for (const int fd : fds) {
        EXPECT_EQ(IntOption(fd, SOL_SOCKET, SO_KEEPALIVE), 1);
        EXPECT_EQ(IntOption(fd, IPPROTO_TCP, TCP_KEEPIDLE), 1);
        EXPECT_EQ(IntOption(fd, IPPROTO_TCP, TCP_KEEPINTVL), 1);
        EXPECT_EQ(IntOption(fd, IPPROTO_TCP, TCP_USER_TIMEOUT), kBoundMs);
    }
}

// Through the public API, as an application sees it: the write's error,
// the flush flushed, RPMA_CONN_LOST.
TEST(TcpLivenessApi, SilentPeerGivesRetryExceededAndConnLost) {
    RawListener raw;
    ibv_context *ctx = nullptr;
    ASSERT_EQ(rpma_utils_get_ibv_context("127.0.0.1", RPMA_UTIL_IBV_CONTEXT_REMOTE, &ctx), 0);
    rpma_peer *peer = nullptr;
    ASSERT_EQ(rpma_peer_new(ctx, &peer), 0);
    rpma_conn_req *req = nullptr;
    ASSERT_EQ(rpma_conn_req_new(peer, "127.0.0.1", raw.Port().c_str(), nullptr, &req), 0);
    rpma_conn *conn = nullptr;
    ASSERT_EQ(rpma_conn_req_connect(&req, nullptr, &conn), 0);
    RawPeer server = raw.Accept();
    ASSERT_TRUE(server.ReadHandshake(wire::Opcode::kConnectRequest));
    ASSERT_TRUE(server.SendHandshake(wire::Opcode::kAccept, 16));
    rpma_conn_event event = RPMA_CONN_UNDEFINED;
    ASSERT_EQ(rpma_conn_next_event(conn, &event), 0);
    ASSERT_EQ(event, RPMA_CONN_ESTABLISHED);

    std::vector<uint8_t> memory(4096);
    rpma_mr_local *mr = nullptr;
    ASSERT_EQ(rpma_mr_reg(peer, memory.data(), memory.size(),
                          RPMA_MR_USAGE_WRITE_SRC | RPMA_MR_USAGE_WRITE_DST |
                              RPMA_MR_USAGE_FLUSH_TYPE_VISIBILITY,
                          &mr),
              0);
    // The "remote" region: this one's descriptor (the silent peer never
    // looks at it anyway).
    size_t size = 0;
    ASSERT_EQ(rpma_mr_get_descriptor_size(mr, &size), 0);
    std::vector<uint8_t> descriptor(size);
    ASSERT_EQ(rpma_mr_get_descriptor(mr, descriptor.data()), 0);
    rpma_mr_remote *remote = nullptr;
    ASSERT_EQ(rpma_mr_remote_from_descriptor(descriptor.data(), size, &remote), 0);

    int write_context = 1;
    int flush_context = 2;
    const Clock::time_point posted = Clock::now();
    ASSERT_EQ(rpma_write(conn, remote, 0, mr, 0, 64, RPMA_F_COMPLETION_ON_ERROR, &write_context),
              0);
    ASSERT_EQ(rpma_flush(conn, remote, 0, 64, RPMA_FLUSH_TYPE_VISIBILITY, RPMA_F_COMPLETION_ALWAYS,
                         &flush_context),
              0);
    rpma_cq *cq = nullptr;
    ASSERT_EQ(rpma_conn_get_cq(conn, &cq), 0);
    int cq_fd = -1;
    ASSERT_EQ(rpma_cq_get_fd(cq, &cq_fd), 0);
    std::vector<ibv_wc> wcs;
    while (wcs.size() < 2) {
        // Bounded, so that a provider without liveness fails here.
        ASSERT_TRUE(WaitReadable(cq_fd))
            << "no completion after " << MillisecondsSince(posted) << " ms";
        ASSERT_EQ(rpma_cq_wait(cq), 0);
        ibv_wc wc[2];
        int n = 0;
        const int rc = rpma_cq_get_wc(cq, 2, wc, &n);
        if (rc == RPMA_E_NO_COMPLETION)
            continue;
        ASSERT_EQ(rc, 0);
        wcs.insert(wcs.end(), wc, wc + n);
    }
    const long long elapsed = MillisecondsSince(posted);
    EXPECT_EQ(wcs[0].wr_id, reinterpret_cast<uintptr_t>(&write_context));
    EXPECT_EQ(wcs[0].status, IBV_WC_RETRY_EXC_ERR) << ibv_wc_status_str(wcs[0].status);
    EXPECT_EQ(wcs[1].wr_id, reinterpret_cast<uintptr_t>(&flush_context));
    EXPECT_EQ(wcs[1].status, IBV_WC_WR_FLUSH_ERR) << ibv_wc_status_str(wcs[1].status);
    EXPECT_GE(elapsed, kBoundMs);
    EXPECT_LT(elapsed, 2 * kBoundMs + 1000);
    ASSERT_EQ(rpma_conn_next_event(conn, &event), 0);
    EXPECT_EQ(event, RPMA_CONN_LOST);

    EXPECT_EQ(rpma_mr_remote_delete(&remote), 0);
    EXPECT_EQ(rpma_mr_dereg(&mr), 0);
    EXPECT_EQ(rpma_conn_disconnect(conn), 0);
    EXPECT_EQ(rpma_conn_delete(&conn), 0);
    EXPECT_EQ(rpma_peer_delete(&peer), 0);
}

}  // namespace
}  // namespace rpma::provider::tcp::testing
