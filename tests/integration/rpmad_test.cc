// rpmad end to end, its data and control planes: writes and persistent
// flushes survive a SIGKILL and restart, GPSPM flush requests persist and
// refuse ranges outside the region, bad control requests and lookups get
// canonical codes and change nothing, admin calls need the admin token.
// Access control is rpmad_access_test's, the process's life (signals,
// logs, the service manager) rpmad_lifecycle_test's.
#include "tests/integration/rpmad_fixture.h"

namespace rpma::testing {
namespace {

TEST_F(RpmadTest, WriteAndPersistentFlushSurviveSigkillAndRestart) {
    auto rpmad = StartRpmad();
    ASSERT_NE(rpmad, nullptr);
    v1::Region region;
    ASSERT_TRUE(rpmad->CreateRegion("journal", kRegionSize, &region).ok());
    EXPECT_EQ(region.size(), kRegionSize);
    EXPECT_EQ(region.persistence(), v1::PERSISTENCE_APM);

    const auto session = Open(*rpmad, "journal");
    EXPECT_EQ(session.persistence(), v1::PERSISTENCE_APM);
    EXPECT_EQ(session.region_size(), kRegionSize);
    EXPECT_EQ(session.token().size(), 24u);
    const auto bytes = Pattern(64 << 10, 7);
    {
        auto client = Connect(session);
        ASSERT_NE(client, nullptr);
        EXPECT_EQ(client->accept().region_size, kRegionSize);
        ASSERT_EQ(client->Write(4096, bytes), IBV_WC_SUCCESS);
        ASSERT_EQ(client->Flush(4096, bytes.size()), IBV_WC_SUCCESS);
        EXPECT_TRUE(client->Disconnect());
    }
    rpmad->process().Kill();

    // Where its clients knew it: the same ports.
    RpmadOptions same_place;
    same_place.control_port = rpmad->control_port();
    same_place.data_port = rpmad->data_port();
    auto again = StartRpmad(same_place);
    ASSERT_NE(again, nullptr);
    v1::ListRegionsResponse list;
    ASSERT_TRUE(again->Regions()->ListRegions(Rpmad::Context().get(), {}, &list).ok());
    ASSERT_EQ(list.regions_size(), 1);
    EXPECT_EQ(list.regions(0).name(), "journal");
    EXPECT_EQ(list.regions(0).id(), region.id());
    EXPECT_TRUE(list.regions(0).healthy());
    auto client = Connect(Open(*again, "journal"));
    ASSERT_NE(client, nullptr);
    std::vector<std::byte> read;
    ASSERT_EQ(client->Read(4096, bytes.size(), &read), IBV_WC_SUCCESS);
    EXPECT_EQ(read, bytes);
}

TEST_F(RpmadTest, GpspmFlushRequestsPersistAndRefuseRangesOutsideTheRegion) {
    auto rpmad = StartRpmad(WithConfig("data:\n  persistence: gpspm\n"));
    ASSERT_NE(rpmad, nullptr);
    ASSERT_TRUE(rpmad->CreateRegion("log", kRegionSize).ok());
    const auto session = Open(*rpmad, "log");
    EXPECT_EQ(session.persistence(), v1::PERSISTENCE_GPSPM);
    auto client = Connect(session);
    ASSERT_NE(client, nullptr);
    EXPECT_EQ(client->accept().persistence, rpmad::wire::AcceptedPersistence::kGpspm);

    const auto bytes = Pattern(8192, 3);
    ASSERT_EQ(client->Write(0, bytes), IBV_WC_SUCCESS);
    auto response = client->GpspmFlush(0, bytes.size());
    ASSERT_TRUE(response.has_value());
    EXPECT_EQ(response->status, rpmad::wire::FlushStatus::kOk);
    EXPECT_EQ(response->request_id, 1u);

    response = client->GpspmFlush(kRegionSize - 8, 16);
    ASSERT_TRUE(response.has_value());
    EXPECT_EQ(response->status, rpmad::wire::FlushStatus::kOutOfRange);
    response = client->GpspmFlush(~uint64_t{0} - 4, 16);  // offset + length wraps
    ASSERT_TRUE(response.has_value());
    EXPECT_EQ(response->status, rpmad::wire::FlushStatus::kOutOfRange);

    // Many requests in flight at once: each answered, in order.
    std::vector<std::pair<uint64_t, uint64_t>> ranges;
    for (uint64_t i = 0; i < rpmad::wire::kMaxFlushesInFlight; ++i)
        ranges.emplace_back(i * 4096, 4096);
    for (int round = 0; round < 3; ++round) {
        auto responses = client->GpspmFlushBatch(ranges);
        ASSERT_TRUE(responses.has_value());
        ASSERT_EQ(responses->size(), ranges.size());
        for (size_t i = 0; i < responses->size(); ++i) {
            EXPECT_EQ((*responses)[i].status, rpmad::wire::FlushStatus::kOk);
            EXPECT_EQ((*responses)[i].request_id, 4 + round * ranges.size() + i);
        }
    }

    auto garbage = client->SendRaw(Pattern(rpmad::wire::kFlushRequestSize, 0x55));
    ASSERT_TRUE(garbage.has_value());
    auto decoded = rpmad::wire::DecodeFlushResponse(*garbage);
    ASSERT_TRUE(decoded.has_value());
    EXPECT_EQ(decoded->status, rpmad::wire::FlushStatus::kMalformed);

    v1::Stats stats;
    ASSERT_TRUE(rpmad->Daemon()->GetStats(Rpmad::Context().get(), {}, &stats).ok());
    EXPECT_EQ(stats.flushes(), 1u + 3 * rpmad::wire::kMaxFlushesInFlight);
    EXPECT_EQ(stats.bytes_flushed(), bytes.size() + 3 * rpmad::wire::kMaxFlushesInFlight * 4096);
    EXPECT_EQ(stats.flushes_rejected(), 3u);
    EXPECT_EQ(stats.connections(), 1u);

    // The persisted bytes are in the region's file.
    client->Disconnect();
    rpmad->process().Kill();
    std::ifstream file(pool_dir_ + "/regions/log.pmem", std::ios::binary);
    std::vector<char> head(bytes.size());
    file.read(head.data(), static_cast<std::streamsize>(head.size()));
    EXPECT_EQ(0, std::memcmp(head.data(), bytes.data(), bytes.size()));
}

TEST_F(RpmadTest, BadControlRequestsGetCanonicalCodesAndChangeNothing) {
    auto rpmad = StartRpmad(WithConfig("limits:\n  max_region_size: 1MiB\n"));
    ASSERT_NE(rpmad, nullptr);
    ASSERT_TRUE(rpmad->CreateRegion("kept", kRegionSize).ok());
    const struct {
        std::string name;
        uint64_t size;
        grpc::StatusCode code;
    } creates[] = {
        {"", 4096, grpc::StatusCode::INVALID_ARGUMENT},
        {"../etc", 4096, grpc::StatusCode::INVALID_ARGUMENT},
        {"a/b", 4096, grpc::StatusCode::INVALID_ARGUMENT},
        {std::string(65, 'x'), 4096, grpc::StatusCode::INVALID_ARGUMENT},
        {"zero", 0, grpc::StatusCode::INVALID_ARGUMENT},
        {"unaligned", 4097, grpc::StatusCode::INVALID_ARGUMENT},
        {"huge", 2 << 20, grpc::StatusCode::INVALID_ARGUMENT},
        {"kept", 4096, grpc::StatusCode::ALREADY_EXISTS},
    };
    for (const auto &create : creates) {
        const grpc::Status status = rpmad->CreateRegion(create.name, create.size);
        EXPECT_EQ(status.error_code(), create.code)
            << create.name << ": " << status.error_message();
        EXPECT_FALSE(status.error_message().empty());
    }
    v1::Region region;
    v1::GetRegionRequest get;
    get.set_name("missing");
    EXPECT_EQ(rpmad->Regions()->GetRegion(Rpmad::Context().get(), get, &region).error_code(),
              grpc::StatusCode::NOT_FOUND);
    v1::OpenSessionResponse session;
    EXPECT_EQ(rpmad->OpenSession("missing", &session).error_code(), grpc::StatusCode::NOT_FOUND);
    EXPECT_EQ(rpmad->OpenSession("", &session).error_code(), grpc::StatusCode::INVALID_ARGUMENT);

    v1::CloseSessionRequest close;
    v1::CloseSessionResponse closed;
    close.set_session_id("not-hex");
    EXPECT_EQ(rpmad->Sessions()->CloseSession(Rpmad::Context().get(), close, &closed).error_code(),
              grpc::StatusCode::INVALID_ARGUMENT);
    close.set_session_id("0123456789abcdef");
    EXPECT_EQ(rpmad->Sessions()->CloseSession(Rpmad::Context().get(), close, &closed).error_code(),
              grpc::StatusCode::NOT_FOUND);

    // Delete refuses a region with an open session, unless forced; the
    // forced delete disconnects its client.
    const auto open = Open(*rpmad, "kept");
    auto client = Connect(open);
    ASSERT_NE(client, nullptr);
    v1::DeleteRegionRequest del;
    v1::DeleteRegionResponse deleted;
    del.set_name("kept");
    EXPECT_EQ(rpmad->Regions()->DeleteRegion(Rpmad::Context().get(), del, &deleted).error_code(),
              grpc::StatusCode::FAILED_PRECONDITION);
    ASSERT_TRUE(rpmad->Regions()
                    ->GetRegion(
                        Rpmad::Context().get(),
                        [] {
                            v1::GetRegionRequest r;
                            r.set_name("kept");
                            return r;
                        }(),
                        &region)
                    .ok());
    EXPECT_EQ(region.open_sessions(), 1u);
    del.set_force(true);
    ASSERT_TRUE(rpmad->Regions()->DeleteRegion(Rpmad::Context().get(), del, &deleted).ok());
    EXPECT_EQ(deleted.closed_sessions(), 1u);
    const rpma_conn_event event = client->WaitEvent(5000);
    EXPECT_TRUE(event == RPMA_CONN_CLOSED || event == RPMA_CONN_LOST) << event;
    EXPECT_FALSE(std::filesystem::exists(pool_dir_ + "/regions/kept.pmem"));

    // The daemon still serves.
    EXPECT_TRUE(rpmad->CreateRegion("after", 4096).ok());
}

// Every other kind of bad request: a name that cannot be a region's where
// one is looked up, and each limit of the configuration, which the message
// names by its key so that the operator knows what to raise.
TEST_F(RpmadTest, BadLookupsAndLimitsGetCanonicalCodesNamingTheKey) {
    auto rpmad =
        StartRpmad(WithConfig("storage:\n  capacity: 3MiB\n"
                              "limits:\n  max_regions: 2\n  max_sessions: 2\n"));
    ASSERT_NE(rpmad, nullptr);
    v1::Region region;
    v1::GetRegionRequest get;
    get.set_name("../catalog");
    EXPECT_EQ(rpmad->Regions()->GetRegion(Rpmad::Context().get(), get, &region).error_code(),
              grpc::StatusCode::INVALID_ARGUMENT);
    v1::DeleteRegionRequest del;
    v1::DeleteRegionResponse deleted;
    del.set_name("../catalog");
    EXPECT_EQ(rpmad->Regions()->DeleteRegion(Rpmad::Context().get(), del, &deleted).error_code(),
              grpc::StatusCode::INVALID_ARGUMENT);
    del.set_name("missing");
    EXPECT_EQ(rpmad->Regions()->DeleteRegion(Rpmad::Context().get(), del, &deleted).error_code(),
              grpc::StatusCode::NOT_FOUND);
    v1::ListSessionsRequest sessions;
    sessions.set_region("a/b");
    v1::ListSessionsResponse listed;
    EXPECT_EQ(
        rpmad->Sessions()->ListSessions(Rpmad::Context().get(), sessions, &listed).error_code(),
        grpc::StatusCode::INVALID_ARGUMENT);

    auto expect_exhausted = [](const grpc::Status &status, const std::string &key) {
        EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
            << status.error_message();
        EXPECT_NE(status.error_message().find("raise " + key), std::string::npos)
            << status.error_message();
    };
    ASSERT_TRUE(rpmad->CreateRegion("one", kRegionSize).ok());
    expect_exhausted(rpmad->CreateRegion("too-much", 3 * kRegionSize), "storage.capacity");
    ASSERT_TRUE(rpmad->CreateRegion("two", kRegionSize).ok());
    expect_exhausted(rpmad->CreateRegion("three", 4096), "limits.max_regions");
    const grpc::Status big = rpmad->CreateRegion("big", 128ull << 30);
    EXPECT_EQ(big.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << big.error_message();
    EXPECT_NE(big.error_message().find("limits.max_region_size"), std::string::npos)
        << big.error_message();
    v1::OpenSessionResponse session;
    ASSERT_TRUE(rpmad->OpenSession("one", &session).ok());
    ASSERT_TRUE(rpmad->OpenSession("two", &session).ok());
    expect_exhausted(rpmad->OpenSession("one", &session), "limits.max_sessions");

    // Nothing of it changed anything.
    v1::ListRegionsResponse list;
    ASSERT_TRUE(rpmad->Regions()->ListRegions(Rpmad::Context().get(), {}, &list).ok());
    ASSERT_EQ(list.regions_size(), 2);
    EXPECT_EQ(list.regions(0).name(), "one");
    EXPECT_EQ(list.regions(1).name(), "two");
    ASSERT_TRUE(rpmad->Sessions()->ListSessions(Rpmad::Context().get(), {}, &listed).ok());
    EXPECT_EQ(listed.sessions_size(), 2);
    std::vector<std::string> files;
    for (const auto &entry : std::filesystem::directory_iterator(pool_dir_ + "/regions"))
        files.push_back(entry.path().filename().string());
    std::sort(files.begin(), files.end());
    EXPECT_EQ(files, (std::vector<std::string>{"one.pmem", "two.pmem"}));
}

TEST_F(RpmadTest, AdminCallsNeedTheAdminToken) {
    auto rpmad = StartRpmad(WithConfig("control:\n  admin_token: s3cret-admin\n"));
    ASSERT_NE(rpmad, nullptr);
    EXPECT_EQ(rpmad->CreateRegion("r", 4096).error_code(), grpc::StatusCode::UNAUTHENTICATED);
    EXPECT_EQ(rpmad->CreateRegion("r", 4096, nullptr, "wrong").error_code(),
              grpc::StatusCode::PERMISSION_DENIED);
    ASSERT_TRUE(rpmad->CreateRegion("r", 4096, nullptr, "s3cret-admin").ok());
    // Not admin calls: anyone may look and open sessions.
    v1::OpenSessionResponse session;
    ASSERT_TRUE(rpmad->OpenSession("r", &session).ok());
    v1::CloseSessionRequest close;
    v1::CloseSessionResponse closed;
    close.set_session_id(session.session_id());
    EXPECT_EQ(rpmad->Sessions()->CloseSession(Rpmad::Context().get(), close, &closed).error_code(),
              grpc::StatusCode::UNAUTHENTICATED);
    EXPECT_TRUE(
        rpmad->Sessions()->CloseSession(Rpmad::Context("s3cret-admin").get(), close, &closed).ok());
    v1::DeleteRegionRequest del;
    v1::DeleteRegionResponse deleted;
    del.set_name("r");
    EXPECT_EQ(rpmad->Regions()->DeleteRegion(Rpmad::Context().get(), del, &deleted).error_code(),
              grpc::StatusCode::UNAUTHENTICATED);
    // The config the daemon reports does not reveal the token.
    v1::EffectiveConfig config;
    ASSERT_TRUE(rpmad->Daemon()->GetConfig(Rpmad::Context().get(), {}, &config).ok());
    EXPECT_EQ(config.yaml().find("s3cret-admin"), std::string::npos);
    rpmad->process().Kill();
    EXPECT_EQ(rpmad->process().Stderr().find("s3cret-admin"), std::string::npos);
}

}  // namespace
}  // namespace rpma::testing
