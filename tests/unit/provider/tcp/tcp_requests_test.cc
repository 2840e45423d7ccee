// The initiator's requests (tcp_requests.h) on their own: bad posts are
// refused with nothing built, a full send queue refuses (no underflow of its
// slots), a local buffer outside its region fails on completion only, and a
// long request's parts keep the ACK request and immediate data for the last.
#include "rpma_core/src/provider/tcp/tcp_requests.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <vector>

#include "rpma_core/src/provider/tcp/tcp_parts.h"
#include "rpma_core/src/provider/tcp/tcp_receive_queue.h"

namespace rpma::provider::tcp {
namespace {

constexpr uint32_t kDepth = 4;
constexpr uint64_t kPd = 7;

class RequestsTest : public ::testing::Test {
  protected:
    void SetUp() override {
        sq_.Attach(kDepth, /*qp_num=*/1, /*cq=*/nullptr);
        ASSERT_EQ(
            memory_.Register(buffer_.data(), buffer_.size(), IBV_ACCESS_LOCAL_WRITE, kPd, &region_),
            0);
    }

    int Post(ibv_send_wr wr, Request *request) {
        return BuildSendRequest(wr, sq_, LocalMemory{&memory_, kPd, &cache_}, request);
    }

    ibv_sge Sge(size_t offset, uint32_t length) const {
        return ibv_sge{reinterpret_cast<uintptr_t>(buffer_.data() + offset), length,
                       region_->Key()};
    }

    static ibv_send_wr Wr(ibv_wr_opcode opcode, ibv_sge *sges, int count) {
        ibv_send_wr wr{};
        wr.wr_id = 99;
        wr.opcode = opcode;
        wr.sg_list = sges;
        wr.num_sge = count;
        wr.wr.rdma.remote_addr = 0x1000;
        wr.wr.rdma.rkey = 5;
        return wr;
    }

