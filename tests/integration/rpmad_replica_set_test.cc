// rpmad's side of replica sets that remember who is in sync
// (client/REPLICA_SETS.md), on real rpmad processes: the record is kept
// across a SIGKILL, changed only by compare-and-set, and a change fences the
// sessions of the writers it did not keep; the daemon's identity, extent
// checksums and repair progress.
#include <signal.h>

#include <barrier>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "tests/integration/rpmad_harness.h"

namespace rpma::testing {
namespace {

constexpr uint64_t kRegionSize = 1 << 20;
// A member that is not one of the daemons under test.
const std::string kElsewhere = "0000000000000000000000000000beef";

bool Contains(const std::string &text, const std::string &part) {
    return text.find(part) != std::string::npos;
}

std::string DaemonIdOf(const Rpmad &rpmad) {
    v1::Stats stats;
    const grpc::Status status =
        rpmad.Daemon()->GetStats(Rpmad::Context().get(), v1::GetStatsRequest(), &stats);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return stats.daemon_id();
}

// A record of `generation` whose members are `self` (in `state`) and
// kElsewhere (in sync).
v1::ReplicaSetRecord RecordOf(
    uint64_t generation, const std::string &self,
    v1::ReplicaSetMember::State state = v1::ReplicaSetMember::STATE_IN_SYNC,
    const std::string &set_id = "set-a") {
    v1::ReplicaSetRecord record;
    record.set_set_id(set_id);
    record.set_generation(generation);
    record.set_quorum(2);
    record.set_writer("host pid " + std::to_string(getpid()));
    record.set_updated_unix_seconds(1700000000 + static_cast<int64_t>(generation));
    record.set_reason("test");
    auto *member = record.add_members();
    member->set_daemon_id(self);
    member->set_address("127.0.0.1:1");
    member->set_state(state);
    if (state != v1::ReplicaSetMember::STATE_IN_SYNC)
        member->set_stale_since(generation);
    member = record.add_members();
    member->set_daemon_id(kElsewhere);
    member->set_address("127.0.0.1:2");
    member->set_state(v1::ReplicaSetMember::STATE_IN_SYNC);
    return record;
}

grpc::Status Set(const Rpmad &rpmad, const std::string &region, uint64_t expected,
                 const v1::ReplicaSetRecord &record, v1::SetReplicaSetResponse *response,
                 const std::vector<std::string> &keep = {}, const std::string &token = "") {
    v1::SetReplicaSetRequest request;
    request.set_region(region);
    request.set_expected_generation(expected);
    *request.mutable_record() = record;
    for (const std::string &id : keep)
        request.add_keep_session_ids(id);
    return rpmad.Regions()->SetReplicaSet(Rpmad::Context(token).get(), request, response);
}

v1::ReplicaSetView Get(const Rpmad &rpmad, const std::string &region) {
    v1::GetReplicaSetRequest request;
    request.set_region(region);
    v1::ReplicaSetView view;
    const grpc::Status status =
        rpmad.Regions()->GetReplicaSet(Rpmad::Context().get(), request, &view);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return view;
}

v1::Region GetRegion(const Rpmad &rpmad, const std::string &name) {
    v1::GetRegionRequest request;
    request.set_name(name);
    v1::Region region;
    const grpc::Status status =
        rpmad.Regions()->GetRegion(Rpmad::Context().get(), request, &region);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return region;
}

grpc::Status OpenUnder(const Rpmad &rpmad, const std::string &region, uint64_t generation,
                       v1::OpenSessionResponse *response) {
    v1::OpenSessionRequest request;
    request.set_region(region);
    request.set_replica_set_generation(generation);
    return rpmad.Sessions()->OpenSession(Rpmad::Context().get(), request, response);
}

std::string Xxh3(const std::vector<std::byte> &bytes, size_t offset, size_t length) {
    XXH128_canonical_t canonical;
    XXH128_canonicalFromHash(&canonical, XXH3_128bits(bytes.data() + offset, length));
    return std::string(reinterpret_cast<const char *>(canonical.digest), 16);
}

class RpmadReplicaSetTest : public ::testing::Test {
  protected:
    void SetUp() override {
        pool_dir_ = TempPath(
            "pool-" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    }

    std::unique_ptr<Rpmad> Start(RpmadOptions options = {}) {
        if (options.pool_dir.empty())
            options.pool_dir = pool_dir_;
        std::string error;
        auto rpmad = Rpmad::Start(options, &error);
        EXPECT_NE(rpmad, nullptr) << error;
        return rpmad;
    }

    std::unique_ptr<SessionClient> Connect(const v1::OpenSessionResponse &session) {
        rpma_conn_event event;
        auto client = SessionClient::Connect(session, &event);
        EXPECT_NE(client, nullptr) << "connection ended with " << rpma_utils_conn_event_2str(event);
        return client;
    }

    std::string pool_dir_;
};

TEST_F(RpmadReplicaSetTest, TheRecordAndTheDaemonIdSurviveSigkillAndDifferBetweenDaemons) {
    auto rpmad = Start();
    ASSERT_NE(rpmad, nullptr);
    const std::string id = DaemonIdOf(*rpmad);
    ASSERT_EQ(id.size(), 32u) << id;
    std::string file;
    std::getline(std::ifstream(pool_dir_ + "/daemon-id"), file);
    EXPECT_EQ(file, id);

    v1::Region created;
    ASSERT_TRUE(rpmad->CreateRegion("r", kRegionSize, &created).ok());
    EXPECT_EQ(created.daemon_id(), id);
    EXPECT_EQ(created.replica_set().generation(), 0u);
    v1::ReplicaSetView view = Get(*rpmad, "r");
    EXPECT_EQ(view.record().generation(), 0u);
    EXPECT_EQ(view.daemon_id(), id);
    EXPECT_EQ(view.region_id(), created.id());

    v1::SetReplicaSetResponse set;
    const v1::ReplicaSetRecord first = RecordOf(1, id);
    ASSERT_TRUE(Set(*rpmad, "r", 0, first, &set).ok());
    EXPECT_TRUE(set.applied());
    EXPECT_EQ(set.daemon_id(), id);
    EXPECT_EQ(set.current().SerializeAsString(), first.SerializeAsString());
    const v1::ReplicaSetRecord second = RecordOf(2, id, v1::ReplicaSetMember::STATE_IN_SYNC);
    ASSERT_TRUE(Set(*rpmad, "r", 1, second, &set).ok());
    ASSERT_TRUE(set.applied());

    // SIGKILL: the answer came once the record was durable.
    rpmad->process().Kill();
    EXPECT_TRUE(Contains(rpmad->process().Stderr(), "daemon id " + id))
        << rpmad->process().Stderr();
    rpmad = Start();
    ASSERT_NE(rpmad, nullptr);
    EXPECT_EQ(DaemonIdOf(*rpmad), id);
    view = Get(*rpmad, "r");
    EXPECT_EQ(view.record().SerializeAsString(), second.SerializeAsString());
    EXPECT_EQ(view.region_id(), created.id());
    const v1::Region region = GetRegion(*rpmad, "r");
    EXPECT_EQ(region.replica_set().generation(), 2u);
    EXPECT_EQ(region.daemon_id(), id);
    v1::ListRegionsResponse list;
    ASSERT_TRUE(rpmad->Regions()->ListRegions(Rpmad::Context().get(), {}, &list).ok());
    ASSERT_EQ(list.regions_size(), 1);
    EXPECT_EQ(list.regions(0).replica_set().generation(), 2u);
    EXPECT_EQ(list.regions(0).daemon_id(), id);

    // Deleted, the record goes with the region: created again, it starts at 0.
    v1::DeleteRegionRequest del;
    del.set_name("r");
    v1::DeleteRegionResponse deleted;
    ASSERT_TRUE(rpmad->Regions()->DeleteRegion(Rpmad::Context().get(), del, &deleted).ok());
    ASSERT_TRUE(rpmad->CreateRegion("r", kRegionSize).ok());
    EXPECT_EQ(Get(*rpmad, "r").record().generation(), 0u);

    // Another pool, another daemon.
    RpmadOptions other;
    other.pool_dir = pool_dir_ + "-other";
    auto second_daemon = Start(other);
    ASSERT_NE(second_daemon, nullptr);
    const std::string other_id = DaemonIdOf(*second_daemon);
    EXPECT_EQ(other_id.size(), 32u);
    EXPECT_NE(other_id, id);
}

TEST_F(RpmadReplicaSetTest, AMalformedDaemonIdFileStopsTheStartNamingTheFileAndTheFix) {
    std::filesystem::create_directories(pool_dir_);
    std::ofstream(pool_dir_ + "/daemon-id") << "host-a\n";
    RpmadOptions options;
    options.pool_dir = pool_dir_;
    std::string error;
    auto rpmad = Rpmad::Start(options, &error);
    ASSERT_EQ(rpmad, nullptr) << "started with a malformed daemon-id";
    EXPECT_TRUE(Contains(error, pool_dir_ + "/daemon-id is malformed")) << error;
    EXPECT_TRUE(Contains(error, "remove it")) << error;
}

TEST_F(RpmadReplicaSetTest, OfEightConcurrentWritersWithTheSameExpectedGenerationOneApplies) {
    auto rpmad = Start();
    ASSERT_NE(rpmad, nullptr);
    const std::string id = DaemonIdOf(*rpmad);
    ASSERT_TRUE(rpmad->CreateRegion("r", kRegionSize).ok());
    v1::SetReplicaSetResponse set;
    ASSERT_TRUE(Set(*rpmad, "r", 0, RecordOf(1, id), &set).ok());
    ASSERT_TRUE(set.applied());

    constexpr int kWriters = 8;
    std::vector<v1::SetReplicaSetResponse> answers(kWriters);
    std::vector<grpc::Status> statuses(kWriters);
    std::barrier start(kWriters);
    std::vector<std::thread> writers;
    for (int i = 0; i < kWriters; ++i)
        writers.emplace_back([&, i] {
            v1::ReplicaSetRecord record = RecordOf(2, id);
            record.set_writer("writer " + std::to_string(i));
            start.arrive_and_wait();
            statuses[i] = Set(*rpmad, "r", 1, record, &answers[i]);
        });
    for (auto &writer : writers)
        writer.join();
    int applied = 0;
    std::string winner;
    for (int i = 0; i < kWriters; ++i) {
        ASSERT_TRUE(statuses[i].ok()) << i << ": " << statuses[i].error_message();
        if (answers[i].applied()) {
            ++applied;
            winner = "writer " + std::to_string(i);
        }
    }
    EXPECT_EQ(applied, 1);
    for (int i = 0; i < kWriters; ++i) {
        // The losers learn what is: the winner's record.
        EXPECT_EQ(answers[i].current().generation(), 2u) << i;
        EXPECT_EQ(answers[i].current().writer(), winner) << i;
    }
    EXPECT_EQ(Get(*rpmad, "r").record().writer(), winner);
}

TEST_F(RpmadReplicaSetTest, AChangeFencesTheSessionsOfOlderGenerationsItDoesNotKeep) {
    auto rpmad = Start();
    ASSERT_NE(rpmad, nullptr);
    const std::string id = DaemonIdOf(*rpmad);
    ASSERT_TRUE(rpmad->CreateRegion("r", kRegionSize).ok());
    v1::SetReplicaSetResponse set;
    ASSERT_TRUE(Set(*rpmad, "r", 0, RecordOf(1, id), &set).ok());

    // Two writers under generation 1, a reader under 0.
    v1::OpenSessionResponse fenced_session, kept_session, reader_session;
    ASSERT_TRUE(OpenUnder(*rpmad, "r", 1, &fenced_session).ok());
    EXPECT_EQ(fenced_session.daemon_id(), id);
    ASSERT_TRUE(OpenUnder(*rpmad, "r", 1, &kept_session).ok());
    ASSERT_TRUE(OpenUnder(*rpmad, "r", 0, &reader_session).ok());
    auto fenced = Connect(fenced_session);
    auto kept = Connect(kept_session);
    auto reader = Connect(reader_session);
    ASSERT_TRUE(fenced && kept && reader);
    ASSERT_EQ(fenced->Write(0, Pattern(4096, 1)), IBV_WC_SUCCESS);

    ASSERT_TRUE(Set(*rpmad, "r", 1, RecordOf(2, id), &set, {kept_session.session_id()}).ok());
    ASSERT_TRUE(set.applied());
    EXPECT_EQ(set.fenced_sessions(), 1u);

    // The fenced writer is disconnected and what it writes now lands nothing.
    const rpma_conn_event event = fenced->WaitEvent(10000);
    EXPECT_TRUE(event == RPMA_CONN_CLOSED || event == RPMA_CONN_LOST) << event;
    EXPECT_NE(fenced->Write(8192, Pattern(4096, 0xa5)), IBV_WC_SUCCESS);
    std::vector<std::byte> read;
    ASSERT_EQ(kept->Read(0, 3 * 4096, &read), IBV_WC_SUCCESS);
    EXPECT_TRUE(std::equal(read.begin(), read.begin() + 4096, Pattern(4096, 1).begin()));
    EXPECT_EQ(std::vector<std::byte>(read.begin() + 8192, read.end()),
              std::vector<std::byte>(4096, std::byte{0}))
        << "a fenced session's write landed";
    // The kept writer goes on; the reader was never fenced.
    ASSERT_EQ(kept->Write(8192, Pattern(4096, 7)), IBV_WC_SUCCESS);
    ASSERT_EQ(kept->Flush(8192, 4096), IBV_WC_SUCCESS);
    ASSERT_EQ(reader->Read(8192, 4096, &read), IBV_WC_SUCCESS);
    EXPECT_EQ(read, Pattern(4096, 7));

    v1::ListSessionsRequest list_request;
    list_request.set_region("r");
    v1::ListSessionsResponse list;
    ASSERT_TRUE(rpmad->Sessions()->ListSessions(Rpmad::Context().get(), list_request, &list).ok());
    ASSERT_EQ(list.sessions_size(), 2);
    for (const v1::Session &session : list.sessions()) {
        EXPECT_NE(session.session_id(), fenced_session.session_id());
        EXPECT_EQ(session.replica_set_generation(),
                  session.session_id() == kept_session.session_id() ? 2u : 0u);
    }

    // Opening under an older generation is refused; the current and 0 are not.
    v1::OpenSessionResponse opened;
    grpc::Status status = OpenUnder(*rpmad, "r", 1, &opened);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
    EXPECT_TRUE(Contains(status.error_message(), "moved on to generation 2"))
        << status.error_message();
    EXPECT_TRUE(Contains(status.error_message(), "reopen")) << status.error_message();
    EXPECT_TRUE(OpenUnder(*rpmad, "r", 2, &opened).ok());
    EXPECT_TRUE(OpenUnder(*rpmad, "r", 0, &opened).ok());

    // The kept session, now under 2, is fenced by the next change that does
    // not keep it.
    ASSERT_TRUE(Set(*rpmad, "r", 2, RecordOf(3, id), &set).ok());
    EXPECT_EQ(set.fenced_sessions(), 2u);  // `kept` and the one opened under 2
    const rpma_conn_event kept_event = kept->WaitEvent(10000);
    EXPECT_TRUE(kept_event == RPMA_CONN_CLOSED || kept_event == RPMA_CONN_LOST) << kept_event;
}

TEST_F(RpmadReplicaSetTest, BadChangesAreRefusedAndChangeNothing) {
    auto rpmad = Start();
    ASSERT_NE(rpmad, nullptr);
    const std::string id = DaemonIdOf(*rpmad);
    ASSERT_TRUE(rpmad->CreateRegion("r", kRegionSize).ok());
    v1::SetReplicaSetResponse set;
    ASSERT_TRUE(Set(*rpmad, "r", 0, RecordOf(1, id), &set).ok());
    const std::string held = Get(*rpmad, "r").record().SerializeAsString();

    v1::ReplicaSetRecord not_a_member = RecordOf(2, kElsewhere);
    not_a_member.mutable_members(1)->set_daemon_id("0000000000000000000000000000cafe");
    v1::ReplicaSetRecord bad_id = RecordOf(2, id);
    bad_id.mutable_members(1)->set_daemon_id("host-b");
    v1::ReplicaSetRecord no_state = RecordOf(2, id);
    no_state.mutable_members(1)->set_state(v1::ReplicaSetMember::STATE_UNSPECIFIED);
    v1::ReplicaSetRecord big_quorum = RecordOf(2, id);
    big_quorum.set_quorum(3);
    const struct {
        uint64_t expected;
        v1::ReplicaSetRecord record;
        const char *message;
    } cases[] = {
        {1, not_a_member, "is not among its members"},
        {1, bad_id, "32 lowercase hex digits"},
        {1, no_state, "has no state"},
        {1, big_quorum, "quorum 3"},
        {1, RecordOf(3, id), "every change adds exactly 1"},
        {1, RecordOf(2, id, v1::ReplicaSetMember::STATE_IN_SYNC, "set-b"), "another replica set"},
        {1, RecordOf(2, id, v1::ReplicaSetMember::STATE_IN_SYNC, ""), "set_id is empty"},
    };
    for (const auto &c : cases) {
        const grpc::Status status = Set(*rpmad, "r", c.expected, c.record, &set);
        EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << c.message;
        EXPECT_TRUE(Contains(status.error_message(), c.message)) << status.error_message();
    }
    grpc::Status status = Set(*rpmad, "r", 1, RecordOf(2, id), &set, {"not-a-session"});
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    status = Set(*rpmad, "missing", 0, RecordOf(1, id), &set);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
    EXPECT_EQ(Get(*rpmad, "r").record().SerializeAsString(), held);

    // A stale expected generation is no error: not applied, and what is.
    ASSERT_TRUE(Set(*rpmad, "r", 0, RecordOf(1, id, v1::ReplicaSetMember::STATE_STALE), &set).ok());
    EXPECT_FALSE(set.applied());
    EXPECT_EQ(set.current().SerializeAsString(), held);
    EXPECT_EQ(Get(*rpmad, "r").record().SerializeAsString(), held);
}

TEST_F(RpmadReplicaSetTest, ChecksumsAreXxh3OfTheBytesWrittenAndBadRangesAreRefused) {
    auto rpmad = Start();
    ASSERT_NE(rpmad, nullptr);
    ASSERT_TRUE(rpmad->CreateRegion("r", kRegionSize).ok());
    v1::OpenSessionResponse session;
    ASSERT_TRUE(rpmad->OpenSession("r", &session).ok());
    auto client = Connect(session);
    ASSERT_NE(client, nullptr);
    std::vector<std::byte> expected(kRegionSize);
    const auto written = Pattern(100000, 0x31);
    ASSERT_EQ(client->Write(20000, written), IBV_WC_SUCCESS);
    ASSERT_EQ(client->Flush(20000, written.size()), IBV_WC_SUCCESS);
    std::copy(written.begin(), written.end(), expected.begin() + 20000);

    auto checksum = [&](uint64_t offset, uint64_t length, uint64_t extent,
                        v1::ChecksumRegionResponse *response) {
        v1::ChecksumRegionRequest request;
        request.set_region("r");
        request.set_offset(offset);
        request.set_length(length);
        request.set_extent_size(extent);
        return rpmad->Regions()->ChecksumRegion(Rpmad::Context().get(), request, response);
    };
    v1::ChecksumRegionResponse response;
    const grpc::Status whole = checksum(0, kRegionSize, 65536, &response);
    ASSERT_TRUE(whole.ok()) << whole.error_code() << ": " << whole.error_message() << "\n"
                            << rpmad->process().Describe();
    EXPECT_EQ(response.algorithm(), "xxh3-128");
    EXPECT_EQ(response.offset(), 0u);
    EXPECT_EQ(response.extent_size(), 65536u);
    ASSERT_EQ(response.checksums().size(), 16u * 16);
    for (size_t i = 0; i < 16; ++i)
        EXPECT_EQ(response.checksums().substr(16 * i, 16), Xxh3(expected, 65536 * i, 65536))
            << "extent " << i;
    // A range that ends inside an extent: the last one is shorter.
    ASSERT_TRUE(checksum(4096, 3 * 4096 + 100, 4096, &response).ok());
    ASSERT_EQ(response.checksums().size(), 4u * 16);
    EXPECT_EQ(response.checksums().substr(48, 16), Xxh3(expected, 4 * 4096, 100));

    const struct {
        uint64_t offset, length, extent;
    } bad[] = {
        {0, kRegionSize, 1000},     {0, kRegionSize, 2048},
        {4096, 4096, 8192},         {0, 0, 4096},
        {0, kRegionSize + 1, 4096}, {kRegionSize, 4096, 4096},
        {4096, UINT64_MAX, 4096},
    };
    for (const auto &b : bad) {
        const grpc::Status status = checksum(b.offset, b.length, b.extent, &response);
        EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
            << b.offset << "+" << b.length << "/" << b.extent;
    }
    v1::ChecksumRegionRequest missing;
    missing.set_region("missing");
    missing.set_length(4096);
    missing.set_extent_size(4096);
    EXPECT_EQ(
        rpmad->Regions()->ChecksumRegion(Rpmad::Context().get(), missing, &response).error_code(),
        grpc::StatusCode::NOT_FOUND);
}

// Checksums of a large region from several callers while it is deleted:
// each answer is whole, refused for the limit of checksums at once, or
// NOT_FOUND once the region is gone, and the daemon goes on (a hash holds
// the region's mapping, so the delete cannot pull it away).
TEST_F(RpmadReplicaSetTest, ChecksumsRacingADeleteAndEachOtherAnswerCleanly) {
    auto rpmad = Start();
    ASSERT_NE(rpmad, nullptr);
    constexpr uint64_t kBig = 64ull << 20;
    ASSERT_TRUE(rpmad->CreateRegion("big", kBig).ok());
    constexpr int kCallers = 6;
    std::vector<grpc::Status> statuses(kCallers);
    std::vector<v1::ChecksumRegionResponse> answers(kCallers);
    std::barrier start(kCallers + 1);
    std::vector<std::thread> callers;
    for (int i = 0; i < kCallers; ++i)
        callers.emplace_back([&, i] {
            v1::ChecksumRegionRequest request;
            request.set_region("big");
            request.set_length(kBig);
            request.set_extent_size(1 << 20);
            start.arrive_and_wait();
            statuses[i] =
                rpmad->Regions()->ChecksumRegion(Rpmad::Context().get(), request, &answers[i]);
        });
    start.arrive_and_wait();
    v1::DeleteRegionRequest del;
    del.set_name("big");
    del.set_force(true);
    v1::DeleteRegionResponse deleted;
    EXPECT_TRUE(rpmad->Regions()->DeleteRegion(Rpmad::Context().get(), del, &deleted).ok());
    for (auto &caller : callers)
        caller.join();
    for (int i = 0; i < kCallers; ++i) {
        switch (statuses[i].error_code()) {
            case grpc::StatusCode::OK:
                EXPECT_EQ(answers[i].checksums().size(), 64u * 16) << i;
                break;
            case grpc::StatusCode::RESOURCE_EXHAUSTED:
                EXPECT_TRUE(Contains(statuses[i].error_message(), "checksums at once"))
                    << statuses[i].error_message();
                break;
            case grpc::StatusCode::NOT_FOUND:
                break;
            default:
                ADD_FAILURE() << i << ": " << statuses[i].error_code() << " "
                              << statuses[i].error_message();
        }
    }
    EXPECT_EQ(DaemonIdOf(*rpmad).size(), 32u) << "the daemon no longer answers";
}

TEST_F(RpmadReplicaSetTest, RepairProgressIsKeptOnlyWhileTheRecordSaysRepairing) {
    auto rpmad = Start();
    ASSERT_NE(rpmad, nullptr);
    const std::string id = DaemonIdOf(*rpmad);
    ASSERT_TRUE(rpmad->CreateRegion("r", kRegionSize).ok());
    auto report = [&](uint64_t generation, v1::RepairProgress *out) {
        v1::RepairProgress progress;
        progress.set_region("r");
        progress.set_generation(generation);
        progress.set_bytes_compared(65536);
        progress.set_bytes_copied(4096);
        progress.set_total_bytes(kRegionSize);
        return rpmad->Regions()->ReportRepairProgress(Rpmad::Context().get(), progress, out);
    };
    v1::RepairProgress kept;
    // No record, then a record that says in sync.
    EXPECT_EQ(report(0, &kept).error_code(), grpc::StatusCode::FAILED_PRECONDITION);
    v1::SetReplicaSetResponse set;
    ASSERT_TRUE(Set(*rpmad, "r", 0, RecordOf(1, id), &set).ok());
    grpc::Status status = report(1, &kept);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
    EXPECT_TRUE(Contains(status.error_message(), "REPAIRING")) << status.error_message();
    EXPECT_FALSE(GetRegion(*rpmad, "r").has_repair_progress());

    ASSERT_TRUE(
        Set(*rpmad, "r", 1, RecordOf(2, id, v1::ReplicaSetMember::STATE_REPAIRING), &set).ok());
    ASSERT_TRUE(set.applied());
    EXPECT_EQ(report(1, &kept).error_code(), grpc::StatusCode::FAILED_PRECONDITION);
    ASSERT_TRUE(report(2, &kept).ok());
    EXPECT_GT(kept.reported_unix_seconds(), 0);
    v1::Region region = GetRegion(*rpmad, "r");
    ASSERT_TRUE(region.has_repair_progress());
    EXPECT_EQ(region.repair_progress().generation(), 2u);
    EXPECT_EQ(region.repair_progress().bytes_compared(), 65536u);
    EXPECT_EQ(region.repair_progress().bytes_copied(), 4096u);
    EXPECT_EQ(region.repair_progress().total_bytes(), kRegionSize);

    // The repair finished: the record says in sync, the progress is gone.
    ASSERT_TRUE(Set(*rpmad, "r", 2, RecordOf(3, id), &set).ok());
    ASSERT_TRUE(set.applied());
    EXPECT_FALSE(GetRegion(*rpmad, "r").has_repair_progress());
}

// With sessions.client_tokens_file the replica-set calls need what
// OpenSession needs.
TEST_F(RpmadReplicaSetTest, TheReplicaSetCallsNeedAClientToken) {
    const std::string tokens = TempPath("client-tokens");
    std::ofstream(tokens) << "alice t-alice\n";
    RpmadOptions options;
    options.config_yaml =
        "control:\n  admin_token: t-admin\nsessions:\n  client_tokens_file: " + tokens + "\n";
    auto rpmad = Start(options);
    ASSERT_NE(rpmad, nullptr);
    const std::string id = DaemonIdOf(*rpmad);
    ASSERT_TRUE(rpmad->CreateRegion("r", kRegionSize, nullptr, "t-admin").ok());
    v1::SetReplicaSetResponse set;
    grpc::Status status = Set(*rpmad, "r", 0, RecordOf(1, id), &set);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED);
    EXPECT_TRUE(Contains(status.error_message(), "SetReplicaSet needs a client token"))
        << status.error_message();
    EXPECT_EQ(Set(*rpmad, "r", 0, RecordOf(1, id), &set, {}, "t-mallory").error_code(),
              grpc::StatusCode::PERMISSION_DENIED);
    v1::GetReplicaSetRequest get;
    get.set_region("r");
    v1::ReplicaSetView view;
    EXPECT_EQ(rpmad->Regions()->GetReplicaSet(Rpmad::Context().get(), get, &view).error_code(),
              grpc::StatusCode::UNAUTHENTICATED);
    v1::ChecksumRegionRequest sum;
    sum.set_region("r");
    sum.set_length(4096);
    sum.set_extent_size(4096);
    v1::ChecksumRegionResponse sums;
    EXPECT_EQ(rpmad->Regions()->ChecksumRegion(Rpmad::Context().get(), sum, &sums).error_code(),
              grpc::StatusCode::UNAUTHENTICATED);
    v1::RepairProgress progress, kept;
    progress.set_region("r");
    EXPECT_EQ(rpmad->Regions()
                  ->ReportRepairProgress(Rpmad::Context().get(), progress, &kept)
                  .error_code(),
              grpc::StatusCode::UNAUTHENTICATED);
    // Nothing changed; the client's token (and the admin's) may.
    EXPECT_TRUE(Set(*rpmad, "r", 0, RecordOf(1, id), &set, {}, "t-alice").ok());
    EXPECT_TRUE(set.applied());
    EXPECT_TRUE(rpmad->Regions()->GetReplicaSet(Rpmad::Context("t-admin").get(), get, &view).ok());
    EXPECT_EQ(view.record().generation(), 1u);
}

}  // namespace
}  // namespace rpma::testing
