// rpmad end to end, who may do what: connections without a valid token are
// rejected (a flood of them logs bounded lines), OpenSession needs a client
// token and its quotas hold per identity, SIGHUP reloads the token files, a
// deleted region's token admits nothing to its successor, no secret reaches
// the log, and a session cannot reach another region even with its
// descriptor.
#include "tests/integration/rpmad_fixture.h"

namespace rpma::testing {
namespace {

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

}  // namespace
}  // namespace rpma::testing