    std::vector<uint8_t> buffer_ = std::vector<uint8_t>(4096, 0xab);
    MemoryTable memory_;
    std::shared_ptr<Region> region_;
    RegionCache cache_;
    SendQueue sq_;
};

TEST_F(RequestsTest, AWriteCarriesItsTargetAndItsBuffer) {
    ibv_sge sge = Sge(16, 100);
    ibv_send_wr wr = Wr(IBV_WR_RDMA_WRITE, &sge, 1);
    wr.send_flags = IBV_SEND_SIGNALED;
    Request request;
    ASSERT_EQ(Post(wr, &request), 0);
    EXPECT_EQ(request.message.header.opcode, wire::Opcode::kWrite);
    EXPECT_EQ(request.message.header.length, 100u);
    EXPECT_EQ(request.message.header.remote_addr, 0x1000u);
    EXPECT_EQ(request.message.header.rkey, 5u);
    ASSERT_EQ(request.message.segments.size(), 1u);
    EXPECT_EQ(request.message.segments[0].length, 100u);
    EXPECT_EQ(request.wr.wr_id, 99u);
    EXPECT_TRUE(request.wr.signaled);
    EXPECT_EQ(request.wr.byte_len, 100u);
    EXPECT_EQ(request.wr.local_error, IBV_WC_SUCCESS);
    EXPECT_EQ(request.length, 100u);
}

TEST_F(RequestsTest, MalformedPostsAreRefused) {
    Request request;
    EXPECT_EQ(Post(Wr(IBV_WR_ATOMIC_CMP_AND_SWP, nullptr, 0), &request), EINVAL);
    EXPECT_EQ(Post(Wr(IBV_WR_RDMA_WRITE, nullptr, 1), &request), EINVAL);  // no sg_list
    std::vector<ibv_sge> many(kMaxSge + 1, Sge(0, 1));
    EXPECT_EQ(Post(Wr(IBV_WR_RDMA_WRITE, many.data(), kMaxSge + 1), &request), EINVAL);
    ibv_sge big = Sge(0, 65);
    ibv_send_wr inline_wr = Wr(IBV_WR_RDMA_WRITE, &big, 1);
    inline_wr.send_flags = IBV_SEND_INLINE;
    EXPECT_EQ(Post(inline_wr, &request), EINVAL);  // more than max_inline_data
}

TEST_F(RequestsTest, InlineDataIsCopiedAtPost) {
    ibv_sge sge = Sge(0, 8);
    ibv_send_wr wr = Wr(IBV_WR_SEND, &sge, 1);
    wr.send_flags = IBV_SEND_INLINE;
    Request request;
    ASSERT_EQ(Post(wr, &request), 0);
    buffer_[0] = 0;  // after the post: not what is sent
    EXPECT_EQ(request.message.inline_length, 8u);
    EXPECT_EQ(request.message.inline_payload[0], 0xab);
    EXPECT_TRUE(request.message.segments.empty());
    EXPECT_EQ(request.message.header.remote_addr, 0u);  // a SEND has no target
}

TEST_F(RequestsTest, AFullSendQueueRefusesWithoutChange) {
    for (uint32_t i = 0; i < kDepth; ++i)
        sq_.Push(PendingWr{});
    ibv_sge sge = Sge(0, 8);
    Request request;
    EXPECT_EQ(Post(Wr(IBV_WR_RDMA_WRITE, &sge, 1), &request), ENOMEM);
    EXPECT_EQ(BuildFlushRequest(0, 5, 8, FlushType::kPersistent, true, 1, sq_, &request), ENOMEM);
    const char value[8] = {};
    EXPECT_EQ(BuildAtomicWriteRequest(0, 5, value, true, 1, sq_, &request), ENOMEM);
    EXPECT_EQ(request.wr.wr_id, 0u);  // nothing was built
}

TEST_F(RequestsTest, AReadLongerThanTheSendQueueIsRefused) {
    // A READ holds one slot per part: more parts than the queue has slots
    // could never be posted.
    SendQueue shallow;
    shallow.Attach(1, /*qp_num=*/2, /*cq=*/nullptr);
    ibv_sge sge{0, static_cast<uint32_t>(wire::kMaxMessageLength + 1), 0};
    ASSERT_EQ(PartCount(sge.length), 2u);
    Request request;
    EXPECT_EQ(BuildSendRequest(Wr(IBV_WR_RDMA_READ, &sge, 1), shallow,
                               LocalMemory{&memory_, kPd, &cache_}, &request),
              EINVAL);
}

TEST_F(RequestsTest, ABufferOutsideItsRegionFailsOnCompletion) {
    ibv_sge sge = Sge(4000, 200);  // runs past the region's end
    Request request;
    ASSERT_EQ(Post(Wr(IBV_WR_RDMA_WRITE, &sge, 1), &request), 0);
    EXPECT_EQ(request.wr.local_error, IBV_WC_LOC_PROT_ERR);
}

TEST_F(RequestsTest, OnlyTheLastPartAsksForTheAckAndCarriesTheImmediate) {
    OutboundMessage whole;
    whole.header.opcode = wire::Opcode::kWriteWithImm;
    whole.header.flags = wire::kAckRequested;
    whole.header.imm = 77;
    whole.header.remote_addr = 0x10000;
    whole.header.sequence = 12;  // the last part's
    const uint64_t length = 2 * wire::kMaxMessageLength + 5;
    const uint32_t parts = static_cast<uint32_t>(PartCount(length));
    ASSERT_EQ(parts, 3u);
    for (uint32_t k = 0; k < parts; ++k) {
        const OutboundMessage part = RequestPart(whole, parts, length, k);
        const bool last = k + 1 == parts;
        EXPECT_EQ(part.header.sequence, 10u + k);
        EXPECT_EQ(part.header.remote_addr, 0x10000u + PartOffset(k));
        EXPECT_EQ(part.header.length, last ? 5u : wire::kMaxMessageLength);
        EXPECT_EQ((part.header.flags & wire::kAckRequested) != 0, last);
        EXPECT_EQ(part.header.opcode, last ? wire::Opcode::kWriteWithImm : wire::Opcode::kWrite);
        EXPECT_EQ(part.header.imm, last ? 77u : 0u);
    }
}

TEST_F(RequestsTest, FlushesAndAtomicWrites) {
    Request request;
    EXPECT_EQ(BuildFlushRequest(0, 5, (uint64_t{1} << 47) + 1, FlushType::kPersistent, true, 1, sq_,
                                &request),
              EINVAL);
    ASSERT_EQ(BuildFlushRequest(0x20, 5, 64, FlushType::kVisibility, false, 3, sq_, &request), 0);
    EXPECT_EQ(request.message.header.opcode, wire::Opcode::kFlush);
    EXPECT_EQ(request.message.header.flags, wire::kFlushVisibility);
    EXPECT_EQ(request.wr.opcode, IBV_WC_RDMA_READ);  // as librpma's APM flush reports it

    EXPECT_EQ(BuildAtomicWriteRequest(0, 5, nullptr, true, 1, sq_, &request), EINVAL);
    const char value[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    Request atomic;
    ASSERT_EQ(BuildAtomicWriteRequest(0x40, 5, value, true, 4, sq_, &atomic), 0);
    EXPECT_EQ(atomic.message.inline_length, wire::kAtomicWriteSize);
    EXPECT_EQ(memcmp(atomic.message.inline_payload.data(), value, 8), 0);
}

TEST(NakStatusTest, OnlyARemoteErrorPassesThrough) {
    EXPECT_EQ(NakStatus(IBV_WC_REM_ACCESS_ERR), IBV_WC_REM_ACCESS_ERR);
    EXPECT_EQ(NakStatus(IBV_WC_RNR_RETRY_EXC_ERR), IBV_WC_RNR_RETRY_EXC_ERR);
    EXPECT_EQ(NakStatus(IBV_WC_SUCCESS), IBV_WC_REM_OP_ERR);
    EXPECT_EQ(NakStatus(12345), IBV_WC_REM_OP_ERR);
}

}  // namespace
}  // namespace rpma::provider::tcp
