// The provider as an initiator facing a scripted raw server that plays
// sequence-number games with its answers: ACKs for requests never sent,
// covering a READ, or going backwards; READ_RESPONSEs for no READ, with the
// wrong sequence or the wrong length; NAKs for nothing outstanding. An
// answer that cannot be true breaks the connection: the outstanding work
// requests complete in error (the oldest with IBV_WC_BAD_RESP_ERR, as a
// verbs requester reports a responder's malformed answer, the others
// flushed), no byte of a broken
// answer reaches a READ's destination, and the application is told
// CONNECT_ERROR. A stale ACK is harmless and ignored.
#include <cstdint>
#include <cstring>
#include <functional>
#include <utility>
#include <vector>

#include "tests/unit/provider/tcp/tcp_raw_peer.h"
#include "tests/unit/provider/tcp/tcp_test_support.h"

namespace rpma::provider::tcp::testing {
namespace {

constexpr int kPromptMs = 1000;
constexpr uint32_t kReadLength = 4096;

class TcpHostileAnswers : public HostilePeerTest {
  protected:
    void SetUp() override {
        HostilePeerTest::SetUp();
        local_ = std::make_unique<Buffer>(*client_pd, 2 * kReadLength, kRemoteAll);
    }
    void TearDown() override { client.id.reset(); }

    // A fresh connection to a fresh scripted server.
    void Connect(RawListener &raw_listener, RawPeer *raw) {
        memset(local_->data(), 0, local_->size());
        ASSERT_NO_FATAL_FAILURE(ConnectToScripted(raw_listener, raw));
    }
    // A signaled 64-byte WRITE; the server reads its request, numbered
    // `sequence`.
    void PostWrite(RawPeer &raw, uint64_t wr_id, uint64_t sequence) {
        ibv_sge sge = local_->Sge(0, 64);
        ASSERT_EQ(client.qp().PostSend(SendWr(IBV_WR_RDMA_WRITE, &sge, wr_id, 0x10000, 7)), 0);
        ASSERT_NO_FATAL_FAILURE(ExpectRequest(raw, wire::Opcode::kWrite, sequence));
    }
    // A signaled READ of kReadLength into the `slot`th half of local_.
    void PostRead(RawPeer &raw, uint64_t wr_id, uint64_t sequence, int slot) {
        ibv_sge sge = local_->Sge(slot * kReadLength, kReadLength);
        ASSERT_EQ(client.qp().PostSend(SendWr(IBV_WR_RDMA_READ, &sge, wr_id, 0x10000, 7)), 0);
        ASSERT_NO_FATAL_FAILURE(ExpectRequest(raw, wire::Opcode::kReadRequest, sequence));
    }
    void ExpectRequest(RawPeer &raw, wire::Opcode opcode, uint64_t sequence) {
        wire::Header request;
        std::vector<uint8_t> payload;
        do {  // an ACK_REQUEST may come first when the host is slow
            ASSERT_TRUE(raw.ReadMessage(&request, &payload));
        } while (request.opcode == wire::Opcode::kAckRequest);
        EXPECT_EQ(request.opcode, opcode);
        EXPECT_EQ(request.sequence, sequence);
    }

    static bool Answer(RawPeer &raw, wire::Opcode opcode, uint64_t sequence, uint32_t length = 0,
                       uint32_t status = 0) {
        wire::Header answer;
        answer.opcode = opcode;
        answer.sequence = sequence;
        answer.length = length;
        answer.rkey = status;
        const std::vector<uint8_t> payload(length, 0xab);
        return raw.SendRequest(answer, payload);
    }

