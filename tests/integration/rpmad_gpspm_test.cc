// rpmad's GPSPM flush service against clients that misbehave and disks that
// stall or fail: a real rpmad on loopback (tcp provider), its pool in real
// files, and, where a disk must misbehave on cue, msync_shim.so preloaded
// into it (tests/integration/msync_shim.c).
#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "tests/integration/notify_socket.h"
#include "tests/integration/rpmad_harness.h"

namespace rpma::testing {
namespace {

namespace wire = rpmad::wire;

constexpr uint64_t kRegionSize = 1 << 20;
constexpr uint64_t kGiB = uint64_t{1} << 30;
// How long another session's accept and 8-byte flush may take while a
// large persist is on the disk: far below the hold (until released, or
// 30 s) and the client's 10 s connect timeout.
constexpr auto kOtherSessionBound = std::chrono::seconds(5);

// rpmad's environment with msync_shim.so taking msyncs of at least
// `min_bytes` (and doing nothing else with them unless told).
std::vector<std::string> ShimEnv(uint64_t min_bytes) {
    return {"LD_PRELOAD=" + Runfile("tests/integration/msync_shim.so"),
            "RPMA_TEST_MSYNC_MIN_BYTES=" + std::to_string(min_bytes)};
}

// msync_shim.so's FIFOs: the shim says on `started` that it holds an
// msync, and goes on once Release() writes to `release`.
class MsyncGate {
  public:
    MsyncGate() : started_(TempPath("msync-started")), release_(TempPath("msync-release")) {
        ok_ = mkfifo(started_.c_str(), 0600) == 0 && mkfifo(release_.c_str(), 0600) == 0;
        // Open before rpmad may write: the shim signals only to a reader.
        started_fd_ = open(started_.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
        ok_ = ok_ && started_fd_ >= 0;
    }
    ~MsyncGate() {
        Release();
        if (started_fd_ >= 0)
            close(started_fd_);
    }
    bool ok() const { return ok_; }

    // rpmad's environment: msyncs of at least `min_bytes` are held.
    std::vector<std::string> Env(uint64_t min_bytes) const {
        std::vector<std::string> env = ShimEnv(min_bytes);
        env.push_back("RPMA_TEST_MSYNC_STARTED=" + started_);
        env.push_back("RPMA_TEST_MSYNC_RELEASE=" + release_);
        return env;
    }
    bool WaitStarted(std::chrono::milliseconds timeout) const {
        pollfd p{started_fd_, POLLIN, 0};
        return poll(&p, 1, static_cast<int>(timeout.count())) == 1;
    }
    // Lets a held msync go on (nothing when none is held).
    void Release() const {
        const int fd = open(release_.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0)
            return;
        (void)!write(fd, "r", 1);
        close(fd);
    }

  private:
    std::string started_;
    std::string release_;
    int started_fd_ = -1;
    bool ok_ = false;
};

// A GPSPM flush on a thread of its own, so that the test goes on while the
// daemon persists; releases the gate before joining when the test ends early.
class FlushInBackground {
  public:
    FlushInBackground(SessionClient &client, uint64_t offset, uint64_t length,
                      const MsyncGate &gate)
        : gate_(gate), thread_([this, &client, offset, length] {
              answer_ = client.GpspmFlush(offset, length);
              answered_ = true;
          }) {}
    ~FlushInBackground() { Join(); }
    bool answered() const { return answered_; }
    std::optional<wire::FlushResponse> Join() {
        gate_.Release();
        if (thread_.joinable())
            thread_.join();
        return answer_;
    }

