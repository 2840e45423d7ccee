// rpmad end to end: a real rpmad process on loopback, its control plane over
// gRPC, its data plane through rpma_core's tcp provider, its pool in real
// files. Each test starts its own daemon on ports of its own.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <cctype>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "tests/integration/notify_socket.h"
#include "tests/integration/rpmad_harness.h"

namespace rpma::testing {
namespace {

constexpr uint64_t kRegionSize = 1 << 20;

RpmadOptions WithConfig(const std::string &yaml) {
    RpmadOptions options;
    options.config_yaml = yaml;
    return options;
}

class RpmadTest : public ::testing::Test {
  protected:
    void SetUp() override {
        pool_dir_ = TempPath(
            "pool-" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    }

    std::unique_ptr<Rpmad> StartRpmad(RpmadOptions options = {}) {
        if (options.pool_dir.empty())
            options.pool_dir = pool_dir_;
        std::string error;
        auto rpmad = Rpmad::Start(options, &error);
        EXPECT_NE(rpmad, nullptr) << error;
        return rpmad;
    }

    v1::OpenSessionResponse Open(const Rpmad &rpmad, const std::string &region) {
        v1::OpenSessionResponse session;
        const grpc::Status status = rpmad.OpenSession(region, &session);
        EXPECT_TRUE(status.ok()) << status.error_message();
        return session;
    }

    // OpenSession of `region` sending `token` (the admin's or a client's).
    static grpc::Status OpenWithToken(const Rpmad &rpmad, const std::string &region,
                                      const std::string &token,
                                      v1::OpenSessionResponse *out = nullptr) {
        v1::OpenSessionRequest request;
        request.set_region(region);
        v1::OpenSessionResponse response;
        const grpc::Status status =
            rpmad.Sessions()->OpenSession(Rpmad::Context(token).get(), request, &response);
        if (out != nullptr)
            *out = response;
        return status;
    }

    std::unique_ptr<SessionClient> Connect(const v1::OpenSessionResponse &session) {
        rpma_conn_event event;
        auto client = SessionClient::Connect(session, &event);
        EXPECT_NE(client, nullptr) << "connection ended with " << rpma_utils_conn_event_2str(event);
        return client;
    }

    std::string pool_dir_;
};

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

TEST_F(RpmadTest, ConnectionsWithoutAValidTokenAreRejected) {
    auto rpmad = StartRpmad(WithConfig("sessions:\n  token_ttl_seconds: 1\n"));
    ASSERT_NE(rpmad, nullptr);
    ASSERT_TRUE(rpmad->CreateRegion("a", kRegionSize).ok());
    rpma_conn_event event;

    // Malformed private data: too short, wrong magic, wrong version, none.
    const auto session = Open(*rpmad, "a");
    const auto token = *rpmad::wire::DecodeToken(
        std::as_bytes(std::span(session.token().data(), session.token().size())));
    auto good = rpmad::wire::EncodeConnectRequest(token);
    std::vector<std::byte> request(reinterpret_cast<std::byte *>(good.data()),
                                   reinterpret_cast<std::byte *>(good.data()) + good.size());
    std::vector<std::vector<std::byte>> malformed = {
        std::vector<std::byte>(request.begin(), request.begin() + 16), Pattern(32, 1), request,
        std::vector<std::byte>(1)};
    malformed[2][4] = std::byte{99};
    for (const auto &pdata : malformed) {
        EXPECT_EQ(SessionClient::Connect(session, &event, pdata), nullptr);
        EXPECT_EQ(event, RPMA_CONN_REJECTED);
    }
    // A wrong secret.
    auto wrong = token;
    wrong.secret[0] ^= 1;
    auto encoded = rpmad::wire::EncodeConnectRequest(wrong);
    EXPECT_EQ(SessionClient::Connect(
                  session, &event,
                  std::vector<std::byte>(reinterpret_cast<std::byte *>(encoded.data()),
                                         reinterpret_cast<std::byte *>(encoded.data()) + 32)),
              nullptr);
    EXPECT_EQ(event, RPMA_CONN_REJECTED);

    // The right token admits one connection, once.
    auto client = Connect(session);
    ASSERT_NE(client, nullptr);
    EXPECT_EQ(SessionClient::Connect(session, &event), nullptr);
    EXPECT_EQ(event, RPMA_CONN_REJECTED);

    // An expired token: wait for the daemon to expire the pending session.
    const auto late = Open(*rpmad, "a");
    for (int i = 0; i < 100; ++i) {
        v1::ListSessionsResponse list;
        ASSERT_TRUE(rpmad->Sessions()->ListSessions(Rpmad::Context().get(), {}, &list).ok());
        if (list.sessions_size() == 1)
            break;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    EXPECT_EQ(SessionClient::Connect(late, &event), nullptr);
    EXPECT_EQ(event, RPMA_CONN_REJECTED);

    v1::Stats stats;
    ASSERT_TRUE(rpmad->Daemon()->GetStats(Rpmad::Context().get(), {}, &stats).ok());
    EXPECT_EQ(stats.connections_rejected(), 7u);
    EXPECT_EQ(stats.connections_accepted(), 1u);
    // The daemon said why, naming no secret.
    client.reset();
    rpmad->process().Kill();
    const std::string &log = rpmad->process().Stderr();
    EXPECT_NE(log.find("wrong token for session " + session.session_id()), std::string::npos)
        << log;
    EXPECT_NE(log.find("was already used"), std::string::npos) << log;
    EXPECT_NE(log.find("expired"), std::string::npos) << log;
    EXPECT_NE(log.find("wrong magic"), std::string::npos) << log;
    // Each rejection names the peer it refused.
    EXPECT_NE(log.find("rejected a connection from 127.0.0.1:"), std::string::npos) << log;
}

// A flood of connections with a made-up token costs the log a few lines:
// each peer (address) gets a burst of lines per interval, and the rest are
// counted in "suppressed K similar lines" lines, reported at the latest when
// rpmad stops. Without the limit every rejection wrote one line.
TEST_F(RpmadTest, AFloodOfRejectedConnectionsWritesBoundedLinesThatAddUp) {
    auto rpmad = StartRpmad();
    ASSERT_NE(rpmad, nullptr);
    v1::OpenSessionResponse target;
    target.set_data_address("127.0.0.1");
    target.set_data_port(std::to_string(rpmad->data_port()));
    rpmad::wire::SessionToken made_up{};
    made_up.session_id = 0x5eed;
    made_up.secret.fill(0x42);
    const auto encoded = rpmad::wire::EncodeConnectRequest(made_up);
    const std::vector<std::byte> pdata(
        reinterpret_cast<const std::byte *>(encoded.data()),
        reinterpret_cast<const std::byte *>(encoded.data()) + encoded.size());

    constexpr int kAttempts = 500;
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kAttempts; ++i) {
        rpma_conn_event event;
        ASSERT_EQ(SessionClient::Connect(target, &event, pdata), nullptr);
        ASSERT_EQ(event, RPMA_CONN_REJECTED) << "attempt " << i;
    }
    const auto elapsed = std::chrono::steady_clock::now() - start;
    v1::Stats stats;
    ASSERT_TRUE(rpmad->Daemon()->GetStats(Rpmad::Context().get(), {}, &stats).ok());
    EXPECT_EQ(stats.connections_rejected(), static_cast<uint64_t>(kAttempts));
    ASSERT_EQ(kill(rpmad->process().pid(), SIGTERM), 0);
    ASSERT_TRUE(rpmad->process().Wait(std::chrono::seconds(10)).has_value());

    // 10 lines per peer per 5 s window; the attempts may span several.
    const int64_t windows =
        1 + std::chrono::duration_cast<std::chrono::seconds>(elapsed).count() / 5;
    std::istringstream log(rpmad->process().Stderr());
    int64_t written = 0, suppressed = 0, reports = 0;
    const std::string kReport = "suppressed ";
    for (std::string line; std::getline(log, line);) {
        if (line.find("rejected a connection from 127.0.0.1:") != std::string::npos) {
            ++written;
        } else if (const size_t at = line.find(kReport); at != std::string::npos) {
            EXPECT_NE(line.find(" similar lines from 127.0.0.1"), std::string::npos) << line;
            suppressed += std::stoll(line.substr(at + kReport.size()));
            ++reports;
        }
    }
    EXPECT_LE(written, 10 * windows) << rpmad->process().Stderr();
    EXPECT_LE(reports, windows);
    EXPECT_EQ(written + suppressed, kAttempts) << rpmad->process().Stderr();
}

// With sessions.client_tokens_file, OpenSession needs a client's token (or
// the admin's), and the session quotas hold per identity and per peer: one
// client opening sessions it never connects no longer takes them from the
// others. Before, anyone reaching the control plane could open
// limits.max_sessions pending sessions and every other client got
// RESOURCE_EXHAUSTED until their tokens expired.
TEST_F(RpmadTest, OpenSessionNeedsAClientTokenAndItsQuotasHoldPerIdentity) {
    const std::string tokens = TempPath("client-tokens");
    std::ofstream(tokens) << "# who may open sessions\nalice t-alice\nbob t-bob\n";
    auto rpmad =
        StartRpmad(WithConfig("control:\n  admin_token: t-admin\n"
                              "sessions:\n  client_tokens_file: " +
                              tokens +
                              "\n  max_per_identity: 5\n"
                              "  max_pending_per_peer: 3\n"));
    ASSERT_NE(rpmad, nullptr);
    ASSERT_TRUE(rpmad->CreateRegion("a", kRegionSize, nullptr, "t-admin").ok());
    auto open = [&](const std::string &token, v1::OpenSessionResponse *out = nullptr) {
        return OpenWithToken(*rpmad, "a", token, out);
    };

    // No token, a wrong one.
    grpc::Status status = open("");
    EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED);
    EXPECT_NE(status.error_message().find("client token"), std::string::npos)
        << status.error_message();
    EXPECT_EQ(open("t-mallory").error_code(), grpc::StatusCode::PERMISSION_DENIED);

