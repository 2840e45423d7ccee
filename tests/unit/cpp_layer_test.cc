// The C++ layer (rpma/rpma.hpp) over a real connection: every wrapper used,
// errors with their codes and messages, moved-from objects inert, and
// destructors that release what they own (seen from the other side).
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "connected_pair.h"
#include "rpma/rpma.hpp"

namespace {

using rpma_test::TestAddr;

constexpr size_t kSize = 4096;
constexpr int kAlways = RPMA_F_COMPLETION_ALWAYS;

std::span<const std::byte> Bytes(std::string_view text) {
    return std::as_bytes(std::span(text.data(), text.size()));
}

std::string_view Text(std::span<const std::byte> bytes) {
    return std::string_view(reinterpret_cast<const char *>(bytes.data()), bytes.size());
}

rpma::Peer NewPeer() {
    auto peer = rpma::Peer::ForAddress(TestAddr(), RPMA_UTIL_IBV_CONTEXT_LOCAL);
    EXPECT_TRUE(peer.ok()) << peer.error().message();
    return peer.ok() ? std::move(*peer) : rpma::Peer();
}

rpma_conn_event NextEvent(rpma::Connection &conn) {
    auto event = conn.NextEvent();
    EXPECT_TRUE(event.ok()) << event.error().message();
    return event.ok() ? *event : RPMA_CONN_UNDEFINED;
}

// The next completion of cq, waiting for it.
ibv_wc NextCompletion(rpma::CompletionQueue cq) {
    for (;;) {
        auto wc = cq.GetCompletion();
        if (wc.ok())
            return *wc;
        EXPECT_EQ(wc.error().code(), RPMA_E_NO_COMPLETION) << wc.error().message();
        auto waited = cq.Wait();
        EXPECT_TRUE(waited.ok()) << waited.error().message();
        if (::testing::Test::HasFailure())
            return ibv_wc{};
    }
}

// A client and a server connected through the C++ layer, with the private
// data of both sides, each side's region registered.
class CppLayer : public ::testing::Test {
  protected:
    void SetUp() override {
        server_peer_ = NewPeer();
        client_peer_ = NewPeer();
        ASSERT_NE(server_peer_.get(), nullptr);
        port_ = rpma_test::FreePort();
        auto ep = rpma::Endpoint::Listen(server_peer_, TestAddr(), port_);
        ASSERT_TRUE(ep.ok()) << ep.error().message();
        ep_ = std::move(*ep);
        EXPECT_GE(ep_.fd(), 0);

        server_region_.fill(std::byte{'s'});
        client_region_.fill(std::byte{'c'});
        auto server_mr = rpma::MemoryRegion::Register(
            server_peer_, server_region_,
            RPMA_MR_USAGE_WRITE_DST | RPMA_MR_USAGE_READ_SRC | RPMA_MR_USAGE_FLUSH_TYPE_VISIBILITY |
                RPMA_MR_USAGE_RECV);
        ASSERT_TRUE(server_mr.ok()) << server_mr.error().message();
        server_mr_ = std::move(*server_mr);
        auto client_mr = rpma::MemoryRegion::Register(
            client_peer_, client_region_,
            RPMA_MR_USAGE_WRITE_SRC | RPMA_MR_USAGE_READ_DST | RPMA_MR_USAGE_SEND);
        ASSERT_TRUE(client_mr.ok()) << client_mr.error().message();
        client_mr_ = std::move(*client_mr);
    }

    // Connects with `server_cfg` shaping the server's side; `move_to`, when
    // set, is the peer the incoming request moves to first.
    void Connect(const rpma::ConnCfg *server_cfg = nullptr, rpma::Peer *move_to = nullptr) {
        auto outgoing = rpma::ConnReq::New(client_peer_, TestAddr(), port_);
        ASSERT_TRUE(outgoing.ok()) << outgoing.error().message();
        auto client = outgoing->Connect(Bytes("hello"));
        ASSERT_TRUE(client.ok()) << client.error().message();
        EXPECT_EQ(outgoing->get(), nullptr) << "Connect consumes the request";
        client_ = std::move(*client);

        auto incoming = ep_.Next(server_cfg);
        ASSERT_TRUE(incoming.ok()) << incoming.error().message();
        auto pdata = incoming->PrivateData();
        ASSERT_TRUE(pdata.ok()) << pdata.error().message();
        EXPECT_EQ(Text(*pdata).substr(0, 5), "hello");
        if (move_to != nullptr) {
            auto moved = incoming->MoveToPeer(*move_to);
            ASSERT_TRUE(moved.ok()) << moved.error().message();
        }
        auto server = incoming->Connect(Bytes("welcome"));
        ASSERT_TRUE(server.ok()) << server.error().message();
        server_ = std::move(*server);

        EXPECT_EQ(NextEvent(client_), RPMA_CONN_ESTABLISHED);
        EXPECT_EQ(NextEvent(server_), RPMA_CONN_ESTABLISHED);
        auto reply = client_.PrivateData();
        ASSERT_TRUE(reply.ok()) << reply.error().message();
        EXPECT_EQ(Text(*reply).substr(0, 7), "welcome");
    }

