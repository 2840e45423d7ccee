// InboundReader alone, on one end of a socketpair: the framing of messages
// whatever the split of their bytes across reads, payloads through the stage
// and straight into registered memory, a destination revoked under its
// payload, and the end of the stream.
#include "rpma_core/src/provider/tcp/tcp_inbound_reader.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

#include "rpma_core/src/provider/tcp/tcp_memory_table.h"
#include "rpma_core/src/provider/tcp/tcp_unique_fd.h"
#include "rpma_core/src/provider/tcp/tcp_wire.h"
#include "tests/unit/provider/tcp/tcp_socket_pair.h"

namespace rpma::provider::tcp {
namespace {

using Framed = InboundReader::Framed;

wire::Header Write(uint32_t length, uint64_t sequence) {
    wire::Header header;
    header.opcode = wire::Opcode::kWrite;
    header.length = length;
    header.remote_addr = 0x1000;
    header.rkey = 7;
    header.sequence = sequence;
    return header;
}

std::vector<uint8_t> Message(const wire::Header &header, const std::vector<uint8_t> &payload) {
    const wire::EncodedHeader encoded = wire::EncodeHeader(header);
    std::vector<uint8_t> bytes(encoded.begin(), encoded.end());
    bytes.insert(bytes.end(), payload.begin(), payload.end());
    return bytes;
}

std::vector<uint8_t> Pattern(size_t length, uint8_t seed) {
    std::vector<uint8_t> bytes(length);
    for (size_t i = 0; i < length; ++i)
        bytes[i] = static_cast<uint8_t>(seed + i * 7);
    return bytes;
}

class InboundReaderTest : public ::testing::Test {
  protected:
    void SetUp() override {
        ASSERT_TRUE(testing::OpenSocketPair(&ours_, &theirs_));
        int size = 8 << 20;
        setsockopt(theirs_.Get(), SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
        setsockopt(ours_.Get(), SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
    }

    void Send(const std::vector<uint8_t> &bytes) {
        size_t at = 0;
        while (at < bytes.size()) {
            const ssize_t sent = ::send(theirs_.Get(), bytes.data() + at, bytes.size() - at, 0);
            ASSERT_GT(sent, 0) << strerror(errno);
            at += static_cast<size_t>(sent);
        }
    }

    // Next() with a fresh budget (a wake-up).
    Framed Next() {
        InboundReader::Budget budget;
        return reader_.Next(ours_.Get(), &budget);
    }

    // A destination of `length` bytes in registered memory.
    std::shared_ptr<Region> Registered(std::vector<uint8_t> *memory, size_t length) {
        memory->assign(length, 0);
        std::shared_ptr<Region> region;
        EXPECT_EQ(table_.Register(memory->data(), length,
                                  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, 1, &region),
                  0);
        return region;
    }
    void PointAt(const std::shared_ptr<Region> &region) {
        MemorySegment segment;
        segment.addr = region->Addr();
        segment.length = region->Length();
        segment.region = region.get();
        reader_.message().destination.push_back(segment);
    }

    UniqueFd ours_, theirs_;
    MemoryTable table_;
    InboundReader reader_;
};

TEST_F(InboundReaderTest, AHeaderSplitAtEveryByteIsFramedOnceWhole) {
    const std::vector<uint8_t> payload = Pattern(24, 3);
    const std::vector<uint8_t> bytes = Message(Write(24, 42), payload);
    for (size_t i = 0; i < wire::kHeaderSize; ++i) {
        Send({bytes[i]});
        const Framed framed = Next();
        if (i + 1 < wire::kHeaderSize) {
            ASSERT_EQ(framed, Framed::kPartialHeader) << "byte " << i;
            EXPECT_EQ(reader_.message().header_received, i + 1);
            ASSERT_EQ(Next(), Framed::kStop) << "nothing more arrived";
        } else {
            ASSERT_EQ(framed, Framed::kHeader);
        }
    }
    EXPECT_EQ(reader_.message().header.sequence, 42u);
    EXPECT_EQ(reader_.message().header.length, 24u);
    ASSERT_TRUE(reader_.BeginPayload(24));
    for (size_t i = wire::kHeaderSize; i < bytes.size(); ++i) {
        Send({bytes[i]});
        ASSERT_EQ(Next(), i + 1 < bytes.size() ? Framed::kStop : Framed::kPayload) << i;
    }
    EXPECT_EQ(
        std::vector<uint8_t>(reader_.message().small.begin(), reader_.message().small.begin() + 24),
        payload);
}

TEST_F(InboundReaderTest, SeveralMessagesOfOneReadAreFramedInOrder) {
    std::vector<uint8_t> bytes;
    for (uint64_t sequence = 1; sequence <= 3; ++sequence) {
        const auto message = Message(Write(8, sequence), Pattern(8, uint8_t(sequence)));
        bytes.insert(bytes.end(), message.begin(), message.end());
    }
    Send(bytes);
    InboundReader::Budget budget;
    for (uint64_t sequence = 1; sequence <= 3; ++sequence) {
        ASSERT_EQ(reader_.Next(ours_.Get(), &budget), Framed::kHeader);
        EXPECT_EQ(reader_.message().header.sequence, sequence);
        ASSERT_TRUE(reader_.BeginPayload(8));
        ASSERT_EQ(reader_.Next(ours_.Get(), &budget), Framed::kPayload);
        EXPECT_EQ(reader_.message().small[0], uint8_t(sequence));
    }
    EXPECT_TRUE(budget.drained) << "one short read took all three";
    EXPECT_EQ(reader_.Next(ours_.Get(), &budget), Framed::kStop);
}

TEST_F(InboundReaderTest, ALargePayloadGoesIntoItsDestinationAndTheNextHeaderFollows) {
    constexpr size_t kLength = 1 << 20;
    std::vector<uint8_t> memory;
    auto region = Registered(&memory, kLength);
    const std::vector<uint8_t> payload = Pattern(kLength, 9);
    std::vector<uint8_t> bytes = Message(Write(kLength, 1), payload);
    const auto next = Message(Write(0, 2), {});
    bytes.insert(bytes.end(), next.begin(), next.end());
    Send(bytes);
    ASSERT_EQ(Next(), Framed::kHeader);
    PointAt(region);
    ASSERT_TRUE(reader_.BeginPayload(kLength));
    Framed framed = Framed::kStop;
    for (int wakeups = 0; wakeups < 100 && framed == Framed::kStop; ++wakeups)
        framed = Next();
    ASSERT_EQ(framed, Framed::kPayload);
    EXPECT_EQ(memory, payload);
    reader_.message().destination.clear();
    ASSERT_EQ(Next(), Framed::kHeader);
    EXPECT_EQ(reader_.message().header.sequence, 2u);
}

// A wake-up stops reading once its budget is spent, though the socket
// holds more: with a budget of one byte, one read of the stage's size.
TEST_F(InboundReaderTest, AWakeUpReadsNoMoreThanItsBudget) {
    constexpr size_t kMessages = 4 * Stage::kSize / wire::kHeaderSize;
    std::vector<uint8_t> bytes;
    for (uint64_t sequence = 1; sequence <= kMessages; ++sequence) {
        const auto message = Message(Write(0, sequence), {});
        bytes.insert(bytes.end(), message.begin(), message.end());
    }
    Send(bytes);
    auto wake_up = [&](size_t budget_bytes) {
        InboundReader::Budget budget;
        budget.bytes = budget_bytes;
        size_t headers = 0;
        for (Framed framed; (framed = reader_.Next(ours_.Get(), &budget)) != Framed::kStop;) {
            EXPECT_EQ(framed, Framed::kHeader);
            EXPECT_EQ(reader_.message().header.sequence, ++headers) << "in order";
            EXPECT_TRUE(reader_.BeginPayload(0));
        }
        return headers;
    };
    const size_t first = wake_up(1);
    EXPECT_EQ(first, Stage::kSize / wire::kHeaderSize) << "one read of the stage, no more";
    InboundReader::Budget rest;
    size_t headers = first;
    for (Framed framed; (framed = reader_.Next(ours_.Get(), &rest)) != Framed::kStop;) {
        ASSERT_EQ(framed, Framed::kHeader);
        EXPECT_EQ(reader_.message().header.sequence, ++headers);
        reader_.BeginPayload(0);
    }
    EXPECT_EQ(headers, kMessages) << "the next wake-up takes the rest";
}

TEST_F(InboundReaderTest, ADestinationRevokedUnderItsPayloadTakesNoMoreOfIt) {
    constexpr size_t kLength = 64 << 10;
    std::vector<uint8_t> memory;
    auto region = Registered(&memory, kLength);
    const std::vector<uint8_t> payload = Pattern(kLength, 5);
    Send(Message(Write(kLength, 1), std::vector<uint8_t>(payload.begin(), payload.begin() + 4096)));
    ASSERT_EQ(Next(), Framed::kHeader);
    PointAt(region);
    ASSERT_TRUE(reader_.BeginPayload(kLength));
    ASSERT_EQ(Next(), Framed::kStop);
    EXPECT_EQ(reader_.message().payload_received, 4096u);
    table_.Deregister(region);
    Send(std::vector<uint8_t>(payload.begin() + 4096, payload.end()));
    EXPECT_EQ(Next(), Framed::kRevoked);
    for (size_t i = 4096; i < kLength; ++i)
        ASSERT_EQ(memory[i], 0) << "byte " << i;
}

TEST_F(InboundReaderTest, BytesThatAreNoHeaderAreMalformedWithTheReason) {
    std::vector<uint8_t> bytes = Message(Write(0, 1), {});
    bytes[0] = 0xee;  // no opcode
    Send(bytes);
    ASSERT_EQ(Next(), Framed::kMalformed);
    EXPECT_STRNE(reader_.error(), "");
}

TEST_F(InboundReaderTest, APayloadWithNowhereToGoIsRefused) {
    EXPECT_FALSE(reader_.BeginPayload(reader_.message().small.size() + 1));
    EXPECT_TRUE(reader_.BeginPayload(reader_.message().small.size()));
}

TEST_F(InboundReaderTest, TheEndOfTheStreamClosesWithoutAnError) {
    Send(Message(Write(0, 1), {}));
    theirs_.Reset();
    ASSERT_EQ(Next(), Framed::kHeader);
    EXPECT_EQ(Next(), Framed::kClosed);
    EXPECT_EQ(reader_.peer_error(), 0);
}

TEST_F(InboundReaderTest, AResetStartsTheNextMessageAfresh) {
    std::vector<uint8_t> bytes = Message(Write(0, 1), {});
    Send(std::vector<uint8_t>(bytes.begin(), bytes.begin() + 10));
    ASSERT_EQ(Next(), Framed::kPartialHeader);
    reader_.Reset();
    EXPECT_EQ(reader_.StagedBytes(), 0u);
    EXPECT_EQ(reader_.message().phase, InboundMessage::Phase::kHeader);
}

TEST_F(InboundReaderTest, AReadOfTheOwnersOwnIsStagedThenFramed) {
    const auto bytes = Message(Write(0, 9), {});
    Send(bytes);
    const ssize_t got = ::recv(ours_.Get(), reader_.StageBuffer(), Stage::kSize, 0);
    bool closed = true;
    ASSERT_TRUE(reader_.Received(got, &closed));
    EXPECT_FALSE(closed);
    EXPECT_EQ(reader_.StagedBytes(), bytes.size());
    InboundReader::Budget budget;
    budget.drained = true;
    ASSERT_EQ(reader_.Next(ours_.Get(), &budget), Framed::kHeader);
    EXPECT_EQ(reader_.message().header.sequence, 9u);
    errno = EAGAIN;
    EXPECT_FALSE(reader_.Received(-1, &closed));
    EXPECT_FALSE(closed) << "would block is not closed";
}

}  // namespace
}  // namespace rpma::provider::tcp
