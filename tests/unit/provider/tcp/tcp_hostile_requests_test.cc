// The provider as a target of hostile requests from a scripted raw client:
// READs beyond the region (past its end, straddling it, wrapping 2^64, with
// a wrong rkey, another protection domain's rkey, or a deregistered one),
// requests after a NAK, sequence-number games, requests cut short by a
// half-close, and impossible lengths. Each test pins down what the provider
// answers, what the application sees, and what the region holds afterwards,
// then checks that the process still serves a well-behaved connection.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "tests/unit/provider/tcp/tcp_raw_peer.h"
#include "tests/unit/provider/tcp/tcp_test_support.h"

namespace rpma::provider::tcp::testing {
namespace {

// A refusal or a close comes this soon.
constexpr int kPromptMs = 1000;
constexpr size_t kRegionSize = 4096;

// [from, to) of `data` holds `value` only.
::testing::AssertionResult Holds(const uint8_t *data, size_t from, size_t to, uint8_t value) {
    for (size_t i = from; i < to; ++i) {
        if (data[i] != value)
            return ::testing::AssertionFailure()
                   << "byte " << i << " is " << int{data[i]} << ", not " << int{value};
    }
    return ::testing::AssertionSuccess();
}

class TcpHostileRequests : public HostilePeerTest {
  protected:
    // What the provider sent until it closed the connection, its ACKs left
    // out (none may acknowledge more than `applied`).
    std::vector<RawMessage> AnswersUntilClosed(RawPeer &raw, uint64_t applied) {
        std::vector<RawMessage> messages;
        size_t unfinished = 0;
        EXPECT_TRUE(raw.ReadUntilClosed(&messages, &unfinished, kPromptMs));
        EXPECT_EQ(unfinished, 0u);
        std::vector<RawMessage> answers;
        for (RawMessage &message : messages) {
            if (message.header.opcode == wire::Opcode::kAck)
                EXPECT_LE(message.header.sequence, applied);
            else
                answers.push_back(std::move(message));
        }
        return answers;
    }

    // The provider answered request `sequence` with a NAK of `status`, sent
    // nothing else (no READ_RESPONSE, no region bytes) and closed; the
    // application's connection broke.
    void ExpectNakAndClose(RawPeer &raw, uint64_t sequence, ibv_wc_status status) {
        const std::vector<RawMessage> answers = AnswersUntilClosed(raw, sequence - 1);
        ASSERT_EQ(answers.size(), 1u)
            << (answers.empty() ? "nothing" : wire::OpcodeName(answers.back().header.opcode));
        EXPECT_EQ(answers[0].header.opcode, wire::Opcode::kNak);
        EXPECT_EQ(answers[0].header.sequence, sequence);
        EXPECT_EQ(answers[0].header.rkey, static_cast<uint32_t>(status));
        EXPECT_EQ(WaitEventType(*server.id, kPromptMs), CmEventType::kConnectError);
    }