    // The graceful end, as connected_pair.h's Disconnect.
    void Disconnect() {
        ASSERT_TRUE(client_.Disconnect().ok());
        EXPECT_EQ(NextEvent(server_), RPMA_CONN_CLOSED);
        ASSERT_TRUE(server_.Disconnect().ok());
        EXPECT_EQ(NextEvent(client_), RPMA_CONN_CLOSED);
    }

    rpma::RemoteMemory ServerRegionAtClient() {
        auto descriptor = server_mr_.Descriptor();
        EXPECT_TRUE(descriptor.ok()) << descriptor.error().message();
        auto remote = rpma::RemoteMemory::FromDescriptor(*descriptor);
        EXPECT_TRUE(remote.ok()) << remote.error().message();
        return remote.ok() ? std::move(*remote) : rpma::RemoteMemory();
    }

    // Declared in lifetime order: destroyed bottom-up, peers last.
    rpma::Peer server_peer_;
    rpma::Peer client_peer_;
    alignas(64) std::array<std::byte, kSize> server_region_{};
    alignas(64) std::array<std::byte, kSize> client_region_{};
    rpma::MemoryRegion server_mr_;
    rpma::MemoryRegion client_mr_;
    std::string port_;
    rpma::Endpoint ep_;
    rpma::Connection client_;
    rpma::Connection server_;
};

TEST_F(CppLayer, WriteFlushAndReadBackThroughTheWrappers) {
    Connect();
    ASSERT_FALSE(HasFatalFailure());
    rpma::RemoteMemory remote = ServerRegionAtClient();
    auto size = remote.size();
    ASSERT_TRUE(size.ok());
    EXPECT_EQ(*size, kSize);
    auto flush_type = remote.FlushType();
    ASSERT_TRUE(flush_type.ok());
    EXPECT_EQ(*flush_type, RPMA_MR_USAGE_FLUSH_TYPE_VISIBILITY);
    EXPECT_EQ(server_mr_.bytes().data(), server_region_.data());
    EXPECT_EQ(server_mr_.bytes().size(), kSize);

    memcpy(client_region_.data(), "written!", 8);
    ASSERT_TRUE(client_.Write(remote, 16, client_mr_, 0, 8, kAlways, &remote).ok());
    ASSERT_TRUE(
        client_.Flush(remote, 16, 8, RPMA_FLUSH_TYPE_VISIBILITY, kAlways, &client_mr_).ok());
    ibv_wc write = NextCompletion(client_.Cq());
    EXPECT_EQ(write.status, IBV_WC_SUCCESS) << ibv_wc_status_str(write.status);
    EXPECT_EQ(write.opcode, IBV_WC_RDMA_WRITE);
    EXPECT_EQ(write.wr_id, reinterpret_cast<uintptr_t>(&remote));
    ibv_wc flush = NextCompletion(client_.Cq());
    EXPECT_EQ(flush.status, IBV_WC_SUCCESS) << ibv_wc_status_str(flush.status);
    EXPECT_EQ(flush.wr_id, reinterpret_cast<uintptr_t>(&client_mr_));
    EXPECT_EQ(memcmp(server_region_.data() + 16, "written!", 8), 0);

    ASSERT_TRUE(client_.Read(client_mr_, 100, remote, 16, 8, kAlways, nullptr).ok());
    std::array<ibv_wc, 4> completions{};
    int got = 0;
    while (got == 0) {
        auto polled = client_.Cq().Poll(completions);
        ASSERT_TRUE(polled.ok()) << polled.error().message();
        got = *polled;
        if (got == 0) {
            ASSERT_TRUE(client_.Cq().Wait().ok());
        }
    }
    EXPECT_EQ(got, 1);
    EXPECT_EQ(completions[0].opcode, IBV_WC_RDMA_READ);
    EXPECT_EQ(memcmp(client_region_.data() + 100, "written!", 8), 0);

    const char word[8] = {'a', 't', 'o', 'm', 'i', 'c', '!', '!'};
    ASSERT_TRUE(client_.AtomicWrite(remote, 64, word, kAlways, nullptr).ok());
    EXPECT_EQ(NextCompletion(client_.Cq()).status, IBV_WC_SUCCESS);
    EXPECT_EQ(memcmp(server_region_.data() + 64, word, 8), 0);

    auto qp_num = client_.QpNum();
    ASSERT_TRUE(qp_num.ok());
    EXPECT_NE(*qp_num, 0u);
    auto event_fd = client_.EventFd();
    ASSERT_TRUE(event_fd.ok());
    EXPECT_GE(*event_fd, 0);
    auto cq_fd = client_.Cq().fd();
    ASSERT_TRUE(cq_fd.ok());
    EXPECT_GE(*cq_fd, 0);
    EXPECT_TRUE(client_.Rcq().empty()) << "no receive CQ was configured";
    Disconnect();
}

TEST_F(CppLayer, SendsAreReceivedThroughASharedChannelAndTheReceiveCq) {
    auto cfg = rpma::ConnCfg::New();
    ASSERT_TRUE(cfg.ok());
    ASSERT_TRUE(cfg->SetTimeout(2000).ok());
    ASSERT_TRUE(cfg->SetCqSize(8).ok());
    ASSERT_TRUE(cfg->SetRcqSize(8).ok());
    ASSERT_TRUE(cfg->SetSqSize(8).ok());
    ASSERT_TRUE(cfg->SetRqSize(8).ok());
    ASSERT_TRUE(cfg->SetSharedCompletionChannel(true).ok());
    Connect(&*cfg);
    ASSERT_FALSE(HasFatalFailure());
    ASSERT_FALSE(server_.Rcq().empty());
    auto compl_fd = server_.CompletionFd();
    ASSERT_TRUE(compl_fd.ok()) << compl_fd.error().message();

    ASSERT_TRUE(server_.Recv(server_mr_, 0, 16, &server_mr_).ok());
    ASSERT_TRUE(server_.Recv(server_mr_, 16, 16, &server_region_).ok());
    memcpy(client_region_.data(), "message", 8);
    ASSERT_TRUE(client_.Send(client_mr_, 0, 8, kAlways, nullptr).ok());
    ASSERT_TRUE(client_.SendWithImm(client_mr_, 0, 8, kAlways, 0x1234, nullptr).ok());
    EXPECT_EQ(NextCompletion(client_.Cq()).opcode, IBV_WC_SEND);
    EXPECT_EQ(NextCompletion(client_.Cq()).opcode, IBV_WC_SEND);

    int received = 0;
    while (received < 2) {
        auto fired = server_.Wait();
        ASSERT_TRUE(fired.ok()) << fired.error().message();
        EXPECT_TRUE(fired->is_rcq);
        EXPECT_EQ(fired->cq.get(), server_.Rcq().get());
        auto wc = fired->cq.GetCompletion();
        for (; wc.ok(); wc = fired->cq.GetCompletion()) {
            EXPECT_EQ(wc->opcode, IBV_WC_RECV);
            EXPECT_EQ(wc->byte_len, 8u);
            ++received;
        }
        EXPECT_EQ(wc.error().code(), RPMA_E_NO_COMPLETION);
    }
    EXPECT_EQ(memcmp(server_region_.data(), "message", 8), 0);
    EXPECT_EQ(memcmp(server_region_.data() + 16, "message", 8), 0);
    Disconnect();
}

TEST_F(CppLayer, WriteWithImmediateReachesTheServersReceive) {
    Connect();
    ASSERT_FALSE(HasFatalFailure());
    rpma::RemoteMemory remote = ServerRegionAtClient();
    ASSERT_TRUE(server_.Recv(server_mr_, 0, 0, nullptr).ok());
    ASSERT_TRUE(client_.WriteWithImm(remote, 0, client_mr_, 0, 8, kAlways, 0xabcd, nullptr).ok());
    EXPECT_EQ(NextCompletion(client_.Cq()).status, IBV_WC_SUCCESS);
    ibv_wc wc = NextCompletion(server_.Cq());
    EXPECT_EQ(wc.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
    EXPECT_EQ(ntohl(wc.imm_data), 0xabcdu);
    Disconnect();
}

TEST_F(CppLayer, ARequestMovedToAnotherPeerReachesOnlyThatPeersMemory) {
    rpma::Peer other = NewPeer();
    alignas(64) std::array<std::byte, kSize> other_region{};
    auto other_mr = rpma::MemoryRegion::Register(other, other_region, RPMA_MR_USAGE_WRITE_DST);
    ASSERT_TRUE(other_mr.ok());
    {
        Connect(nullptr, &other);
        ASSERT_FALSE(HasFatalFailure());
        auto descriptor = other_mr->Descriptor();
        ASSERT_TRUE(descriptor.ok());
        auto remote = rpma::RemoteMemory::FromDescriptor(*descriptor);
        ASSERT_TRUE(remote.ok());
        memcpy(client_region_.data(), "isolated", 8);
        ASSERT_TRUE(client_.Write(*remote, 0, client_mr_, 0, 8, kAlways, nullptr).ok());
        EXPECT_EQ(NextCompletion(client_.Cq()).status, IBV_WC_SUCCESS);
        EXPECT_EQ(memcmp(other_region.data(), "isolated", 8), 0);

        rpma::RemoteMemory endpoint_peers = ServerRegionAtClient();
        ASSERT_TRUE(client_.Write(endpoint_peers, 0, client_mr_, 0, 8, kAlways, nullptr).ok());
        EXPECT_EQ(NextCompletion(client_.Cq()).status, IBV_WC_REM_ACCESS_ERR);
        EXPECT_EQ(server_region_[0], std::byte{'s'});
        // The connection is broken for good; the peer it moved to goes last.
        client_ = rpma::Connection();
        server_ = rpma::Connection();
    }
}

TEST_F(CppLayer, AnSrqIsMadeFromItsCfgAndSetInAConnCfg) {
    auto srq_cfg = rpma::SrqCfg::New();
    ASSERT_TRUE(srq_cfg.ok());
    ASSERT_TRUE(srq_cfg->SetRqSize(4).ok());
    ASSERT_TRUE(srq_cfg->SetRcqSize(4).ok());
    auto srq = rpma::Srq::New(server_peer_, &*srq_cfg);
    ASSERT_TRUE(srq.ok()) << srq.error().message();
    EXPECT_FALSE(srq->Rcq().empty());
    ASSERT_TRUE(srq->Recv(server_mr_, 0, 8, nullptr).ok());
    auto cfg = rpma::ConnCfg::New();
    ASSERT_TRUE(cfg.ok());
    ASSERT_TRUE(cfg->SetSrq(*srq).ok());

    Connect(&*cfg);
    ASSERT_FALSE(HasFatalFailure());
    memcpy(client_region_.data(), "to srq", 7);
    ASSERT_TRUE(client_.Send(client_mr_, 0, 7, kAlways, nullptr).ok());
    EXPECT_EQ(NextCompletion(client_.Cq()).status, IBV_WC_SUCCESS);
    ibv_wc wc = NextCompletion(srq->Rcq());
    EXPECT_EQ(wc.opcode, IBV_WC_RECV);
    EXPECT_EQ(memcmp(server_region_.data(), "to srq", 7), 0);
    Disconnect();
    client_ = rpma::Connection();
    server_ = rpma::Connection();  // before the SRQ goes
}

TEST_F(CppLayer, ErrorsCarryTheCodeTheCallAndWhatWentWrong) {
    auto second = rpma::Endpoint::Listen(server_peer_, TestAddr(), port_);
    ASSERT_FALSE(second.ok());
    EXPECT_EQ(second.error().code(), RPMA_E_PROVIDER);
    // errno as it was when the call failed, not after the logging that followed.
    EXPECT_EQ(second.error().message(), "rpma_ep_listen(" + std::string(TestAddr()) + ":" + port_ +
                                            "): Provider error occurred: " + strerror(EADDRINUSE));

    auto cfg = rpma::PeerCfg::FromDescriptor({});
    ASSERT_FALSE(cfg.ok());
    EXPECT_EQ(cfg.error().code(), RPMA_E_INVAL);
    EXPECT_EQ(cfg.error().message(), "rpma_peer_cfg_from_descriptor: Invalid argument");

    rpma::ConnCfg no_cfg;
    auto unset = no_cfg.SetTimeout(5);
    ASSERT_FALSE(unset.ok());
    EXPECT_EQ(unset.error().message(), "rpma_conn_cfg_set_timeout(5 ms): Invalid argument");

    auto peer = rpma::Peer::ForAddress("203.0.113.1", RPMA_UTIL_IBV_CONTEXT_LOCAL);
    ASSERT_FALSE(peer.ok());
    EXPECT_EQ(peer.error().message().rfind("rpma_utils_get_ibv_context(203.0.113.1): ", 0), 0u)
        << peer.error().message();

    // Nothing pending: the non-blocking endpoint passes RPMA_E_NO_EVENT on.
    ASSERT_EQ(fcntl(ep_.fd(), F_SETFL, fcntl(ep_.fd(), F_GETFL) | O_NONBLOCK), 0);
    auto none = ep_.Next();
    ASSERT_FALSE(none.ok());
    EXPECT_EQ(none.error().code(), RPMA_E_NO_EVENT);

    auto too_long = rpma::ConnReq::New(client_peer_, TestAddr(), port_);
    ASSERT_TRUE(too_long.ok());
    std::array<std::byte, 256> pdata{};
    auto refused = too_long->Connect(pdata);
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.error().code(), RPMA_E_INVAL);
    EXPECT_EQ(too_long->get(), nullptr) << "consumed";
}

TEST_F(CppLayer, PeerCfgTravelsAsADescriptor) {
    auto cfg = rpma::PeerCfg::New();
    ASSERT_TRUE(cfg.ok());
    ASSERT_TRUE(cfg->SetDirectWriteToPmem(true).ok());
    auto descriptor = cfg->Descriptor();
    ASSERT_TRUE(descriptor.ok());
    auto copy = rpma::PeerCfg::FromDescriptor(*descriptor);
    ASSERT_TRUE(copy.ok()) << copy.error().message();
    auto direct = copy->DirectWriteToPmem();
    ASSERT_TRUE(direct.ok());
    EXPECT_TRUE(*direct);

    Connect();
    ASSERT_FALSE(HasFatalFailure());
    ASSERT_TRUE(client_.ApplyRemotePeerCfg(*copy).ok());
    Disconnect();
}

TEST_F(CppLayer, MovedFromObjectsAreInert) {
    rpma::Peer peer = std::move(server_peer_);
    EXPECT_EQ(server_peer_.get(), nullptr);
    EXPECT_EQ(server_peer_.context(), nullptr);
    EXPECT_NE(peer.context(), nullptr);

    rpma::MemoryRegion mr = std::move(server_mr_);
    EXPECT_EQ(server_mr_.get(), nullptr);
    EXPECT_TRUE(server_mr_.bytes().empty());
    EXPECT_EQ(mr.bytes().data(), server_region_.data());
    auto descriptor = server_mr_.Descriptor();
    ASSERT_FALSE(descriptor.ok());
    EXPECT_EQ(descriptor.error().code(), RPMA_E_INVAL);

    rpma::Endpoint ep = std::move(ep_);
    EXPECT_EQ(ep_.fd(), -1);
    EXPECT_GE(ep.fd(), 0);
    EXPECT_EQ(ep_.Next().error().code(), RPMA_E_INVAL);

    rpma::Connection empty;
    rpma::Connection moved = std::move(empty);
    EXPECT_EQ(empty.NextEvent().error().code(), RPMA_E_INVAL);
    rpma::RemoteMemory no_remote;
    EXPECT_EQ(empty.Write(no_remote, 0, mr, 0, 8, kAlways, nullptr).error().code(), RPMA_E_INVAL);
    EXPECT_EQ(no_remote.size().error().code(), RPMA_E_INVAL);
    EXPECT_TRUE(empty.Cq().empty());

    rpma::ConnReq req;
    EXPECT_EQ(req.MoveToPeer(peer).error().code(), RPMA_E_INVAL);
    EXPECT_EQ(req.Connect().error().code(), RPMA_E_INVAL);
}

TEST_F(CppLayer, ADroppedIncomingRequestIsRejected) {
    auto outgoing = rpma::ConnReq::New(client_peer_, TestAddr(), port_);
    ASSERT_TRUE(outgoing.ok());
    auto client = outgoing->Connect();
    ASSERT_TRUE(client.ok());
    {
        auto incoming = ep_.Next();
        ASSERT_TRUE(incoming.ok());
    }
    EXPECT_EQ(NextEvent(*client), RPMA_CONN_REJECTED);
}

TEST_F(CppLayer, ADroppedConnectionDisconnectsFirst) {
    Connect();
    ASSERT_FALSE(HasFatalFailure());
    client_ = rpma::Connection();
    EXPECT_EQ(NextEvent(server_), RPMA_CONN_CLOSED);
}

TEST_F(CppLayer, ADroppedEndpointFreesItsPort) {
    ep_ = rpma::Endpoint();
    auto again = rpma::Endpoint::Listen(server_peer_, TestAddr(), port_);
    EXPECT_TRUE(again.ok()) << again.error().message();
}

}  // namespace