  private:
    const MsyncGate &gate_;
    std::optional<wire::FlushResponse> answer_;
    std::atomic<bool> answered_{false};
    std::thread thread_;
};

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

// A GiB written back on the disk (held there by the shim) must not stall
// the data plane: another session is accepted and its flush answered while
// it lasts, the watchdog keeps being pinged (the data-plane thread answers
// it), and the large one is answered only once its msync is done.
TEST_F(RpmadGpspmTest, AGibFlushOnASlowDiskDelaysNoOtherSession) {
    MsyncGate gate;
    ASSERT_TRUE(gate.ok());
    NotifySocket notify;
    ASSERT_TRUE(notify.ok());
    std::vector<std::string> env = gate.Env(kGiB / 2);
    for (std::string &var : notify.Env(200000))
        env.push_back(std::move(var));
    auto rpmad = StartRpmad(env);
    ASSERT_NE(rpmad, nullptr);
    ASSERT_TRUE(rpmad->CreateRegion("big", kGiB).ok());
    ASSERT_TRUE(rpmad->CreateRegion("small", kRegionSize).ok());
    auto big = Connect(*rpmad, "big");
    ASSERT_NE(big, nullptr);
    ASSERT_EQ(big->Write(kGiB - 4096, Pattern(4096, 9)), IBV_WC_SUCCESS);

    FlushInBackground large(*big, 0, kGiB, gate);
    ASSERT_TRUE(gate.WaitStarted(std::chrono::seconds(10))) << "the GiB msync did not start";
    // Pings from now on vouch for the data-plane thread during the msync.
    notify.Drain();
    for (int ping = 0; ping < 3; ++ping)
        EXPECT_TRUE(notify.Await("WATCHDOG=1"))
            << "no watchdog ping " << ping << " during the msync";
    const auto begin = std::chrono::steady_clock::now();
    auto small = Connect(*rpmad, "small");
    ASSERT_NE(small, nullptr) << "no accept while another session's msync ran";
    ASSERT_EQ(small->Write(0, Pattern(8, 1)), IBV_WC_SUCCESS);
    auto answer = small->GpspmFlush(0, 8);
    const auto took = std::chrono::steady_clock::now() - begin;
    ASSERT_TRUE(answer.has_value());
    EXPECT_EQ(answer->status, wire::FlushStatus::kOk);
    EXPECT_LT(took, kOtherSessionBound);
    EXPECT_FALSE(large.answered()) << "the GiB flush was answered before its msync ended";

    const auto large_answer = large.Join();
    ASSERT_TRUE(large_answer.has_value());
    EXPECT_EQ(large_answer->status, wire::FlushStatus::kOk);
    EXPECT_EQ(large_answer->request_id, 1u);
}

// A client takes an answer as proof of every request before it (the client
// library keeps the highest id answered), so a small request behind a large
// one, persisted on a worker, is answered after it.
TEST_F(RpmadGpspmTest, ASessionsAnswersKeepTheOrderOfItsRequests) {
    auto rpmad = StartRpmad();
    ASSERT_NE(rpmad, nullptr);
    ASSERT_TRUE(rpmad->CreateRegion("log", 4 * kRegionSize).ok());
    auto client = Connect(*rpmad, "log");
    ASSERT_NE(client, nullptr);
    // Dirty pages, so that the large msync has work to do on the disk.
    for (uint64_t offset = 0; offset < 2 * kRegionSize; offset += kRegionSize)
        ASSERT_EQ(client->Write(offset, Pattern(kRegionSize, 3)), IBV_WC_SUCCESS);
    auto responses = client->GpspmFlushBatch({{0, 2 * kRegionSize}, {8, 8}, {16, 8}});
    ASSERT_TRUE(responses.has_value());
    ASSERT_EQ(responses->size(), 3u);
    for (uint64_t i = 0; i < responses->size(); ++i) {
        EXPECT_EQ((*responses)[i].status, wire::FlushStatus::kOk) << i;
        EXPECT_EQ((*responses)[i].request_id, i + 1) << "answers out of request order";
    }
}

// Deleting a region whose flush is on the disk returns at once (its
// session is closed; the persist finishes on a mapping it still holds),
// and the daemon lives on when the msync then ends.
TEST_F(RpmadGpspmTest, DeletingARegionWhoseFlushIsOnTheDiskNeitherWaitsNorCrashes) {
    MsyncGate gate;
    ASSERT_TRUE(gate.ok());
    auto rpmad = StartRpmad(gate.Env(2 * kRegionSize));
    ASSERT_NE(rpmad, nullptr);
    ASSERT_TRUE(rpmad->CreateRegion("doomed", 4 * kRegionSize).ok());
    auto client = Connect(*rpmad, "doomed");
    ASSERT_NE(client, nullptr);
    FlushInBackground flush(*client, 0, 4 * kRegionSize, gate);
    ASSERT_TRUE(gate.WaitStarted(std::chrono::seconds(10)));

    v1::DeleteRegionRequest request;
    request.set_name("doomed");
    request.set_force(true);
    v1::DeleteRegionResponse response;
    const auto begin = std::chrono::steady_clock::now();
    const grpc::Status deleted =
        rpmad->Regions()->DeleteRegion(Rpmad::Context().get(), request, &response);
    ASSERT_TRUE(deleted.ok()) << deleted.error_message();
    EXPECT_LT(std::chrono::steady_clock::now() - begin, kOtherSessionBound);

    flush.Join();  // the msync ends on the unlinked file's mapping
    v1::ListRegionsResponse list;
    ASSERT_TRUE(rpmad->Regions()->ListRegions(Rpmad::Context().get(), {}, &list).ok());
    EXPECT_EQ(list.regions_size(), 0);
    ASSERT_TRUE(rpmad->CreateRegion("doomed", kRegionSize).ok());
    EXPECT_FALSE(rpmad->process().Wait(std::chrono::milliseconds(0)).has_value())
        << rpmad->process().Describe();
}

// libpmem2 abort()s when msync fails; rpmad must not: the session hears
// that its flush failed, the region is marked damaged (a later msync
// proves nothing once the kernel dropped the failed pages' dirty state),
// and the daemon and its other regions go on.
TEST_F(RpmadGpspmTest, AFailedWriteBackDamagesTheRegionNotTheDaemon) {
    std::vector<std::string> env = ShimEnv(2 * kRegionSize);
    env.push_back("RPMA_TEST_MSYNC_FAIL=1");
    auto rpmad = StartRpmad(env);
    ASSERT_NE(rpmad, nullptr);
    ASSERT_TRUE(rpmad->CreateRegion("disk", 4 * kRegionSize).ok());
    ASSERT_TRUE(rpmad->CreateRegion("other", kRegionSize).ok());
    auto client = Connect(*rpmad, "disk");
    ASSERT_NE(client, nullptr);
    ASSERT_EQ(client->Write(0, Pattern(8192, 5)), IBV_WC_SUCCESS);
    auto answer = client->GpspmFlush(0, 8192);
    ASSERT_TRUE(answer.has_value());
    EXPECT_EQ(answer->status, wire::FlushStatus::kOk);

    answer = client->GpspmFlush(0, 4 * kRegionSize);
    ASSERT_TRUE(answer.has_value()) << "no answer: " << rpmad->process().Describe();
    EXPECT_EQ(answer->status, wire::FlushStatus::kFailed);
    EXPECT_FALSE(rpmad->process().Wait(std::chrono::milliseconds(0)).has_value())
        << rpmad->process().Describe();

    v1::GetRegionRequest get;
    get.set_name("disk");
    v1::Region region;
    ASSERT_TRUE(rpmad->Regions()->GetRegion(Rpmad::Context().get(), get, &region).ok());
    EXPECT_FALSE(region.healthy());
    EXPECT_NE(region.problem().find("msync"), std::string::npos) << region.problem();
    // Damaged for good: a small flush that msync would pass fails too, and
    // no new session opens on it.
    answer = client->GpspmFlush(0, 8192);
    ASSERT_TRUE(answer.has_value());
    EXPECT_EQ(answer->status, wire::FlushStatus::kFailed);
    v1::OpenSessionResponse session;
    EXPECT_EQ(rpmad->OpenSession("disk", &session).error_code(),
              grpc::StatusCode::FAILED_PRECONDITION);

    auto other = Connect(*rpmad, "other");
    ASSERT_NE(other, nullptr);
    answer = other->GpspmFlush(0, 8);
    ASSERT_TRUE(answer.has_value());
    EXPECT_EQ(answer->status, wire::FlushStatus::kOk);
    EXPECT_EQ(Stats(*rpmad).unhealthy_regions(), 1u);
}

}  // namespace
}  // namespace rpma::testing
