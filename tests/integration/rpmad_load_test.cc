// rpmad under load and under clients that misbehave: many clients at once,
// a client that vanishes without a disconnect, a client that stops reading.
// What must hold: every well-behaved client gets its bytes back, the daemon
// gives back every descriptor and session it took, and no client can hold
// up another.
#include <signal.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "tests/integration/rpmad_harness.h"

namespace rpma::testing {
namespace {

constexpr int kClients = 64;
constexpr int kRegions = 4;
constexpr uint64_t kChunk = 64 << 10;  // one client's share of its region
constexpr uint64_t kRegionSize = kChunk * (kClients / kRegions);
// After warm-up the daemon's resident set may still grow by allocator
// caching and gRPC's per-call buffers, not with the number of clients
// served: a few MiB. A leak of one client's 64 KiB per round, or of a
// connection's buffers, exceeds this over the rounds measured.
// Under AddressSanitizer freed memory waits in its quarantine (256 MiB by
// default) before reuse, so the resident set grows without a leak; its
// LeakSanitizer checks leaks there instead.
// ThreadSanitizer maps its shadow (4 bytes per byte) and meta shadow as
// memory is first touched, so what the daemon touches counts five times.
#if defined(__SANITIZE_ADDRESS__)
constexpr long kResidentGrowthKiB = (8 << 10) + (256 << 10);
#elif defined(__SANITIZE_THREAD__)
constexpr long kResidentGrowthKiB = 5 * (8 << 10);
#else
constexpr long kResidentGrowthKiB = 8 << 10;
#endif
constexpr int kPollRounds = 200;  // with 50 ms between them: 10 s

std::string RegionName(int region) {
    return "load-" + std::to_string(region);
}

// One client's whole life; an empty string when everything went right,
// otherwise what went wrong.
std::string ClientRound(const Rpmad &rpmad, int client) {
    const std::string region = RegionName(client % kRegions);
    const uint64_t offset = kChunk * static_cast<uint64_t>(client / kRegions);
    v1::OpenSessionResponse session;
    if (const grpc::Status status = rpmad.OpenSession(region, &session); !status.ok())
        return "OpenSession: " + status.error_message();
    rpma_conn_event event;
    auto connection = SessionClient::Connect(session, &event);
    if (connection == nullptr)
        return std::string("connect: ") + rpma_utils_conn_event_2str(event);
    const auto bytes = Pattern(kChunk, static_cast<uint8_t>(client * 7 + 1));
    if (ibv_wc_status s = connection->Write(offset, bytes); s != IBV_WC_SUCCESS)
        return std::string("write: ") + ibv_wc_status_str(s);
    if (ibv_wc_status s = connection->Flush(offset, kChunk); s != IBV_WC_SUCCESS)
        return std::string("flush: ") + ibv_wc_status_str(s);
    std::vector<std::byte> read;
    if (ibv_wc_status s = connection->Read(offset, kChunk, &read); s != IBV_WC_SUCCESS)
        return std::string("read: ") + ibv_wc_status_str(s);
    if (read != bytes)
        return "read back other bytes than written";
    if (!connection->Disconnect())
        return "disconnect did not end in CLOSED";
    return "";
}

// Runs `count` clients, each on a thread of its own, all at once; returns
// what each reported ("" for success).
std::vector<std::string> RunClients(int count, const std::function<std::string(int)> &client) {
    std::vector<std::string> outcomes(count);
    std::vector<std::thread> threads;
    for (int i = 0; i < count; ++i)
        threads.emplace_back([&, i] { outcomes[i] = client(i); });
    for (auto &thread : threads)
        thread.join();
    return outcomes;
}

void ExpectAllSucceeded(const std::vector<std::string> &outcomes) {
    for (size_t i = 0; i < outcomes.size(); ++i)
        EXPECT_EQ(outcomes[i], "") << "client " << i;
}

struct Activity {
    int sessions = -1;
    uint32_t connections = ~0u;
    uint64_t errors = 0;
};

Activity ActivityOf(const Rpmad &rpmad) {
    Activity activity;
    v1::ListSessionsResponse list;
    if (rpmad.Sessions()->ListSessions(Rpmad::Context().get(), {}, &list).ok())
        activity.sessions = list.sessions_size();
    v1::Stats stats;
    if (rpmad.Daemon()->GetStats(Rpmad::Context().get(), {}, &stats).ok()) {
        activity.connections = stats.connections();
        activity.errors = stats.errors();
    }
    return activity;
}

// The daemon tears a connection down on its own thread after the client's
// disconnect or loss: no event tells the test, so poll, bounded.
bool WaitIdle(const Rpmad &rpmad) {
    for (int i = 0; i < kPollRounds; ++i) {
        const Activity activity = ActivityOf(rpmad);
        if (activity.sessions == 0 && activity.connections == 0)
            return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
}

int SessionsOf(const Rpmad &rpmad, const std::string &region) {
    v1::ListSessionsRequest request;
    request.set_region(region);
    v1::ListSessionsResponse list;
    if (!rpmad.Sessions()->ListSessions(Rpmad::Context().get(), request, &list).ok())
        return -1;
    return list.sessions_size();
}

// The state letter of /proc/PID/stat ('T' for stopped).
char ProcessState(pid_t pid) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    std::getline(stat, line);
    const size_t end = line.rfind(')');
    return end == std::string::npos || end + 2 >= line.size() ? '?' : line[end + 2];
}

// Bytes that arrived for the TCP sockets of `pid` and that it has not read
// (the rx_queue column of /proc/net/tcp for the sockets among its fds).
uint64_t UnreadBytes(pid_t pid) {
    std::set<std::string> inodes;
    const std::string fd_dir = "/proc/" + std::to_string(pid) + "/fd";
    std::error_code error;
    for (const auto &entry : std::filesystem::directory_iterator(fd_dir, error)) {
        const std::string target = std::filesystem::read_symlink(entry.path(), error).string();
        if (!error && target.rfind("socket:[", 0) == 0)
            inodes.insert(target.substr(8, target.size() - 9));
    }
    uint64_t unread = 0;
    for (const char *table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
        std::ifstream file(table);
        std::string line;
        std::getline(file, line);  // the header
        while (std::getline(file, line)) {
            std::istringstream fields(line);
            std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout, inode;
            fields >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >>
                timeout >> inode;
            if (inodes.count(inode))
                unread += std::stoull(queues.substr(queues.find(':') + 1), nullptr, 16);
        }
    }
    return unread;
}

class RpmadLoadTest : public ::testing::Test {
  protected:
    void SetUp() override {
        RpmadOptions options;
        options.pool_dir = TempPath("pool");
        // The harness reads rpmad's output only while it waits on it: the
        // info lines of hundreds of sessions would fill the pipe (64 KiB)
        // and block rpmad's next log call, data-plane thread included.
        options.args = {"--log-level", "warn"};
        std::string error;
        rpmad_ = Rpmad::Start(options, &error);
        ASSERT_NE(rpmad_, nullptr) << error;
        for (int region = 0; region < kRegions; ++region) {
            const grpc::Status status = rpmad_->CreateRegion(RegionName(region), kRegionSize);
            ASSERT_TRUE(status.ok()) << status.error_message();
        }
    }