    // The provider closed without answering anything beyond ACKs of at most
    // `applied`: a protocol violation, not a refused request.
    void ExpectSilentClose(RawPeer &raw, uint64_t applied) {
        const std::vector<RawMessage> answers = AnswersUntilClosed(raw, applied);
        for (const RawMessage &answer : answers)
            ADD_FAILURE() << "answered " << wire::OpcodeName(answer.header.opcode);
        EXPECT_EQ(WaitEventType(*server.id, kPromptMs), CmEventType::kConnectError);
    }
};

// No byte outside a region readable by this protection domain's remote
// peers leaves the target: each such READ is answered with a NAK of
// IBV_WC_REM_ACCESS_ERR, and nothing else, after a READ within the region
// was served on the same connection.
TEST_F(TcpHostileRequests, ReadOutsideTheRegionIsNakedWithRemoteAccessError) {
    Buffer region(*server_pd, kRegionSize, kRemoteAll);
    memset(region.data(), 0x77, kRegionSize);
    Buffer other_domain(*client_pd, kRegionSize, kRemoteAll);
    Buffer write_only(*server_pd, kRegionSize, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    Buffer deregistered(*server_pd, kRegionSize, kRemoteAll);
    const uint32_t deregistered_rkey = deregistered.rkey();
    deregistered.Deregister();
    struct Case {
        const char *name;
        uint64_t addr;
        uint32_t rkey;
        uint32_t length;
    };
    const std::vector<Case> cases = {
        {"past the end", region.addr(kRegionSize), region.rkey(), 1},
        {"straddling the end", region.addr(kRegionSize - 8), region.rkey(), 16},
        {"before the start", region.addr() - 8, region.rkey(), 16},
        {"longer than the region", region.addr(), region.rkey(), uint32_t{1} << 31},
        {"wrapping 2^64", UINT64_MAX - 7, region.rkey(), 16},
        {"wrapping 2^64 from inside", region.addr(64), region.rkey(), UINT32_MAX >> 1},
        {"unknown rkey", region.addr(), 0, 16},
        {"another domain's rkey", other_domain.addr(), other_domain.rkey(), 16},
        {"no remote read access", write_only.addr(), write_only.rkey(), 16},
        {"deregistered region", deregistered.addr(), deregistered_rkey, 16},
    };
    for (const Case &c : cases) {
        SCOPED_TRACE(c.name);
        RawPeer raw;
        ASSERT_NO_FATAL_FAILURE(AcceptScripted(&raw));
        ASSERT_TRUE(raw.SendRequest(
            RequestHeader(wire::Opcode::kReadRequest, 1, region.addr(), region.rkey(), 64)));
        wire::Header response;
        std::vector<uint8_t> payload;
        do {
            ASSERT_TRUE(raw.ReadMessage(&response, &payload));
        } while (response.opcode == wire::Opcode::kAck);
        ASSERT_EQ(response.opcode, wire::Opcode::kReadResponse);
        EXPECT_TRUE(Holds(payload.data(), 0, payload.size(), 0x77));
        ASSERT_TRUE(raw.SendRequest(
            RequestHeader(wire::Opcode::kReadRequest, 2, c.addr, c.rkey, c.length)));
        ASSERT_NO_FATAL_FAILURE(ExpectNakAndClose(raw, 2, IBV_WC_REM_ACCESS_ERR));
    }
    EXPECT_TRUE(Holds(region.data(), 0, kRegionSize, 0x77));
    ASSERT_NO_FATAL_FAILURE(ExpectAnotherConnectionWorks());
}

// Whatever the request, memory outside a region (or misaligned for an
// atomic) is refused on the header with a NAK, and nothing of the request
// lands: a WRITE's payload is not written even where it overlaps the
// region, a WRITE_WITH_IMM consumes no receive (it is flushed with the
// queue pair), a FLUSH persists nothing.
TEST_F(TcpHostileRequests, RequestsOutsideTheRegionAreNakedUnexecuted) {
    Buffer region(*server_pd, kRegionSize, kRemoteAll);
    struct Case {
        const char *name;
        wire::Header request;
        ibv_wc_status status;
    };
    const auto request = [&](wire::Opcode opcode, uint64_t addr, uint32_t length) {
        wire::Header header = RequestHeader(opcode, 1, addr, region.rkey(), length);
        if (opcode == wire::Opcode::kFlush)
            header.flags |= wire::kFlushPersistent;
        return header;
    };
    const std::vector<Case> cases = {
        {"WRITE straddling the end",
         request(wire::Opcode::kWrite, region.addr(kRegionSize - 32), 64), IBV_WC_REM_ACCESS_ERR},
        {"WRITE_WITH_IMM past the end",
         request(wire::Opcode::kWriteWithImm, region.addr(kRegionSize), 64), IBV_WC_REM_ACCESS_ERR},
        {"ATOMIC_WRITE past the end",
         request(wire::Opcode::kAtomicWrite, region.addr(kRegionSize), 8), IBV_WC_REM_ACCESS_ERR},
        {"ATOMIC_WRITE misaligned", request(wire::Opcode::kAtomicWrite, region.addr(4), 8),
         IBV_WC_REM_INV_REQ_ERR},
        {"FLUSH wrapping 2^64", request(wire::Opcode::kFlush, UINT64_MAX - 7, 16),
         IBV_WC_REM_ACCESS_ERR},
    };
    for (const Case &c : cases) {
        SCOPED_TRACE(c.name);
        RawPeer raw;
        ASSERT_NO_FATAL_FAILURE(AcceptScripted(&raw));
        Buffer receive(*server_pd, kRegionSize, kRemoteAll);
        ibv_sge sge = receive.Sge(0, kRegionSize);
        ASSERT_EQ(server.qp().PostRecv(RecvWr(&sge, 9)), 0);
        ASSERT_TRUE(
            raw.SendRequest(c.request, std::vector<uint8_t>(wire::PayloadLength(c.request), 0x11)));
        ASSERT_NO_FATAL_FAILURE(ExpectNakAndClose(raw, 1, c.status));
        const ibv_wc wc = server.recv.WaitOne();
        EXPECT_EQ(wc.wr_id, 9u);
        EXPECT_EQ(wc.status, IBV_WC_WR_FLUSH_ERR);
        EXPECT_TRUE(Holds(receive.data(), 0, kRegionSize, 0));
    }
    EXPECT_TRUE(Holds(region.data(), 0, kRegionSize, 0));
    ASSERT_NO_FATAL_FAILURE(ExpectAnotherConnectionWorks());
}

// After a NAK the target executes nothing more from that peer, whether the
// requests behind the refused one arrived with it (one segment) or after
// the NAK went out, and whether they retry the refused one's number or
// carry the next: no WRITE lands, no READ is answered, and the connection
// closes. A WRITE straddling the region's end writes none of
// its in-bounds part either.
TEST_F(TcpHostileRequests, RequestsAfterANakAreNotExecuted) {
    Buffer region(*server_pd, kRegionSize, kRemoteAll);
    const std::vector<uint8_t> ones(64, 0x11);
    const std::vector<uint8_t> twos(64, 0x22);
    const std::vector<uint8_t> threes(64, 0x33);
    {
        SCOPED_TRACE("in the same segment");
        RawPeer raw;
        ASSERT_NO_FATAL_FAILURE(AcceptScripted(&raw));
        std::vector<uint8_t> burst;
        AppendRequest(
            &burst, RequestHeader(wire::Opcode::kWrite, 1, region.addr(), region.rkey(), 64), ones);
        AppendRequest(&burst,
                      RequestHeader(wire::Opcode::kWrite, 2, region.addr(kRegionSize - 32),
                                    region.rkey(), 64),
                      twos);
        // The refused request retried within the region, then the next.
        AppendRequest(&burst,
                      RequestHeader(wire::Opcode::kWrite, 2, region.addr(128), region.rkey(), 64),
                      threes);
        AppendRequest(&burst,
                      RequestHeader(wire::Opcode::kWrite, 3, region.addr(192), region.rkey(), 64),
                      threes);
        AppendRequest(
            &burst, RequestHeader(wire::Opcode::kReadRequest, 4, region.addr(), region.rkey(), 64),
            {});
        ASSERT_TRUE(raw.Send(burst.data(), burst.size()));
        ASSERT_NO_FATAL_FAILURE(ExpectNakAndClose(raw, 2, IBV_WC_REM_ACCESS_ERR));
        EXPECT_TRUE(Holds(region.data(), 0, 64, 0x11));
        EXPECT_TRUE(Holds(region.data(), 64, kRegionSize, 0));
    }
    memset(region.data(), 0, kRegionSize);
    {
        SCOPED_TRACE("after the NAK");
        RawPeer raw;
        ASSERT_NO_FATAL_FAILURE(AcceptScripted(&raw));
        ASSERT_TRUE(
            raw.SendRequest(RequestHeader(wire::Opcode::kWrite, 1, region.addr(), 0, 64), ones));
        wire::Header nak;
        ASSERT_TRUE(raw.ReadMessage(&nak));
        ASSERT_EQ(nak.opcode, wire::Opcode::kNak);
        EXPECT_EQ(nak.rkey, static_cast<uint32_t>(IBV_WC_REM_ACCESS_ERR));
        // The refused WRITE retried with the region's rkey, then a READ.
        // The connection may be closed already: these sends may fail.
        raw.SendRequest(RequestHeader(wire::Opcode::kWrite, 1, region.addr(), region.rkey(), 64),
                        threes);
        raw.SendRequest(
            RequestHeader(wire::Opcode::kReadRequest, 2, region.addr(), region.rkey(), 64));
        ASSERT_NO_FATAL_FAILURE(ExpectSilentClose(raw, 0));
        EXPECT_TRUE(Holds(region.data(), 0, kRegionSize, 0));
    }
    ASSERT_NO_FATAL_FAILURE(ExpectAnotherConnectionWorks());
}

// Requests are numbered 1, 2, 3, ... per direction. One repeating an old
// number, skipping one, numbered 0 or 2^64 - 1 is a protocol violation:
// the connection closes without executing it or anything behind it, and
// without a NAK (that answers a refused request, not a broken stream).
TEST_F(TcpHostileRequests, RequestOutOfSequenceClosesTheConnectionUnexecuted) {
    Buffer region(*server_pd, kRegionSize, kRemoteAll);
    struct Case {
        const char *name;
        bool first_applied;  // a WRITE numbered 1 comes first
        uint64_t sequence;
    };
    const std::vector<Case> cases = {
        {"repeated", true, 1},
        {"skipped", true, 3},
        {"zero", false, 0},
        {"2^64 - 1", false, UINT64_MAX},
        {"2^64 - 1 after one", true, UINT64_MAX},
    };
    for (const Case &c : cases) {
        SCOPED_TRACE(c.name);
        memset(region.data(), 0, kRegionSize);
        RawPeer raw;
        ASSERT_NO_FATAL_FAILURE(AcceptScripted(&raw));
        uint64_t next = 1;
        if (c.first_applied) {
            ASSERT_TRUE(raw.SendRequest(
                RequestHeader(wire::Opcode::kWrite, next++, region.addr(), region.rkey(), 64),
                std::vector<uint8_t>(64, 0x11)));
        }
        ASSERT_TRUE(raw.SendRequest(
            RequestHeader(wire::Opcode::kWrite, c.sequence, region.addr(64), region.rkey(), 64),
            std::vector<uint8_t>(64, 0x22)));
        // Numbered as expected, but behind the violation.
        raw.SendRequest(
            RequestHeader(wire::Opcode::kWrite, next, region.addr(128), region.rkey(), 64),
            std::vector<uint8_t>(64, 0x33));
        ASSERT_NO_FATAL_FAILURE(ExpectSilentClose(raw, next - 1));
        EXPECT_TRUE(Holds(region.data(), 0, 64, c.first_applied ? 0x11 : 0));
        EXPECT_TRUE(Holds(region.data(), 64, kRegionSize, 0));
    }
    ASSERT_NO_FATAL_FAILURE(ExpectAnotherConnectionWorks());
}

// A region deregistered while a WRITE into it arrives: the rest of the
// payload is refused with a NAK of IBV_WC_REM_ACCESS_ERR and none of it is
// written after the deregistration returned.
TEST_F(TcpHostileRequests, RegionDeregisteredUnderAnArrivingWriteTakesNoMoreOfIt) {
    constexpr size_t kLength = 1 << 20;
    constexpr size_t kFirstPart = 64 << 10;
    Buffer region(*server_pd, kLength, kRemoteAll);
    RawPeer raw;
    ASSERT_NO_FATAL_FAILURE(AcceptScripted(&raw));
    ASSERT_TRUE(raw.SendHeader(
        RequestHeader(wire::Opcode::kWrite, 1, region.addr(), region.rkey(), kLength)));
    const std::vector<uint8_t> first(kFirstPart, 0x11);
    ASSERT_TRUE(raw.Send(first.data(), first.size()));
    ASSERT_TRUE(WaitForByte(&region.data()[kFirstPart - 1], 0x11));
    region.Deregister();
    const std::vector<uint8_t> rest(kLength - kFirstPart, 0x22);
    raw.Send(rest.data(), rest.size());  // may meet the close
    ASSERT_NO_FATAL_FAILURE(ExpectNakAndClose(raw, 1, IBV_WC_REM_ACCESS_ERR));
    EXPECT_TRUE(Holds(region.data(), 0, kFirstPart, 0x11));
    EXPECT_TRUE(Holds(region.data(), kFirstPart, kLength, 0));
    ASSERT_NO_FATAL_FAILURE(ExpectAnotherConnectionWorks());
}

// After the peer's DISCONNECT nothing it sends is a request: a WRITE
// behind it is not executed, and the connection breaks instead of ending
// in an orderly disconnect.
TEST_F(TcpHostileRequests, RequestAfterDisconnectIsNotExecuted) {
    Buffer region(*server_pd, kRegionSize, kRemoteAll);
    RawPeer raw;
    ASSERT_NO_FATAL_FAILURE(AcceptScripted(&raw));
    wire::Header goodbye;
    goodbye.opcode = wire::Opcode::kDisconnect;
    ASSERT_TRUE(raw.SendHeader(goodbye));
    ASSERT_TRUE(
        raw.SendRequest(RequestHeader(wire::Opcode::kWrite, 1, region.addr(), region.rkey(), 64),
                        std::vector<uint8_t>(64, 0x11)));
    std::vector<RawMessage> messages;
    size_t unfinished = 0;
    EXPECT_TRUE(raw.ReadUntilClosed(&messages, &unfinished, kPromptMs));
    EXPECT_EQ(unfinished, 0u);
    for (const RawMessage &message : messages)
        EXPECT_EQ(message.header.opcode, wire::Opcode::kDisconnect);
    EXPECT_EQ(WaitEventType(*server.id, kPromptMs), CmEventType::kConnectError);
    EXPECT_TRUE(Holds(region.data(), 0, kRegionSize, 0));
    ASSERT_NO_FATAL_FAILURE(ExpectAnotherConnectionWorks());
}

// A half-open client (shutdown SHUT_WR) inside a request's header or
// payload: the connection breaks at once. A WRITE cut short leaves what
// arrived of it, as an RDMA WRITE that did not complete may, and nothing
// beyond; a SEND cut short flushes its receive.
TEST_F(TcpHostileRequests, HalfClosedInsideARequestBreaksTheConnection) {
    constexpr size_t kLarge = 64 << 10;
    Buffer region(*server_pd, kLarge, kRemoteAll);
    {
        SCOPED_TRACE("inside a header");
        RawPeer raw;
        ASSERT_NO_FATAL_FAILURE(AcceptScripted(&raw));
        ASSERT_TRUE(raw.SendRequest(
            RequestHeader(wire::Opcode::kWrite, 1, region.addr(), region.rkey(), 64),
            std::vector<uint8_t>(64, 0x11)));
        const wire::EncodedHeader next = wire::EncodeHeader(
            RequestHeader(wire::Opcode::kWrite, 2, region.addr(64), region.rkey(), 64));
        ASSERT_TRUE(raw.Send(next.data(), 20));
        ASSERT_TRUE(raw.ShutdownWrite());
        ASSERT_NO_FATAL_FAILURE(ExpectSilentClose(raw, 1));
        EXPECT_TRUE(Holds(region.data(), 0, 64, 0x11));
        EXPECT_TRUE(Holds(region.data(), 64, kLarge, 0));
    }
    memset(region.data(), 0, kLarge);
    {
        SCOPED_TRACE("inside a WRITE's payload");
        constexpr size_t kArrived = 10000;  // read straight into the region
        RawPeer raw;
        ASSERT_NO_FATAL_FAILURE(AcceptScripted(&raw));
        ASSERT_TRUE(raw.SendHeader(
            RequestHeader(wire::Opcode::kWrite, 1, region.addr(), region.rkey(), kLarge)));
        const std::vector<uint8_t> part(kArrived, 0x11);
        ASSERT_TRUE(raw.Send(part.data(), part.size()));
        ASSERT_TRUE(raw.ShutdownWrite());
        ASSERT_NO_FATAL_FAILURE(ExpectSilentClose(raw, 0));
        EXPECT_TRUE(Holds(region.data(), 0, kArrived, 0x11));
        EXPECT_TRUE(Holds(region.data(), kArrived, kLarge, 0));
    }
    {
        SCOPED_TRACE("inside a SEND's payload");
        RawPeer raw;
        ASSERT_NO_FATAL_FAILURE(AcceptScripted(&raw));
        Buffer receive(*server_pd, kRegionSize, kRemoteAll);
        ibv_sge sge = receive.Sge(0, kRegionSize);
        ASSERT_EQ(server.qp().PostRecv(RecvWr(&sge, 9)), 0);
        ASSERT_TRUE(raw.SendHeader(RequestHeader(wire::Opcode::kSend, 1, 0, 0, kRegionSize)));
        const std::vector<uint8_t> part(1000, 0x11);
        ASSERT_TRUE(raw.Send(part.data(), part.size()));
        ASSERT_TRUE(raw.ShutdownWrite());
        ASSERT_NO_FATAL_FAILURE(ExpectSilentClose(raw, 0));
        const ibv_wc wc = server.recv.WaitOne();
        EXPECT_EQ(wc.wr_id, 9u);
        EXPECT_EQ(wc.status, IBV_WC_WR_FLUSH_ERR);
    }
    ASSERT_NO_FATAL_FAILURE(ExpectAnotherConnectionWorks());
}

// A header declaring more than any message may carry (2 GiB; up to 4 GiB
// fits the field), or a length where its opcode carries none: the
// connection closes on the header alone, without waiting for or allocating
// the payload it announces.
TEST_F(TcpHostileRequests, ImpossibleLengthClosesOnTheHeaderAlone) {
    Buffer region(*server_pd, kRegionSize, kRemoteAll);
    const wire::Opcode opcodes[] = {
        wire::Opcode::kWrite,          wire::Opcode::kWriteWithImm, wire::Opcode::kReadRequest,
        wire::Opcode::kAtomicWrite,    wire::Opcode::kFlush,        wire::Opcode::kSend,
        wire::Opcode::kSendWithImm,    wire::Opcode::kAck,          wire::Opcode::kNak,
        wire::Opcode::kReadResponse,   wire::Opcode::kAckRequest,   wire::Opcode::kDisconnect,
        wire::Opcode::kConnectRequest, wire::Opcode::kAccept,       wire::Opcode::kReadyToUse,
    };
    for (const wire::Opcode opcode : opcodes) {
        for (const uint32_t length : {uint32_t{UINT32_MAX}, (uint32_t{1} << 31) + 1}) {
            SCOPED_TRACE(std::string(wire::OpcodeName(opcode)) + " of " + std::to_string(length));
            RawPeer raw;
            ASSERT_NO_FATAL_FAILURE(AcceptScripted(&raw));
            uint8_t flags = wire::IsRequest(opcode) ? wire::kAckRequested : 0;
            if (opcode == wire::Opcode::kFlush)
                flags |= wire::kFlushVisibility;
            ASSERT_TRUE(raw.SendHeader(
                RequestHeader(opcode, 1, region.addr(), region.rkey(), length, flags)));
            ASSERT_NO_FATAL_FAILURE(ExpectSilentClose(raw, 0));
        }
    }
    EXPECT_TRUE(Holds(region.data(), 0, kRegionSize, 0));
    ASSERT_NO_FATAL_FAILURE(ExpectAnotherConnectionWorks());
}

// The longest message allowed (2 GiB) that does not fit where it goes is
// refused on its header: a WRITE beyond a 4 KiB region with a NAK of
// IBV_WC_REM_ACCESS_ERR, a SEND beyond the posted receive with
// IBV_WC_REM_INV_REQ_ERR (the receive completes with IBV_WC_LOC_LEN_ERR).
// Neither waits for its payload.
TEST_F(TcpHostileRequests, LongestMessageThatDoesNotFitIsNakedOnItsHeader) {
    Buffer region(*server_pd, kRegionSize, kRemoteAll);
    constexpr uint32_t kLongest = uint32_t{1} << 31;
    {
        RawPeer raw;
        ASSERT_NO_FATAL_FAILURE(AcceptScripted(&raw));
        ASSERT_TRUE(raw.SendHeader(
            RequestHeader(wire::Opcode::kWrite, 1, region.addr(), region.rkey(), kLongest)));
        ASSERT_NO_FATAL_FAILURE(ExpectNakAndClose(raw, 1, IBV_WC_REM_ACCESS_ERR));
    }
    {
        RawPeer raw;
        ASSERT_NO_FATAL_FAILURE(AcceptScripted(&raw));
        Buffer receive(*server_pd, kRegionSize, kRemoteAll);
        ibv_sge sge = receive.Sge(0, kRegionSize);
        ASSERT_EQ(server.qp().PostRecv(RecvWr(&sge, 9)), 0);
        ASSERT_TRUE(raw.SendHeader(RequestHeader(wire::Opcode::kSend, 1, 0, 0, kLongest)));
        ASSERT_NO_FATAL_FAILURE(ExpectNakAndClose(raw, 1, IBV_WC_REM_INV_REQ_ERR));
        const ibv_wc wc = server.recv.WaitOne();
        EXPECT_EQ(wc.wr_id, 9u);
        EXPECT_EQ(wc.status, IBV_WC_LOC_LEN_ERR);
    }
    EXPECT_TRUE(Holds(region.data(), 0, kRegionSize, 0));
    ASSERT_NO_FATAL_FAILURE(ExpectAnotherConnectionWorks());
}

// Once the application disconnects (or destroys the QP), nothing more of
// the peer lands, as with a verbs QP moved to the error state: the rest of
// a WRITE whose payload was arriving, and every request the peer sends
// after it, ignoring the DISCONNECT, is dropped unanswered. (It applied them
// all for the 2 s the disconnect may take: an admin's close left a
// misbehaving client that long to write.)
TEST_F(TcpHostileRequests, NothingOfThePeerLandsOnceTheTargetBeganToDisconnect) {
    constexpr size_t kHalf = 32 << 10;
    constexpr size_t kLater = 2 * kHalf;  // where the later WRITE goes
    constexpr size_t kAtomic = kLater + kRegionSize;
    Buffer region(*server_pd, kAtomic + 8, kRemoteAll);
    RawPeer raw;
    ASSERT_NO_FATAL_FAILURE(AcceptScripted(&raw));

    const std::vector<uint8_t> payload(2 * kHalf, 0x11);
    ASSERT_TRUE(raw.SendHeader(
        RequestHeader(wire::Opcode::kWrite, 1, region.addr(), region.rkey(), 2 * kHalf, 0)));
    ASSERT_TRUE(raw.Send(payload.data(), kHalf));
    ASSERT_TRUE(WaitForByte(region.data() + kHalf - 1, 0x11));
    ASSERT_EQ(server.id->Disconnect(), 0);

    std::vector<uint8_t> burst(payload.begin() + kHalf, payload.end());
    AppendRequest(
        &burst,
        RequestHeader(wire::Opcode::kWrite, 2, region.addr(kLater), region.rkey(), kRegionSize, 0),
        std::vector<uint8_t>(kRegionSize, 0x22));
    AppendRequest(&burst,
                  RequestHeader(wire::Opcode::kAtomicWrite, 3, region.addr(kAtomic), region.rkey(),
                                wire::kAtomicWriteSize, 0),
                  std::vector<uint8_t>(wire::kAtomicWriteSize, 0x33));
    AppendRequest(
        &burst, RequestHeader(wire::Opcode::kReadRequest, 4, region.addr(), region.rkey(), 64, 0));
    wire::Header ask;
    ask.opcode = wire::Opcode::kAckRequest;
    AppendRequest(&burst, ask);
    ASSERT_TRUE(raw.Send(burst.data(), burst.size()));

    // The answer to the ACK_REQUEST says what was applied: nothing.
    wire::Header header;
    do {
        ASSERT_TRUE(raw.ReadMessage(&header));
        EXPECT_NE(header.opcode, wire::Opcode::kReadResponse) << "a READ was served";
    } while (header.opcode != wire::Opcode::kAck);
    EXPECT_EQ(header.sequence, 0u);
    EXPECT_TRUE(Holds(region.data(), 0, kHalf, 0x11));
    EXPECT_TRUE(Holds(region.data(), kHalf, kAtomic + 8, 0));
}

}  // namespace
}  // namespace rpma::provider::tcp::testing