    // alice opens sessions up to her pending quota, and no further.
    v1::OpenSessionResponse first;
    ASSERT_TRUE(open("t-alice", &first).ok());
    for (int i = 1; i < 3; ++i)
        ASSERT_TRUE(open("t-alice").ok()) << i;
    status = open("t-alice");
    EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
    EXPECT_NE(status.error_message().find("sessions.max_pending_per_peer"), std::string::npos)
        << status.error_message();
    // bob, from the same address, and the admin are not held up by her.
    EXPECT_TRUE(open("t-bob").ok());
    EXPECT_TRUE(open("t-admin").ok());
    // A connected session is no longer pending: room for one more.
    auto client = Connect(first);
    ASSERT_NE(client, nullptr);
    EXPECT_TRUE(open("t-alice").ok());
    EXPECT_EQ(open("t-alice").error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
    v1::ListSessionsResponse list;
    ASSERT_TRUE(rpmad->Sessions()->ListSessions(Rpmad::Context().get(), {}, &list).ok());
    EXPECT_EQ(list.sessions_size(), 6);

    client.reset();
    rpmad->process().Kill();
    const std::string &log = rpmad->process().Stderr();
    EXPECT_NE(log.find("by token:alice from 127.0.0.1"), std::string::npos) << log;
    EXPECT_NE(log.find("OpenSession refused: wrong client token from ipv4:127.0.0.1:"),
              std::string::npos)
        << log;
    EXPECT_EQ(log.find("t-alice"), std::string::npos) << "a token in the log: " << log;
}

// SIGHUP reads the token files again: a revoked client token admits no
// further OpenSession, a new one does, a session the revoked token opened
// stays until it is closed, and a new admin token replaces the old one.
// Before, revoking a token took a restart of the daemon.
TEST_F(RpmadTest, SighupReloadsTheTokenFiles) {
    const std::string tokens = TempPath("client-tokens");
    const std::string admin = TempPath("admin-token");
    std::ofstream(tokens) << "alice t-alice\nbob t-bob\n";
    std::ofstream(admin) << "t-admin\n";
    auto rpmad = StartRpmad(WithConfig("control:\n  admin_token_file: " + admin +
                                       "\nsessions:\n  client_tokens_file: " + tokens + "\n"));
    ASSERT_NE(rpmad, nullptr);
    ASSERT_TRUE(rpmad->CreateRegion("a", kRegionSize, nullptr, "t-admin").ok());
    auto open = [&](const std::string &token, v1::OpenSessionResponse *out = nullptr) {
        return OpenWithToken(*rpmad, "a", token, out);
    };
    v1::OpenSessionResponse alices;
    ASSERT_TRUE(open("t-alice", &alices).ok());
    auto client = Connect(alices);
    ASSERT_NE(client, nullptr);
    ASSERT_TRUE(open("t-bob").ok());

    std::ofstream(tokens) << "bob t-bob\ncarol t-carol\n";
    std::ofstream(admin) << "t-admin-2\n";
    ASSERT_EQ(kill(rpmad->process().pid(), SIGHUP), 0);
    ASSERT_TRUE(rpmad->process().WaitForLine(
        "rpmad: reloaded: log level info, 2 client tokens from " + tokens,
        std::chrono::seconds(10)))
        << rpmad->process().Describe();

    EXPECT_EQ(open("t-alice").error_code(), grpc::StatusCode::PERMISSION_DENIED);
    EXPECT_TRUE(open("t-bob").ok());
    EXPECT_TRUE(open("t-carol").ok());
    EXPECT_EQ(rpmad->CreateRegion("b", kRegionSize, nullptr, "t-admin").error_code(),
              grpc::StatusCode::PERMISSION_DENIED);
    EXPECT_TRUE(rpmad->CreateRegion("b", kRegionSize, nullptr, "t-admin-2").ok());
    EXPECT_TRUE(open("t-admin-2").ok());
    // alice's connected session carries on.
    EXPECT_EQ(client->Write(0, std::vector<std::byte>(8, std::byte{0x5e})), IBV_WC_SUCCESS)
        << "the revoked token's session";

    // A token file that is not valid changes nothing.
    std::ofstream(tokens) << "carol\n";
    ASSERT_EQ(kill(rpmad->process().pid(), SIGHUP), 0);
    std::string line;
    while (line.rfind("rpmad: reload failed: ", 0) != 0)
        ASSERT_TRUE(rpmad->process().ReadLine(&line, std::chrono::seconds(10)))
            << rpmad->process().Describe();
    EXPECT_TRUE(open("t-bob").ok());
    EXPECT_EQ(open("t-alice").error_code(), grpc::StatusCode::PERMISSION_DENIED);
}

// A token is bound to its region's incarnation: once the region is deleted
// (its sessions closed with it), the token admits nothing, also not to a
// region created again under the same name.
TEST_F(RpmadTest, ATokenOfADeletedRegionAdmitsNothingToItsSuccessor) {
    auto rpmad = StartRpmad();
    ASSERT_NE(rpmad, nullptr);
    ASSERT_TRUE(rpmad->CreateRegion("reused", kRegionSize).ok());
    const auto old_session = Open(*rpmad, "reused");
    v1::DeleteRegionRequest del;
    v1::DeleteRegionResponse deleted;
    del.set_name("reused");
    del.set_force(true);
    ASSERT_TRUE(rpmad->Regions()->DeleteRegion(Rpmad::Context().get(), del, &deleted).ok());
    EXPECT_EQ(deleted.closed_sessions(), 1u);
    ASSERT_TRUE(rpmad->CreateRegion("reused", kRegionSize).ok());
    rpma_conn_event event;
    EXPECT_EQ(SessionClient::Connect(old_session, &event), nullptr);
    EXPECT_EQ(event, RPMA_CONN_REJECTED);
    // The successor's own session works.
    auto client = Connect(Open(*rpmad, "reused"));
    ASSERT_NE(client, nullptr);
    EXPECT_EQ(client->Write(0, Pattern(4096, 1)), IBV_WC_SUCCESS);
}

// Secrets stay out of the log even at its most verbose level, rpma_core's
// own lines included: neither the session token's secret (raw or in hex)
// nor the admin token.
TEST_F(RpmadTest, NoSecretReachesTheLogEvenAtTrace) {
    RpmadOptions options = WithConfig("control:\n  admin_token: adm1n-s3cret-t0ken\n");
    options.args = {"--log-level", "trace"};
    auto rpmad = StartRpmad(options);
    ASSERT_NE(rpmad, nullptr);
    ASSERT_TRUE(rpmad->CreateRegion("r", kRegionSize, nullptr, "adm1n-s3cret-t0ken").ok());
    ASSERT_EQ(rpmad->CreateRegion("s", kRegionSize, nullptr, "wrong").error_code(),
              grpc::StatusCode::PERMISSION_DENIED);
    const auto session = Open(*rpmad, "r");
    const auto token = *rpmad::wire::DecodeToken(
        std::as_bytes(std::span(session.token().data(), session.token().size())));
    rpma_conn_event event;
    auto wrong = token;
    wrong.secret[15] ^= 1;
    auto encoded = rpmad::wire::EncodeConnectRequest(wrong);
    EXPECT_EQ(
        SessionClient::Connect(
            session, &event,
            std::vector<std::byte>(reinterpret_cast<std::byte *>(encoded.data()),
                                   reinterpret_cast<std::byte *>(encoded.data()) + encoded.size())),
        nullptr);
    auto client = Connect(session);
    ASSERT_NE(client, nullptr);
    ASSERT_EQ(client->Write(0, Pattern(4096, 2)), IBV_WC_SUCCESS);
    ASSERT_EQ(client->Flush(0, 4096), IBV_WC_SUCCESS);
    EXPECT_TRUE(client->Disconnect());
    ASSERT_EQ(kill(rpmad->process().pid(), SIGTERM), 0);
    ASSERT_TRUE(rpmad->process().Wait(std::chrono::seconds(10)).has_value());

    const std::string log = rpmad->process().Stdout() + rpmad->process().Stderr();
    ASSERT_NE(log.find("OpenSession(r)"), std::string::npos) << "not at trace level: " << log;
    // Eight bytes of either secret are enough to tell.
    std::string lower_hex, upper_hex;
    for (size_t i = 0; i < 8; ++i) {
        char byte[3];
        snprintf(byte, sizeof(byte), "%02x", token.secret[i]);
        lower_hex += byte;
        snprintf(byte, sizeof(byte), "%02X", token.secret[i]);
        upper_hex += byte;
    }
    const std::string raw(reinterpret_cast<const char *>(token.secret.data()), 8);
    EXPECT_EQ(log.find(lower_hex), std::string::npos) << log;
    EXPECT_EQ(log.find(upper_hex), std::string::npos) << log;
    EXPECT_EQ(log.find(raw), std::string::npos) << log;
    EXPECT_EQ(log.find("adm1n-s3cret"), std::string::npos) << log;
}

TEST_F(RpmadTest, ASessionCannotReachAnotherRegionEvenWithItsDescriptor) {
    auto rpmad = StartRpmad();
    ASSERT_NE(rpmad, nullptr);
    ASSERT_TRUE(rpmad->CreateRegion("a", kRegionSize).ok());
    ASSERT_TRUE(rpmad->CreateRegion("b", kRegionSize).ok());
    const auto b_bytes = Pattern(4096, 0xb0);
    const auto b_session = Open(*rpmad, "b");
    {
        auto b = Connect(b_session);
        ASSERT_NE(b, nullptr);
        ASSERT_EQ(b->Write(0, b_bytes), IBV_WC_SUCCESS);
    }
    // A client of region a learns b's descriptor (here: from b's session).
    auto b_memory = RemoteMemory::FromDescriptor(std::as_bytes(
        std::span(b_session.region_descriptor().data(), b_session.region_descriptor().size())));
    ASSERT_TRUE(b_memory.ok());
    auto attacks = std::vector<std::function<ibv_wc_status(SessionClient &)>>{
        [&](SessionClient &c) { return c.Write(0, Pattern(4096, 0xee), &*b_memory); },
        [&](SessionClient &c) {
            std::vector<std::byte> out;
            return c.Read(0, 4096, &out, &*b_memory);
        },
        [&](SessionClient &c) { return c.Flush(0, 4096, RPMA_FLUSH_TYPE_PERSISTENT, &*b_memory); },
    };
    // And a's own descriptor at ranges past a's end, where memory of b
    // could lie: just past it, straddling it, far beyond.
    for (const uint64_t offset : {kRegionSize, kRegionSize - 2048, uint64_t{1} << 40}) {
        attacks.push_back(
            [offset](SessionClient &c) { return c.Write(offset, Pattern(4096, 0xee)); });
        attacks.push_back([offset](SessionClient &c) {
            std::vector<std::byte> out;
            return c.Read(offset, 4096, &out);
        });
    }
    for (size_t i = 0; i < attacks.size(); ++i) {
        auto a = Connect(Open(*rpmad, "a"));
        ASSERT_NE(a, nullptr);
        EXPECT_NE(attacks[i](*a), IBV_WC_SUCCESS) << "attack " << i;
    }
    // b is untouched.
    auto b = Connect(Open(*rpmad, "b"));
    ASSERT_NE(b, nullptr);
    std::vector<std::byte> read;
    ASSERT_EQ(b->Read(0, 4096, &read), IBV_WC_SUCCESS);
    EXPECT_EQ(read, b_bytes);
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

TEST_F(RpmadTest, SighupReloadsTheLogLevelFromTheConfigFile) {
    auto rpmad = StartRpmad(WithConfig("logging:\n  level: info\n"));
    ASSERT_NE(rpmad, nullptr);
    ASSERT_TRUE(rpmad->CreateRegion("quiet", 4096).ok());
    std::ofstream(rpmad->config_path()) << "logging:\n  level: debug\n";
    ASSERT_EQ(kill(rpmad->process().pid(), SIGHUP), 0);
    ASSERT_TRUE(
        rpmad->process().WaitForLine("rpmad: reloaded: log level debug", std::chrono::seconds(10)))
        << rpmad->process().Describe();
    ASSERT_TRUE(rpmad->CreateRegion("traced", 4096).ok());
    // GetConfig reports the level now in effect (it reported the first one).
    v1::EffectiveConfig config;
    ASSERT_TRUE(rpmad->Daemon()->GetConfig(Rpmad::Context().get(), {}, &config).ok());
    EXPECT_NE(config.yaml().find("level: debug"), std::string::npos) << config.yaml();
    // A bad file changes nothing, and the daemon keeps serving.
    std::ofstream(rpmad->config_path()) << "logging:\n  levle: warn\n";
    ASSERT_EQ(kill(rpmad->process().pid(), SIGHUP), 0);
    ASSERT_TRUE(rpmad->CreateRegion("still", 4096).ok());
    ASSERT_EQ(kill(rpmad->process().pid(), SIGTERM), 0);
    ASSERT_TRUE(rpmad->process().Wait(std::chrono::seconds(10)).has_value());
    const std::string &log = rpmad->process().Stderr();
    EXPECT_EQ(log.find("CreateRegion(quiet)"), std::string::npos) << log;
    EXPECT_NE(log.find("CreateRegion(traced)"), std::string::npos) << log;
    EXPECT_NE(log.find("reload: the configuration is not valid"), std::string::npos) << log;
    EXPECT_NE(log.find("CreateRegion(still)"), std::string::npos) << log;
}

// Started by systemd (JOURNAL_STREAM set, logging.target auto), rpmad's log
// lines carry the journal's priority prefix and no timestamp of their own,
// one line per event naming what it concerns.
TEST_F(RpmadTest, UnderTheJournalLinesCarryAPriorityAndNoTimestamp) {
    RpmadOptions options;
    options.env = {"JOURNAL_STREAM=8:4242"};
    auto rpmad = StartRpmad(options);
    ASSERT_NE(rpmad, nullptr);
    ASSERT_TRUE(rpmad->CreateRegion("journaled", kRegionSize).ok());
    const auto session = Open(*rpmad, "journaled");
    {
        auto client = Connect(session);
        ASSERT_NE(client, nullptr);
        EXPECT_TRUE(client->Disconnect());
    }
    ASSERT_EQ(kill(rpmad->process().pid(), SIGTERM), 0);
    ASSERT_TRUE(rpmad->process().Wait(std::chrono::seconds(10)).has_value());
    const std::string &log = rpmad->process().Stderr();
    std::istringstream lines(log);
    int count = 0;
    for (std::string line; std::getline(lines, line); ++count) {
        EXPECT_TRUE(line.size() > 3 && line[0] == '<' && line[1] >= '0' && line[1] <= '7' &&
                    line[2] == '>')
            << "no priority prefix: " << line;
        const bool stamped = line.size() > 13 && std::isdigit(line[3]) && line[7] == '-' &&
                             line[10] == '-' && line[13] == 'T';
        EXPECT_FALSE(stamped) << "a timestamp: " << line;
    }
    EXPECT_GT(count, 4) << log;
    EXPECT_NE(log.find("<6>region 'journaled': created"), std::string::npos) << log;
    EXPECT_NE(
        log.find("<6>session " + session.session_id() + ": accepted a connection from 127.0.0.1:"),
        std::string::npos)
        << log;
}

// systemd's notify protocol, spoken to a socket of the test's own: READY
// once serving, watchdog pings while the data plane answers, STOPPING on
// SIGTERM.
TEST_F(RpmadTest, TellsTheServiceManagerReadyWatchdogAndStopping) {
    NotifySocket notify;
    ASSERT_TRUE(notify.ok()) << strerror(errno);
    RpmadOptions options;
    options.env = notify.Env(200000);
    auto rpmad = StartRpmad(options);
    ASSERT_NE(rpmad, nullptr);
    EXPECT_TRUE(notify.Await("READY=1"));
    for (int ping = 0; ping < 3; ++ping)
        EXPECT_TRUE(notify.Await("WATCHDOG=1")) << ping;
    ASSERT_EQ(kill(rpmad->process().pid(), SIGTERM), 0);
    EXPECT_TRUE(notify.Await("STOPPING=1"));
    const auto status = rpmad->process().Wait(std::chrono::seconds(10));
    ASSERT_TRUE(status.has_value());
    EXPECT_TRUE(status->Success());
}

TEST_F(RpmadTest, SigtermStopsGracefullyAndDisconnectsClients) {
    auto rpmad = StartRpmad();
    ASSERT_NE(rpmad, nullptr);
    ASSERT_TRUE(rpmad->CreateRegion("r", kRegionSize).ok());
    auto client = Connect(Open(*rpmad, "r"));
    ASSERT_NE(client, nullptr);
    ASSERT_EQ(kill(rpmad->process().pid(), SIGTERM), 0);
    const rpma_conn_event event = client->WaitEvent(10000);
    EXPECT_TRUE(event == RPMA_CONN_CLOSED || event == RPMA_CONN_LOST) << event;
    client.reset();
    const auto status = rpmad->process().Wait(std::chrono::seconds(10));
    ASSERT_TRUE(status.has_value());
    EXPECT_TRUE(status->Success()) << rpmad->process().Describe();
    EXPECT_NE(rpmad->process().Stderr().find("stopped"), std::string::npos);
}

}  // namespace
}  // namespace rpma::testing