    void TearDown() override {
        // The daemon's log is what explains a failure here.
        if (HasFailure() && rpmad_ != nullptr) {
            rpmad_->process().Kill();
            ADD_FAILURE() << rpmad_->process().Describe();
        }
    }

    // A child process connected with a session of `region`.
    std::unique_ptr<Process> StartChild(const std::string &region, const std::string &mode,
                                        std::string *first_line) {
        v1::OpenSessionResponse session;
        const grpc::Status status = rpmad_->OpenSession(region, &session);
        EXPECT_TRUE(status.ok()) << status.error_message();
        const std::string path = TempPath("session");
        std::ofstream(path, std::ios::binary) << session.SerializeAsString();
        std::string error;
        auto child = Process::Start({Runfile("tests/integration/rpmad_child_client"), path, mode},
                                    {"RPMA_PROVIDER=tcp"}, &error);
        EXPECT_NE(child, nullptr) << error;
        if (child == nullptr)
            return nullptr;
        EXPECT_TRUE(child->ReadLine(first_line, std::chrono::seconds(10))) << child->Describe();
        return child;
    }

    std::unique_ptr<Rpmad> rpmad_;
};

TEST_F(RpmadLoadTest, SixtyFourConcurrentClientsAllSucceedAndLeaveNothingBehind) {
    const pid_t pid = rpmad_->process().pid();
    // Warm-up: the first round maps the regions' pages and grows the
    // daemon's allocator and thread pools to what a round needs.
    ExpectAllSucceeded(RunClients(kClients, [&](int i) { return ClientRound(*rpmad_, i); }));
    ASSERT_TRUE(WaitIdle(*rpmad_));
    const int fds = SettledFdCount(pid);
    const long resident = ResidentKiB(pid);
    ASSERT_GT(fds, 0);
    ASSERT_GT(resident, 0);

    for (int round = 0; round < 3; ++round) {
        ExpectAllSucceeded(RunClients(kClients, [&](int i) { return ClientRound(*rpmad_, i); }));
        ASSERT_TRUE(WaitIdle(*rpmad_)) << "sessions or connections left after round " << round;
        // Every connection's sockets, event fds and completion channels are
        // closed once its session is gone: exactly the baseline again.
        EXPECT_EQ(AwaitFdCount(pid, fds), fds) << "round " << round;
    }
    EXPECT_LE(ResidentKiB(pid), resident + kResidentGrowthKiB)
        << "baseline " << resident << " KiB after warm-up";

    v1::Stats stats;
    ASSERT_TRUE(rpmad_->Daemon()->GetStats(Rpmad::Context().get(), {}, &stats).ok());
    EXPECT_EQ(stats.connections_accepted(), 4u * kClients);
    EXPECT_EQ(stats.sessions_opened(), 4u * kClients);
    EXPECT_EQ(stats.connections_rejected(), 0u);
    EXPECT_EQ(stats.errors(), 0u);
    EXPECT_EQ(stats.sessions(), 0u);
    EXPECT_EQ(stats.connections(), 0u);
}

// A GPSPM session has receives posted for its flush requests; a clean
// disconnect flushes them, which is the end of the connection, not an
// error: the daemon counts none and logs each as a disconnect.
TEST_F(RpmadLoadTest, GpspmClientsThatDisconnectCleanlyCountNoErrors) {
    RpmadOptions options;
    options.pool_dir = TempPath("gpspm-pool");
    options.config_yaml = "data:\n  persistence: gpspm\n";
    std::string error;
    auto gpspm = Rpmad::Start(options, &error);
    ASSERT_NE(gpspm, nullptr) << error;
    for (int region = 0; region < kRegions; ++region)
        ASSERT_TRUE(gpspm->CreateRegion(RegionName(region), kRegionSize).ok());
    ExpectAllSucceeded(RunClients(kRegions, [&](int i) -> std::string {
        v1::OpenSessionResponse session;
        if (const grpc::Status status = gpspm->OpenSession(RegionName(i), &session); !status.ok())
            return "OpenSession: " + status.error_message();
        rpma_conn_event event;
        auto connection = SessionClient::Connect(session, &event);
        if (connection == nullptr)
            return std::string("connect: ") + rpma_utils_conn_event_2str(event);
        if (connection->Write(0, Pattern(kChunk, 9)) != IBV_WC_SUCCESS)
            return "write failed";
        const auto response = connection->GpspmFlush(0, kChunk);
        if (!response || response->status != rpmad::wire::FlushStatus::kOk)
            return "the flush request was not answered kOk";
        return connection->Disconnect() ? "" : "disconnect did not end in CLOSED";
    }));
    ASSERT_TRUE(WaitIdle(*gpspm));
    EXPECT_EQ(ActivityOf(*gpspm).errors, 0u);
}

TEST_F(RpmadLoadTest, AClientKilledWithoutDisconnectingIsCleanedUpWhileOthersWork) {
    const pid_t pid = rpmad_->process().pid();
    ExpectAllSucceeded(RunClients(kRegions, [&](int i) { return ClientRound(*rpmad_, i); }));
    ASSERT_TRUE(WaitIdle(*rpmad_));
    const int fds = SettledFdCount(pid);

    std::string line;
    auto child = StartChild(RegionName(0), "idle", &line);
    ASSERT_NE(child, nullptr);
    ASSERT_EQ(line, "connected") << child->Describe();
    ASSERT_EQ(SessionsOf(*rpmad_, RegionName(0)), 1);

    // Another client of the same region, connected throughout.
    v1::OpenSessionResponse session;
    ASSERT_TRUE(rpmad_->OpenSession(RegionName(0), &session).ok());
    rpma_conn_event event;
    auto survivor = SessionClient::Connect(session, &event);
    ASSERT_NE(survivor, nullptr) << rpma_utils_conn_event_2str(event);
    const auto before = Pattern(kChunk, 0x11);
    ASSERT_EQ(survivor->Write(0, before), IBV_WC_SUCCESS);
    ASSERT_EQ(survivor->Flush(0, kChunk), IBV_WC_SUCCESS);

    child->Kill();
    // Meanwhile the others keep working, the survivor included.
    const auto during = Pattern(kChunk, 0x22);
    ASSERT_EQ(survivor->Write(kChunk, during), IBV_WC_SUCCESS);
    ASSERT_EQ(survivor->Flush(kChunk, kChunk), IBV_WC_SUCCESS);
    // Clients 8 to 15 write chunks 2 and 3 of each region, not the survivor's.
    ExpectAllSucceeded(RunClients(8, [&](int i) { return ClientRound(*rpmad_, 8 + i); }));

    // The dead client's session and connection go by themselves; only the
    // survivor's stay. Both are awaited: the session table and the
    // connection count are not updated in one step.
    bool cleaned = false;
    Activity activity;
    for (int i = 0; i < kPollRounds && !cleaned; ++i) {
        activity = ActivityOf(*rpmad_);
        cleaned = SessionsOf(*rpmad_, RegionName(0)) == 1 && activity.connections == 1u;
        if (!cleaned)
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ASSERT_TRUE(cleaned) << "the killed client's session or connection was not closed ("
                         << activity.connections << " connections)";
    EXPECT_EQ(activity.errors, 1u) << "a connection lost without a disconnect is an error";

    std::vector<std::byte> read;
    ASSERT_EQ(survivor->Read(0, 2 * kChunk, &read), IBV_WC_SUCCESS);
    EXPECT_TRUE(std::equal(before.begin(), before.end(), read.begin()));
    EXPECT_TRUE(std::equal(during.begin(), during.end(), read.begin() + kChunk));
    EXPECT_TRUE(survivor->Disconnect());
    ASSERT_TRUE(WaitIdle(*rpmad_));
    EXPECT_EQ(AwaitFdCount(pid, fds), fds);
}

TEST_F(RpmadLoadTest, AClientThatStopsReadingHoldsUpNoOtherClient) {
    const pid_t pid = rpmad_->process().pid();
    ExpectAllSucceeded(RunClients(kRegions, [&](int i) { return ClientRound(*rpmad_, i); }));
    ASSERT_TRUE(WaitIdle(*rpmad_));
    const int fds = SettledFdCount(pid);

    // The stalled client asked for several MiB and stopped itself: the
    // daemon's answers fill its socket (a receive buffer nobody reads does
    // not grow: about 128 KiB on loopback), the rest waits in the daemon.
    std::string line;
    auto child = StartChild(RegionName(1), "stalled", &line);
    ASSERT_NE(child, nullptr);
    ASSERT_EQ(line.rfind("posted ", 0), 0u) << child->Describe();
    bool stalled = false;
    for (int i = 0; i < kPollRounds && !stalled; ++i) {
        stalled = ProcessState(child->pid()) == 'T' && UnreadBytes(child->pid()) >= (64u << 10);
        if (!stalled)
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ASSERT_TRUE(stalled) << "state " << ProcessState(child->pid()) << ", "
                         << UnreadBytes(child->pid()) << " bytes unread";

    // Every other client, of every region (the stalled one's too), works.
    ExpectAllSucceeded(RunClients(kClients, [&](int i) { return ClientRound(*rpmad_, i); }));
    EXPECT_EQ(SessionsOf(*rpmad_, RegionName(1)), 1);

    child->Kill();
    ASSERT_TRUE(WaitIdle(*rpmad_)) << "the stalled client's session outlived it";
    EXPECT_EQ(AwaitFdCount(pid, fds), fds);
}

}  // namespace
}  // namespace rpma::testing
