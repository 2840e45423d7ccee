// rpmad end to end, the process's life: SIGHUP reloads the log level, under
// the journal lines carry a priority and no timestamp, the service manager
// is told ready, watchdog and stopping, SIGTERM stops gracefully and
// disconnects the clients.
#include "tests/integration/rpmad_fixture.h"

namespace rpma::testing {
namespace {

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