    // The work requests complete, in order, as `expected` says; the
    // connection breaks and closes; no READ destination was written.
    void ExpectBroken(RawPeer &raw,
                      const std::vector<std::pair<uint64_t, ibv_wc_status>> &expected) {
        const std::vector<ibv_wc> completions = client.send.Wait(expected.size(), kPromptMs);
        ASSERT_EQ(completions.size(), expected.size());
        for (size_t i = 0; i < expected.size(); ++i) {
            EXPECT_EQ(completions[i].wr_id, expected[i].first) << i;
            EXPECT_EQ(completions[i].status, expected[i].second)
                << i << ": " << ibv_wc_status_str(completions[i].status);
        }
        EXPECT_EQ(WaitEventType(*client.id, kPromptMs), CmEventType::kConnectError);
        EXPECT_EQ(client.send.PollNow(), 0);
        EXPECT_TRUE(raw.WaitClosed(kPromptMs));
        for (size_t i = 0; i < local_->size(); ++i)
            ASSERT_EQ(local_->data()[i], 0) << "byte " << i << " of the READ destinations";
    }

    struct Case {
        const char *name;
        // Posts, answers, and says how the work requests must complete.
        std::function<std::vector<std::pair<uint64_t, ibv_wc_status>>(RawPeer &)> play;
    };
    void RunBrokenCases(const std::vector<Case> &cases) {
        for (const Case &c : cases) {
            SCOPED_TRACE(c.name);
            RawListener raw_listener;
            RawPeer raw;
            ASSERT_NO_FATAL_FAILURE(Connect(raw_listener, &raw));
            const auto expected = c.play(raw);
            ASSERT_FALSE(::testing::Test::HasFatalFailure());
            ASSERT_NO_FATAL_FAILURE(ExpectBroken(raw, expected));
        }
        client.id.reset();
        ASSERT_NO_FATAL_FAILURE(ExpectAnotherConnectionWorks());
    }

