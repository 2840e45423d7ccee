// rpmad's GPSPM flush service against clients that misbehave and disks that
// stall or fail: a real rpmad on loopback (tcp provider), its pool in real
// files, and, where a disk must misbehave on cue, msync_shim.so preloaded
// into it (tests/integration/msync_shim.c).
#include <gtest/gtest.h>

#include "tests/integration/rpmad_harness.h"

namespace rpma::testing {
namespace {

namespace wire = rpmad::wire;

constexpr uint64_t kRegionSize = 1 << 20;

class RpmadGpspmTest : public ::testing::Test {
  protected:
    std::unique_ptr<Rpmad> StartRpmad(std::vector<std::string> env = {}) {
        RpmadOptions options;
        options.pool_dir = TempPath(
            "pool-" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
        options.config_yaml = "data:\n  persistence: gpspm\n";
        options.env = std::move(env);
        std::string error;
        auto rpmad = Rpmad::Start(options, &error);
        EXPECT_NE(rpmad, nullptr) << error;
        return rpmad;
    }

    std::unique_ptr<SessionClient> Connect(const Rpmad &rpmad, const std::string &region) {
        v1::OpenSessionResponse session;
        const grpc::Status status = rpmad.OpenSession(region, &session);
        EXPECT_TRUE(status.ok()) << status.error_message();
        rpma_conn_event event;
        auto client = SessionClient::Connect(session, &event);
        EXPECT_NE(client, nullptr) << "connection ended with " << rpma_utils_conn_event_2str(event);
        return client;
    }

    static v1::Stats Stats(const Rpmad &rpmad) {
        v1::Stats stats;
        EXPECT_TRUE(rpmad.Daemon()->GetStats(Rpmad::Context().get(), {}, &stats).ok());
        return stats;
    }
};

// A request slot keeps the bytes of the last request it took: a message
// shorter than a request must be refused, not read as that request.
TEST_F(RpmadGpspmTest, AShortMessageIsRefusedNotReadAsTheSlotsLastRequest) {
    auto rpmad = StartRpmad();
    ASSERT_NE(rpmad, nullptr);
    ASSERT_TRUE(rpmad->CreateRegion("log", kRegionSize).ok());
    auto client = Connect(*rpmad, "log");
    ASSERT_NE(client, nullptr);

    // One request in every slot, so that the next message lands in a slot
    // holding a whole earlier request (of [0, 4096)).
    std::vector<std::pair<uint64_t, uint64_t>> ranges;
    for (uint64_t i = 0; i < wire::kMaxFlushesInFlight; ++i)
        ranges.emplace_back(i * 4096, 4096);
    auto responses = client->GpspmFlushBatch(ranges);
    ASSERT_TRUE(responses.has_value());
    for (const auto &response : *responses)
        ASSERT_EQ(response.status, wire::FlushStatus::kOk);
    const v1::Stats before = Stats(*rpmad);
    ASSERT_EQ(before.flushes(), wire::kMaxFlushesInFlight);

    // The head of a request (magic, version, a request id of its own),
    // without its range.
    std::vector<std::byte> request(wire::kFlushRequestSize);
    wire::EncodeFlushRequest({77, 8192, 4096}, std::span<std::byte, wire::kFlushRequestSize>(
                                                   request.data(), request.size()));
    request.resize(16);
    auto answer = client->SendRaw(request);
    ASSERT_TRUE(answer.has_value()) << "no answer to a 16-byte message";
    auto decoded = wire::DecodeFlushResponse(*answer);
    ASSERT_TRUE(decoded.has_value());
    EXPECT_EQ(decoded->status, wire::FlushStatus::kMalformed);
    EXPECT_NE(decoded->request_id, 77u) << "the short message was served as a request";

    const v1::Stats after = Stats(*rpmad);
    EXPECT_EQ(after.flushes(), before.flushes()) << "an earlier request was executed again";
    EXPECT_EQ(after.bytes_flushed(), before.bytes_flushed());
    EXPECT_EQ(after.flushes_rejected(), before.flushes_rejected() + 1);

    // The session goes on: a whole request is served.
    auto next = client->GpspmFlush(0, 4096);
    ASSERT_TRUE(next.has_value());
    EXPECT_EQ(next->status, wire::FlushStatus::kOk);
}

}  // namespace
}  // namespace rpma::testing
