// rpmad's data-plane counters end to end: a real rpmad on loopback (tcp
// provider), a real session writing, persisting and reading through
// rpma_core, and GetStats, GetRegion and ListRegions reporting exactly that
// (issue #10: "bytes written and flushed as far as the daemon can see").
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/integration/rpmad_harness.h"

namespace rpma::testing {
namespace {

constexpr uint64_t kRegionSize = 1 << 20;

struct Traffic {
    uint64_t written = 0;
    uint64_t read = 0;
    uint64_t flushes = 0;
    uint64_t persisted = 0;
};

template <class Message>
void ExpectTraffic(const Message &m, const Traffic &want, const std::string &what) {
    EXPECT_TRUE(m.data_plane_counters_available()) << what;
    EXPECT_EQ(m.bytes_written(), want.written) << what;
    EXPECT_EQ(m.bytes_read(), want.read) << what;
    EXPECT_EQ(m.remote_flushes(), want.flushes) << what;
    EXPECT_EQ(m.bytes_persisted(), want.persisted) << what;
}

class RpmadStatsTest : public ::testing::Test {
  protected:
    void SetUp() override {
        RpmadOptions options;
        pool_dir_ = TempPath(
            "pool-" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
        options.pool_dir = pool_dir_;
        options.config_yaml = ConfigYaml();
        std::string error;
        rpmad_ = Rpmad::Start(options, &error);
        ASSERT_NE(rpmad_, nullptr) << error;
    }
    virtual std::string ConfigYaml() { return ""; }

    std::unique_ptr<SessionClient> Connect(const std::string &region) {
        v1::OpenSessionResponse session;
        const grpc::Status status = rpmad_->OpenSession(region, &session);
        EXPECT_TRUE(status.ok()) << status.error_message();
        rpma_conn_event event;
        auto client = SessionClient::Connect(session, &event);
        EXPECT_NE(client, nullptr) << "connection ended with " << rpma_utils_conn_event_2str(event);
        return client;
    }
    v1::Stats Stats() {
        v1::Stats stats;
        EXPECT_TRUE(rpmad_->Daemon()->GetStats(Rpmad::Context().get(), {}, &stats).ok());
        return stats;
    }
    v1::Region Region(const std::string &name) {
        v1::GetRegionRequest request;
        request.set_name(name);
        v1::Region region;
        EXPECT_TRUE(rpmad_->Regions()->GetRegion(Rpmad::Context().get(), request, &region).ok());
        return region;
    }

    std::string pool_dir_;
    std::unique_ptr<Rpmad> rpmad_;
};

TEST_F(RpmadStatsTest, StatsAndRegionsReportWhatASessionWroteReadAndPersisted) {
    ASSERT_TRUE(rpmad_->CreateRegion("journal", kRegionSize).ok());
    ASSERT_TRUE(rpmad_->CreateRegion("idle", kRegionSize).ok());
    ExpectTraffic(Stats(), {}, "Stats before any client");
    ExpectTraffic(Region("journal"), {}, "journal before any client");

    auto client = Connect("journal");
    ASSERT_NE(client, nullptr);
    const auto first = Pattern(12288, 1);
    const auto second = Pattern(100, 2);
    ASSERT_EQ(client->Write(0, first), IBV_WC_SUCCESS);
    ASSERT_EQ(client->Write(65536, second), IBV_WC_SUCCESS);
    ASSERT_EQ(client->Flush(0, first.size()), IBV_WC_SUCCESS);
    // A visibility flush makes nothing durable: not counted.
    ASSERT_EQ(client->Flush(65536, second.size(), RPMA_FLUSH_TYPE_VISIBILITY), IBV_WC_SUCCESS);
    std::vector<std::byte> read;
    ASSERT_EQ(client->Read(4096, 5000, &read), IBV_WC_SUCCESS);
    const Traffic journal{12288 + 100, 5000, 1, 12288};

    ExpectTraffic(Region("journal"), journal, "GetRegion journal");
    ExpectTraffic(Region("idle"), {}, "GetRegion idle");
    ExpectTraffic(Stats(), journal, "Stats");
    v1::ListRegionsResponse list;
    ASSERT_TRUE(rpmad_->Regions()->ListRegions(Rpmad::Context().get(), {}, &list).ok());
    ASSERT_EQ(list.regions_size(), 2);
    for (const auto &region : list.regions())
        ExpectTraffic(region, region.name() == "journal" ? journal : Traffic{},
                      "ListRegions " + region.name());

    // A write the daemon's provider refuses (past the region's end) lands
    // nothing and counts nothing.
    EXPECT_NE(client->Write(kRegionSize - 8, Pattern(16, 3)), IBV_WC_SUCCESS);
    ExpectTraffic(Region("journal"), journal, "journal after a refused write");

    // Deleting the region keeps what it did in the totals: they never go
    // down while rpmad runs.
    client.reset();
    v1::DeleteRegionRequest request;
    request.set_name("journal");
    request.set_force(true);
    v1::DeleteRegionResponse deleted;
    ASSERT_TRUE(rpmad_->Regions()->DeleteRegion(Rpmad::Context().get(), request, &deleted).ok());
    ExpectTraffic(Stats(), journal, "Stats after the region was deleted");
}

TEST_F(RpmadStatsTest, CountersRestartWithRpmad) {
    ASSERT_TRUE(rpmad_->CreateRegion("journal", kRegionSize).ok());
    {
        auto client = Connect("journal");
        ASSERT_NE(client, nullptr);
        ASSERT_EQ(client->Write(0, Pattern(4096, 4)), IBV_WC_SUCCESS);
        EXPECT_TRUE(client->Disconnect());
    }
    ExpectTraffic(Region("journal"), {4096, 0, 0, 0}, "before the restart");
    RpmadOptions same;
    same.pool_dir = pool_dir_;
    same.control_port = rpmad_->control_port();
    same.data_port = rpmad_->data_port();
    rpmad_->process().Kill();
    std::string error;
    rpmad_ = Rpmad::Start(same, &error);
    ASSERT_NE(rpmad_, nullptr) << error;
    ExpectTraffic(Region("journal"), {}, "after the restart");
    ExpectTraffic(Stats(), {}, "Stats after the restart");
}

class RpmadGpspmStatsTest : public RpmadStatsTest {
  protected:
    std::string ConfigYaml() override { return "data:\n  persistence: gpspm\n"; }
};

// GPSPM persists on request messages, counted in Stats.flushes; the one-sided
// writes are counted all the same, and no remote flush is.
TEST_F(RpmadGpspmStatsTest, WritesCountAndFlushRequestsStayInFlushes) {
    ASSERT_TRUE(rpmad_->CreateRegion("log", kRegionSize).ok());
    auto client = Connect("log");
    ASSERT_NE(client, nullptr);
    ASSERT_EQ(client->Write(0, Pattern(8192, 5)), IBV_WC_SUCCESS);
    auto response = client->GpspmFlush(0, 8192);
    ASSERT_TRUE(response.has_value());
    EXPECT_EQ(response->status, rpmad::wire::FlushStatus::kOk);
    const v1::Stats stats = Stats();
    ExpectTraffic(stats, {8192, 0, 0, 0}, "Stats");
    EXPECT_EQ(stats.flushes(), 1u);
    EXPECT_EQ(stats.bytes_flushed(), 8192u);
    ExpectTraffic(Region("log"), {8192, 0, 0, 0}, "GetRegion log");
}

}  // namespace
}  // namespace rpma::testing