    std::unique_ptr<Buffer> local_;
};

TEST_F(TcpHostileAnswers, AckOfARequestNeverSentOrOfAReadBreaksTheConnection) {
    RunBrokenCases({
        {"nothing outstanding",
         [&](RawPeer &raw) {
             EXPECT_TRUE(Answer(raw, wire::Opcode::kAck, 1));
             return std::vector<std::pair<uint64_t, ibv_wc_status>>{};
         }},
        {"beyond the last request",
         [&](RawPeer &raw) {
             PostWrite(raw, 1, 1);
             EXPECT_TRUE(Answer(raw, wire::Opcode::kAck, 2));
             return std::vector<std::pair<uint64_t, ibv_wc_status>>{{1, IBV_WC_BAD_RESP_ERR}};
         }},
        {"2^64 - 1",
         [&](RawPeer &raw) {
             PostWrite(raw, 1, 1);
             EXPECT_TRUE(Answer(raw, wire::Opcode::kAck, UINT64_MAX));
             return std::vector<std::pair<uint64_t, ibv_wc_status>>{{1, IBV_WC_BAD_RESP_ERR}};
         }},
        {"covering a READ, whose data never came",
         [&](RawPeer &raw) {
             PostWrite(raw, 1, 1);
             PostRead(raw, 2, 2, 0);
             EXPECT_TRUE(Answer(raw, wire::Opcode::kAck, 2));
             // The WRITE before the READ was acknowledged for good.
             return std::vector<std::pair<uint64_t, ibv_wc_status>>{{1, IBV_WC_SUCCESS},
                                                                    {2, IBV_WC_BAD_RESP_ERR}};
         }},
    });
}

// A SEND carries a cumulative ACK in its header (wire::kCarriesAck); one
// for a request never sent breaks the connection before the SEND is
// delivered: the posted receive is flushed, not filled.
TEST_F(TcpHostileAnswers, AckCarriedByASendForARequestNeverSentBreaksTheConnection) {
    RawListener raw_listener;
    RawPeer raw;
    ASSERT_NO_FATAL_FAILURE(Connect(raw_listener, &raw));
    ibv_sge sge = local_->Sge(0, kReadLength);
    ASSERT_EQ(client.qp().PostRecv(RecvWr(&sge, 5)), 0);
    wire::Header send =
        RequestHeader(wire::Opcode::kSend, 1, /*remote_addr=*/3, 0, 64, wire::kCarriesAck);
    ASSERT_TRUE(raw.SendRequest(send, std::vector<uint8_t>(64, 0xab)));
    const ibv_wc wc = client.recv.WaitOne();
    EXPECT_EQ(wc.wr_id, 5u);
    EXPECT_EQ(wc.status, IBV_WC_WR_FLUSH_ERR);
    ASSERT_NO_FATAL_FAILURE(ExpectBroken(raw, {}));
    client.id.reset();
    ASSERT_NO_FATAL_FAILURE(ExpectAnotherConnectionWorks());
}

// ACKs are cumulative: one for less than was acknowledged already (or for
// 0) says nothing new, as a duplicate ACK on RC, and changes nothing.
TEST_F(TcpHostileAnswers, AckGoingBackwardsIsIgnored) {
    RawListener raw_listener;
    RawPeer raw;
    ASSERT_NO_FATAL_FAILURE(Connect(raw_listener, &raw));
    ASSERT_NO_FATAL_FAILURE(PostWrite(raw, 1, 1));
    ASSERT_NO_FATAL_FAILURE(PostWrite(raw, 2, 2));
    ASSERT_TRUE(Answer(raw, wire::Opcode::kAck, 2));
    std::vector<ibv_wc> completions = client.send.Wait(2);
    ASSERT_EQ(completions.size(), 2u);
    EXPECT_EQ(completions[0].status, IBV_WC_SUCCESS);
    EXPECT_EQ(completions[1].status, IBV_WC_SUCCESS);
    ASSERT_TRUE(Answer(raw, wire::Opcode::kAck, 1));
    ASSERT_TRUE(Answer(raw, wire::Opcode::kAck, 0));
    ASSERT_NO_FATAL_FAILURE(PostWrite(raw, 3, 3));
    ASSERT_TRUE(Answer(raw, wire::Opcode::kAck, 3));
    const ibv_wc third = client.send.WaitOne();
    EXPECT_EQ(third.wr_id, 3u);
    EXPECT_EQ(third.status, IBV_WC_SUCCESS);
    EXPECT_EQ(client.send.PollNow(), 0);
    EXPECT_FALSE(WaitEvent(*client.id, 0).has_value());
}

TEST_F(TcpHostileAnswers, ReadResponseForNoOutstandingReadBreaksTheConnection) {
    RunBrokenCases({
        {"nothing outstanding",
         [&](RawPeer &raw) {
             EXPECT_TRUE(Answer(raw, wire::Opcode::kReadResponse, 1, 8));
             return std::vector<std::pair<uint64_t, ibv_wc_status>>{};
         }},
        {"answering a WRITE",
         [&](RawPeer &raw) {
             PostWrite(raw, 1, 1);
             EXPECT_TRUE(Answer(raw, wire::Opcode::kReadResponse, 1, 64));
             return std::vector<std::pair<uint64_t, ibv_wc_status>>{{1, IBV_WC_BAD_RESP_ERR}};
         }},
        {"answering a READ already answered",
         [&](RawPeer &raw) {
             PostRead(raw, 1, 1, 0);
             EXPECT_TRUE(Answer(raw, wire::Opcode::kReadResponse, 1, kReadLength));
             EXPECT_EQ(client.send.WaitOne().status, IBV_WC_SUCCESS);
             memset(local_->data(), 0, local_->size());
             EXPECT_TRUE(Answer(raw, wire::Opcode::kReadResponse, 1, kReadLength));
             return std::vector<std::pair<uint64_t, ibv_wc_status>>{};
         }},
    });
}

TEST_F(TcpHostileAnswers, ReadResponseOfTheWrongSequenceOrLengthBreaksTheConnection) {
    const auto read_answered = [&](uint64_t sequence, uint32_t length) {
        return [&, sequence, length](RawPeer &raw) {
            PostRead(raw, 1, 1, 0);
            EXPECT_TRUE(Answer(raw, wire::Opcode::kReadResponse, sequence, length));
            return std::vector<std::pair<uint64_t, ibv_wc_status>>{{1, IBV_WC_BAD_RESP_ERR}};
        };
    };
    RunBrokenCases({
        {"a sequence never sent", read_answered(2, kReadLength)},
        {"sequence 0", read_answered(0, kReadLength)},
        {"shorter than the READ", read_answered(1, kReadLength - 1)},
        {"longer than the READ", read_answered(1, kReadLength + 1)},
        {"empty", read_answered(1, 0)},
        {"the second of two READs first",
         [&](RawPeer &raw) {
             PostRead(raw, 1, 1, 0);
             PostRead(raw, 2, 2, 1);
             EXPECT_TRUE(Answer(raw, wire::Opcode::kReadResponse, 2, kReadLength));
             return std::vector<std::pair<uint64_t, ibv_wc_status>>{{1, IBV_WC_BAD_RESP_ERR},
                                                                    {2, IBV_WC_WR_FLUSH_ERR}};
         }},
        {"4 GiB declared",
         [&](RawPeer &raw) {
             PostRead(raw, 1, 1, 0);
             wire::Header answer;
             answer.opcode = wire::Opcode::kReadResponse;
             answer.sequence = 1;
             answer.length = UINT32_MAX;
             EXPECT_TRUE(raw.SendHeader(answer));
             return std::vector<std::pair<uint64_t, ibv_wc_status>>{{1, IBV_WC_BAD_RESP_ERR}};
         }},
    });
}

// A half-open server (shutdown SHUT_WR) inside a READ_RESPONSE: the READ
// fails with IBV_WC_RETRY_EXC_ERR, as when the peer vanishes; what arrived
// of its data is in the destination (as a failed RDMA READ may leave it),
// nothing beyond.
TEST_F(TcpHostileAnswers, HalfClosedInsideAReadResponseFailsTheRead) {
    constexpr size_t kArrived = 1000;
    RawListener raw_listener;
    RawPeer raw;
    ASSERT_NO_FATAL_FAILURE(Connect(raw_listener, &raw));
    ASSERT_NO_FATAL_FAILURE(PostRead(raw, 1, 1, 0));
    wire::Header response;
    response.opcode = wire::Opcode::kReadResponse;
    response.sequence = 1;
    response.length = kReadLength;
    ASSERT_TRUE(raw.SendHeader(response));
    const std::vector<uint8_t> part(kArrived, 0xab);
    ASSERT_TRUE(raw.Send(part.data(), part.size()));
    ASSERT_TRUE(raw.ShutdownWrite());
    const ibv_wc wc = client.send.WaitOne();
    EXPECT_EQ(wc.wr_id, 1u);
    EXPECT_EQ(wc.status, IBV_WC_RETRY_EXC_ERR);
    EXPECT_EQ(WaitEventType(*client.id, kPromptMs), CmEventType::kConnectError);
    EXPECT_TRUE(raw.WaitClosed(kPromptMs));
    for (size_t i = 0; i < local_->size(); ++i)
        ASSERT_EQ(local_->data()[i], i < kArrived ? 0xab : 0) << "byte " << i;
    client.id.reset();
    ASSERT_NO_FATAL_FAILURE(ExpectAnotherConnectionWorks());
}

// A READ's destination deregistered while its response arrives: the READ
// fails with IBV_WC_LOC_PROT_ERR, the connection breaks, and nothing more
// is written into the destination after the deregistration returned.
TEST_F(TcpHostileAnswers, DestinationDeregisteredUnderAnArrivingResponseTakesNoMoreOfIt) {
    constexpr uint32_t kLength = 1 << 20;
    constexpr size_t kFirstPart = 64 << 10;
    RawListener raw_listener;
    RawPeer raw;
    ASSERT_NO_FATAL_FAILURE(Connect(raw_listener, &raw));
    Buffer destination(*client_pd, kLength, kRemoteAll);
    ibv_sge sge = destination.Sge(0, kLength);
    ASSERT_EQ(client.qp().PostSend(SendWr(IBV_WR_RDMA_READ, &sge, 1, 0x10000, 7)), 0);
    ASSERT_NO_FATAL_FAILURE(ExpectRequest(raw, wire::Opcode::kReadRequest, 1));
    wire::Header response;
    response.opcode = wire::Opcode::kReadResponse;
    response.sequence = 1;
    response.length = kLength;
    ASSERT_TRUE(raw.SendHeader(response));
    const std::vector<uint8_t> first(kFirstPart, 0xab);
    ASSERT_TRUE(raw.Send(first.data(), first.size()));
    ASSERT_TRUE(WaitForByte(&destination.data()[kFirstPart - 1], 0xab));
    destination.Deregister();
    const std::vector<uint8_t> rest(kLength - kFirstPart, 0xcd);
    raw.Send(rest.data(), rest.size());  // may meet the close
    const ibv_wc wc = client.send.WaitOne();
    EXPECT_EQ(wc.wr_id, 1u);
    EXPECT_EQ(wc.status, IBV_WC_LOC_PROT_ERR);
    EXPECT_EQ(WaitEventType(*client.id, kPromptMs), CmEventType::kConnectError);
    EXPECT_TRUE(raw.WaitClosed(kPromptMs));
    for (size_t i = 0; i < kLength; ++i)
        ASSERT_EQ(destination.data()[i], i < kFirstPart ? 0xab : 0) << "byte " << i;
    client.id.reset();
    ASSERT_NO_FATAL_FAILURE(ExpectAnotherConnectionWorks());
}

TEST_F(TcpHostileAnswers, NakForNothingOutstandingBreaksTheConnection) {
    RunBrokenCases({
        {"nothing outstanding",
         [&](RawPeer &raw) {
             EXPECT_TRUE(Answer(raw, wire::Opcode::kNak, 1, 0, IBV_WC_REM_ACCESS_ERR));
             return std::vector<std::pair<uint64_t, ibv_wc_status>>{};
         }},
        {"sequence 0",
         [&](RawPeer &raw) {
             PostWrite(raw, 1, 1);
             EXPECT_TRUE(Answer(raw, wire::Opcode::kNak, 0, 0, IBV_WC_REM_ACCESS_ERR));
             return std::vector<std::pair<uint64_t, ibv_wc_status>>{{1, IBV_WC_BAD_RESP_ERR}};
         }},
        {"beyond the last request",
         [&](RawPeer &raw) {
             PostWrite(raw, 1, 1);
             EXPECT_TRUE(Answer(raw, wire::Opcode::kNak, 2, 0, IBV_WC_REM_ACCESS_ERR));
             return std::vector<std::pair<uint64_t, ibv_wc_status>>{{1, IBV_WC_BAD_RESP_ERR}};
         }},
        // An honest NAK fails the request it names with its status, and
        // one that is no NAK status with IBV_WC_REM_OP_ERR.
        {"of the outstanding request",
         [&](RawPeer &raw) {
             PostWrite(raw, 1, 1);
             PostWrite(raw, 2, 2);
             EXPECT_TRUE(Answer(raw, wire::Opcode::kNak, 2, 0, IBV_WC_REM_ACCESS_ERR));
             return std::vector<std::pair<uint64_t, ibv_wc_status>>{{1, IBV_WC_SUCCESS},
                                                                    {2, IBV_WC_REM_ACCESS_ERR}};
         }},
        {"of an unknown status",
         [&](RawPeer &raw) {
             PostWrite(raw, 1, 1);
             EXPECT_TRUE(Answer(raw, wire::Opcode::kNak, 1, 0, 12345));
             return std::vector<std::pair<uint64_t, ibv_wc_status>>{{1, IBV_WC_REM_OP_ERR}};
         }},
    });
}

}  // namespace
}  // namespace rpma::provider::tcp::testing
