// Replica sets with several writers and repairs (client/REPLICA_SETS.md),
// with real rpmads on real sockets: two writers racing to drop different
// replicas settle on one record, the loser fenced; two writers opening a
// new region at once both open; a writer that dies right after recording a
// change leaves a state the next opener reads consistently; a repair that
// died is refused to writers and taken over by the next repair
// (repair_takeover); writes during a repair land on the repaired replica
// and no copy overwrites them; a writer with only a client token records
// and repairs; the C API shows the same. The history each case keeps:
// replica_set_fixture.h. RPMA_REPLICA_SET_TEST_ITERATIONS=N runs the
// writers' race N times (replica_set_test says how).
#include "tests/integration/replica_set_fixture.h"

namespace rpma::testing {
namespace {

TEST_F(ReplicaSetTest, TwoWritersDroppingDifferentReplicasOneWinsTheOtherIsFenced) {
    ASSERT_NO_FATAL_FAILURE(StartDaemons(3));
    for (int round = 0; round < Iterations(); ++round) {
        if (round > 0) {
            // Back to three in sync for the next race.
            auto repairer = OpenWriter(1);
            ASSERT_NE(repairer, nullptr);
            for (size_t r = 0; r < 3; ++r)
                if (repairer->replicas()[r].state != ReplicaState::kLive)
                    (void)Repair(*repairer, r);
        }
        CutProxy a_to_1(daemons_[1]->data_port()), b_to_2(daemons_[2]->data_port());
        auto a = OpenWriter(0, {"", a_to_1.address(), ""});
        auto b = OpenWriter(0, {"", "", b_to_2.address()});
        ASSERT_NE(a, nullptr);
        ASSERT_NE(b, nullptr);
        // Records of 4000 a round, four rounds' worth in the region: a
        // record's bytes depend on its index alone, so writing one again in
        // a later round changes nothing the history checks.
        const size_t base = static_cast<size_t>(round % 4) * 4000;
        ASSERT_NO_FATAL_FAILURE(WriteRecords(*a, base, 10));
        ASSERT_NO_FATAL_FAILURE(WriteRecords(*b, base + 2000, 10));
        a_to_1.Cut();
        b_to_2.Cut();
        // Both write at once until each fails.
        auto run = [&](Region &region, size_t first) {
            client::Status s;
            for (size_t i = first; s.ok() && i < first + 1000; ++i) {
                s = region.WritePersist(i * kRecord, RecordBytes(i));
                if (s.ok()) {
                    std::lock_guard lock(history_mu_);
                    acknowledged_.insert(i);
                }
            }
            return s;
        };
        auto fa = std::async(std::launch::async, [&] { return run(*a, base + 10); });
        auto fb = std::async(std::launch::async, [&] { return run(*b, base + 2010); });
        const client::Status sa = fa.get(), sb = fb.get();
        std::printf("round %d: writer a: %s\nwriter b: %s\n", round, sa.ToString().c_str(),
                    sb.ToString().c_str());
        // Neither acknowledged the write that found its replica failed.
        EXPECT_FALSE(sa.ok()) << sa.ToString();
        EXPECT_FALSE(sb.ok()) << sb.ToString();
        for (const auto *s : {&sa, &sb}) {
            EXPECT_TRUE(s->code() == StatusCode::kFailedPrecondition ||
                        s->code() == StatusCode::kQuorumLost)
                << s->ToString();
            if (s->code() == StatusCode::kFailedPrecondition) {
                EXPECT_NE(s->message().find("the replica set changed under this Region"),
                          std::string::npos)
                    << s->ToString();
            }
        }
        EXPECT_FALSE(sa.code() == StatusCode::kFailedPrecondition &&
                     sb.code() == StatusCode::kFailedPrecondition)
            << "both fenced: " << sa.ToString() << " / " << sb.ToString();
        // Nothing more is acknowledged by either (the winner lacks the
        // quorum of all, the loser is fenced or cannot record).
        for (Region *r : {a.get(), b.get()}) {
            const client::Status again = r->WritePersist(0, RecordBytes(0));
            EXPECT_FALSE(again.ok());
        }
        // The set as every later opener sees it: one of the two dropped,
        // the other and replica 0 in sync.
        {
            OpenOptions options;
            options.read_only = true;
            options.quorum = 1;
            auto reader = Region::Open(Set(), kRegion, options);
            ASSERT_TRUE(reader.ok()) << reader.status().ToString();
            const auto infos = (*reader)->replicas();
            EXPECT_EQ(infos[0].state, ReplicaState::kLive);
            EXPECT_NE(infos[1].state == ReplicaState::kLive, infos[2].state == ReplicaState::kLive)
                << "one of the two replicas the writers dropped is in sync, the other not: "
                << infos[1].error.ToString() << " / " << infos[2].error.ToString();
        }
        a.reset();
        b.reset();
        a_to_1.Heal();
        b_to_2.Heal();
        // Whoever won, the next opener finds two in sync and the history
        // on them.
        ASSERT_NO_FATAL_FAILURE(ExpectHistory({0}));
    }
}

// (d) A writer killed right after it recorded a new generation on a daemon
// and before it acknowledged the operation that needed it (its control
// path to replica 1 cut, so that the record waits there while replica 0
// holds it): the next opener sees a consistent state (the change, on one
// of three, was never recorded; the replica its writer saw fail stays out
// all the same), never reads the stale one, and a repair brings all three
// back with the history whole.
TEST_F(ReplicaSetTest, WriterKilledBetweenRecordAndAcknowledgementLeavesAConsistentState) {
    ASSERT_NO_FATAL_FAILURE(StartDaemons(3));
    {
        auto created = OpenWriter(0);
        ASSERT_NE(created, nullptr);
    }
    CutProxy control_1(daemons_[1]->control_port());
    std::vector<std::string> argv = {
        Runfile("tests/integration/replica_set_child_writer"),
        kRegion,
        "2",
        "3000",
        "0",
        "100000",
        daemons_[0]->control(),
        control_1.address() + "=127.0.0.1:" + std::to_string(daemons_[1]->data_port()),
        daemons_[2]->control()};
    std::string error;
    auto child = Process::Start(argv, {}, &error);
    ASSERT_NE(child, nullptr) << error;
    std::string line;
    ASSERT_TRUE(child->ReadLine(&line, std::chrono::seconds(20))) << child->Describe();
    ASSERT_EQ(line.rfind("open generation ", 0), 0u) << line << child->Describe();
    const uint64_t opened = std::stoull(line.substr(16));
    ASSERT_TRUE(child->WaitForLine("ack 20", std::chrono::seconds(20))) << child->Describe();
    control_1.Cut();
    daemons_[2]->process().Kill();
    // Replica 0 takes generation opened + 1 (2 STALE) at once; replica 1's
    // answer waits behind the cut.
    auto regions = daemons_[0]->Regions();
    bool recorded = false;
    for (auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
         !recorded && std::chrono::steady_clock::now() < deadline;) {
        v1::GetReplicaSetRequest request;
        request.set_region(kRegion);
        v1::ReplicaSetView view;
        if (regions->GetReplicaSet(Rpmad::Context().get(), request, &view).ok())
            recorded = view.record().generation() > opened;
        if (!recorded)
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    ASSERT_TRUE(recorded) << child->Describe();
    child->Kill();
    // What the child acknowledged, and nothing after the record.
    std::set<size_t> acked;
    const std::string &out = child->Stdout();
    bool failed = false;
    std::istringstream lines(out);
    for (std::string l; std::getline(lines, l);) {
        if (l.rfind("ack ", 0) == 0)
            acked.insert(std::stoul(l.substr(4)));
        failed = failed || l.rfind("failed", 0) == 0;
    }
    EXPECT_FALSE(failed) << out;
    acknowledged_ = acked;
    control_1.Heal();
    daemons_[2] = Start(2, true);
    ASSERT_NE(daemons_[2], nullptr);

    // Replica 0 holds the newest generation alone: with every member
    // reached, it cannot have been recorded, and the generation before it
    // is trusted; but replica 2, which its writer saw fail, stays out.
    auto reopened = OpenWriter(2);
    ASSERT_NE(reopened, nullptr);
    auto infos = reopened->replicas();
    EXPECT_EQ(infos[0].state, ReplicaState::kLive);
    EXPECT_EQ(infos[1].state, ReplicaState::kLive);
    EXPECT_EQ(infos[2].state, ReplicaState::kStale) << infos[2].error.ToString();
    EXPECT_GT(reopened->generation(), opened + 1);
    ASSERT_NO_FATAL_FAILURE(ExpectHistory({0, 1}));
    (void)Repair(*reopened, 2);
    reopened.reset();
    ASSERT_NO_FATAL_FAILURE(ExpectHistory({0, 1, 2}));
}

// A repair that dies half-way (its target stopped past the operation
// timeout) leaves the member REPAIRING: a writer's open is refused, naming
// the repair and what to do; a repair's open (repair_takeover) takes it
// over and copies only what still differs.
TEST_F(ReplicaSetTest, ARepairThatDiedIsRefusedToWritersAndTakenOverByTheNextRepair) {
    ASSERT_NO_FATAL_FAILURE(StartDaemons(3));
    size_t next = 0;
    {
        auto region = OpenWriter(2);
        ASSERT_NE(region, nullptr);
        ASSERT_NO_FATAL_FAILURE(WriteRecords(*region, next, 20));
        next += 20;
        daemons_[2]->process().Kill();
        // Several MiB missed, so that the repair copies several extents.
        ASSERT_NO_FATAL_FAILURE(WriteUntilFailed(*region, 2, &next, 1200));
    }
    daemons_[2] = Start(2, true);
    ASSERT_NE(daemons_[2], nullptr);
    {
        auto repairer = OpenWriter(2);
        ASSERT_NE(repairer, nullptr);
        std::unique_ptr<Stopped> stopped;
        RepairOptions options;
        options.progress = [&](const RepairProgress &p) {
            if (p.copied > 0 && stopped == nullptr)
                stopped = std::make_unique<Stopped>(daemons_[2]->process().pid());
        };
        const client::Status s = repairer->Repair(2, options);
        ASSERT_NE(stopped, nullptr);
        EXPECT_FALSE(s.ok());
        EXPECT_NE(repairer->replicas()[2].state, ReplicaState::kLive);
        stopped.reset();  // resumed
    }
    // The record says REPAIRING: writers are refused.
    OpenOptions writer_options;
    writer_options.quorum = 2;
    auto refused = Open(writer_options, Set());
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.status().code(), StatusCode::kUnavailable) << refused.status().ToString();
    EXPECT_NE(refused.status().message().find("replica 2 (" + daemons_[2]->control() +
                                              ") is being repaired"),
              std::string::npos)
        << refused.status().ToString();
    EXPECT_NE(refused.status().message().find("rpmactl region repair"), std::string::npos);
    // Readers are not; the member is not read.
    ASSERT_NO_FATAL_FAILURE(ExpectHistory({0, 1}));
    // A repair takes it over and finishes it.
    OpenOptions takeover;
    takeover.quorum = 2;
    takeover.repair_takeover = true;
    auto repairer = Open(takeover, Set());
    ASSERT_TRUE(repairer.ok()) << repairer.status().ToString();
    EXPECT_EQ((*repairer)->replicas()[2].state, ReplicaState::kStale);
    const uint64_t copied = Repair(**repairer, 2);
    EXPECT_LT(copied, 6 * kExtent);
    repairer->reset();
    auto writer = OpenWriter(2);
    ASSERT_NE(writer, nullptr);
    ASSERT_NO_FATAL_FAILURE(WriteRecords(*writer, next, 20));
    writer.reset();
    ASSERT_NO_FATAL_FAILURE(ExpectHistory({0, 1, 2}));
}

// Writes made during a repair by the repairing Region go to the repaired
// replica too, and no extent's copy overwrites a newer write: the missed
// records are spread over every extent, and another thread writes records
// between them while the extents are compared and copied.
TEST_F(ReplicaSetTest, WritesDuringARepairLandOnTheRepairedReplicaAndNoCopyOverwritesThem) {
    ASSERT_NO_FATAL_FAILURE(StartDaemons(3));
    constexpr size_t kStride = 16;  // records: one every 64 KiB
    const size_t spread = kRegionSize / kRecord / kStride;
    auto region = OpenWriter(2);
    ASSERT_NE(region, nullptr);
    daemons_[2]->process().Kill();
    for (size_t k = 0; k < spread; ++k) {
        const client::Status s = WriteRecord(*region, k * kStride);
        ASSERT_TRUE(s.ok()) << s.ToString();
    }
    ASSERT_EQ(region->replicas()[2].state, ReplicaState::kFailed);
    daemons_[2] = Start(2, true);
    ASSERT_NE(daemons_[2], nullptr);
    std::atomic<bool> repairing{true};
    std::set<size_t> during;
    std::thread writer([&] {
        for (size_t round = 1; round < kStride && repairing; ++round)
            for (size_t k = 0; k < spread && repairing; k += 7) {
                const size_t i = k * kStride + round;
                if (region->WritePersist(i * kRecord, RecordBytes(i)).ok())
                    during.insert(i);
                else
                    ADD_FAILURE() << "record " << i << " failed during the repair";
            }
    });
    const uint64_t copied = Repair(*region, 2);
    repairing = false;
    writer.join();
    EXPECT_GE(copied, kRegionSize / 2);  // the missed records are everywhere
    EXPECT_FALSE(during.empty());
    acknowledged_.insert(during.begin(), during.end());
    region.reset();
    ASSERT_NO_FATAL_FAILURE(ExpectHistory({0, 1, 2}));
}

// The C API's view of the same: open flags, replica states, generation.
TEST_F(ReplicaSetTest, TheCApiOpensReadOnlyAndShowsReplicaStatesAndTheGeneration) {
    ASSERT_NO_FATAL_FAILURE(StartDaemons(3));
    std::vector<std::string> addresses;
    for (size_t i = 0; i < 3; ++i)
        addresses.push_back(daemons_[i]->control());
    const char *list[] = {addresses[0].c_str(), addresses[1].c_str(), addresses[2].c_str()};
    rpma_client_options options{};
    options.create_size = kRegionSize;
    options.quorum = 2;
    options.operation_timeout_ms = 1500;
    rpma_client_region *writer = nullptr;
    ASSERT_EQ(rpma_client_region_open(list, 3, kRegion, &options, &writer), RPMA_CLIENT_OK)
        << rpma_client_last_error();
    const uint64_t generation = rpma_client_region_generation(writer);
    EXPECT_GT(generation, 0u);
    const auto bytes = RecordBytes(1);
    ASSERT_EQ(rpma_client_write_persist(writer, kRecord, bytes.data(), bytes.size()),
              RPMA_CLIENT_OK);
    daemons_[2]->process().Kill();
    for (uint64_t i = 2; rpma_client_replica_state(writer, 2) == RPMA_CLIENT_REPLICA_LIVE; ++i) {
        ASSERT_LT(i, 2000u);
        const auto more = RecordBytes(i);
        ASSERT_EQ(rpma_client_write_persist(writer, i * kRecord, more.data(), more.size()),
                  RPMA_CLIENT_OK)
            << rpma_client_last_error();
    }
    EXPECT_EQ(rpma_client_replica_state(writer, 2), RPMA_CLIENT_REPLICA_FAILED);
    EXPECT_EQ(rpma_client_region_generation(writer), generation + 1);
    EXPECT_EQ(rpma_client_replica_state(writer, 3), RPMA_CLIENT_E_INVAL);
    rpma_client_region_close(writer);

    options.quorum = 1;
    rpma_client_region *reader = nullptr;
    ASSERT_EQ(rpma_client_region_open_flags(list, 3, kRegion, &options, RPMA_CLIENT_OPEN_READ_ONLY,
                                            &reader),
              RPMA_CLIENT_OK)
        << rpma_client_last_error();
    EXPECT_EQ(rpma_client_region_generation(reader), 0u);
    EXPECT_EQ(rpma_client_replica_state(reader, 0), RPMA_CLIENT_REPLICA_LIVE);
    EXPECT_EQ(rpma_client_replica_state(reader, 2), RPMA_CLIENT_REPLICA_STALE);
    std::vector<std::byte> in(kRecord);
    EXPECT_EQ(rpma_client_read(reader, 1, kRecord, in.data(), in.size()), RPMA_CLIENT_OK);
    EXPECT_TRUE(in == bytes);
    EXPECT_EQ(rpma_client_read(reader, 2, kRecord, in.data(), in.size()),
              RPMA_CLIENT_E_PRECONDITION);
    EXPECT_NE(std::string(rpma_client_last_error()).find("replica 2 is stale"), std::string::npos)
        << rpma_client_last_error();
    EXPECT_EQ(rpma_client_write_persist(reader, 0, bytes.data(), bytes.size()),
              RPMA_CLIENT_E_PRECONDITION);
    EXPECT_EQ(rpma_client_region_open_flags(list, 3, kRegion, &options, 0x80, &writer),
              RPMA_CLIENT_E_INVAL);
    rpma_client_region_close(reader);
}

// Two writers opening a region never recorded at once, with the same
// replica list, propose the same first record (or one steps over the
// other's half-made one): both opens succeed (an open that another
// writer's record overtook starts over by itself); a writer fenced by the
// other's later record is told so and opens again; a replica that one
// writer read before the other's first record reached it is stale for it
// (rule 4) until a repair. A reader then finds every replica in sync and
// both writers' bytes.
TEST_F(ReplicaSetTest, WritersOpeningANewRegionAtOnceBothOpen) {
    ASSERT_NO_FATAL_FAILURE(StartDaemons(3));
    for (int round = 0; round < Iterations(); ++round) {
        const std::string name = "first-open-" + std::to_string(round);
        OpenOptions options;
        options.create_size = kRegionSize;
        options.quorum = 2;
        auto open = [&] { return Region::Open(Set(), name, options); };
        auto fa = std::async(std::launch::async, open);
        auto fb = std::async(std::launch::async, open);
        auto a = fa.get();
        auto b = fb.get();
        ASSERT_TRUE(a.ok()) << a.status().ToString();
        ASSERT_TRUE(b.ok()) << b.status().ToString();
        EXPECT_GE((*a)->generation(), 1u);
        EXPECT_GE((*b)->generation(), 1u);
        size_t k = 1;
        for (auto *region : {&*a, &*b}) {
            client::Status s = (*region)->WritePersist(k * kRecord, RecordBytes(k));
            if (s.code() == StatusCode::kFailedPrecondition) {
                auto again = open();
                ASSERT_TRUE(again.ok()) << again.status().ToString();
                *region = std::move(*again);
                s = (*region)->WritePersist(k * kRecord, RecordBytes(k));
            }
            ASSERT_TRUE(s.ok()) << s.ToString();
            ++k;
        }
        a->reset();
        b->reset();
        // A replica that took the first record after the other writer read
        // it missing counts as having missed a change (rule 4): a repair
        // brings it in.
        {
            auto repairer = Region::Open(Set(), name, options);
            ASSERT_TRUE(repairer.ok()) << repairer.status().ToString();
            for (size_t r = 0; r < 3; ++r)
                if ((*repairer)->replicas()[r].state != ReplicaState::kLive) {
                    const client::Status repaired = (*repairer)->Repair(r);
                    ASSERT_TRUE(repaired.ok()) << repaired.ToString();
                }
        }
        OpenOptions reading;
        reading.read_only = true;
        auto reader = Region::Open(Set(), name, reading);
        ASSERT_TRUE(reader.ok()) << reader.status().ToString();
        for (size_t r = 0; r < 3; ++r) {
            ASSERT_EQ((*reader)->replicas()[r].state, ReplicaState::kLive)
                << (*reader)->replicas()[r].error.ToString();
            for (size_t i : {1u, 2u}) {
                std::vector<std::byte> in(kRecord);
                ASSERT_TRUE((*reader)->Read(i * kRecord, in, r).ok());
                EXPECT_TRUE(in == RecordBytes(i)) << "replica " << r << " record " << i;
            }
        }
    }
}

// Daemons that want the admin token to create regions and a client token
// to open sessions: the record's calls (read, change, checksums, progress)
// go with the client token, as sessions do, so a writer holding only that
// token records a failure and repairs.
TEST_F(ReplicaSetTest, AWriterWithOnlyAClientTokenRecordsAndRepairs) {
    const std::string clients = TempPath("replica-set-clients");
    std::ofstream(clients) << "writer t-writer\n";
    ASSERT_NO_FATAL_FAILURE(StartDaemons(3,
                                         "control:\n  admin_token: \"t-admin\"\n"
                                         "sessions:\n  client_tokens_file: " +
                                             clients + "\n"));
    connect_.admin_token = "t-admin";
    connect_.client_token = "t-writer";
    {
        auto created = OpenWriter(2);  // creates: the admin token
        ASSERT_NE(created, nullptr);
    }
    connect_.admin_token.clear();
    OpenOptions options;
    options.quorum = 2;
    options.operation_timeout = std::chrono::milliseconds(1500);
    auto region = Region::Open(Set(), kRegion, options);
    ASSERT_TRUE(region.ok()) << region.status().ToString();
    size_t next = 0;
    ASSERT_NO_FATAL_FAILURE(WriteRecords(**region, next, 50));
    next += 50;
    const uint64_t before = (*region)->generation();
    daemons_[2]->process().Kill();
    ASSERT_NO_FATAL_FAILURE(WriteUntilFailed(**region, 2, &next, 100));
    EXPECT_EQ((*region)->generation(), before + 1);
    daemons_[2] = Start(2, true);
    ASSERT_NE(daemons_[2], nullptr);
    (void)Repair(**region, 2);
    region->reset();
    ASSERT_NO_FATAL_FAILURE(ExpectHistory({0, 1, 2}));
}

// (e) A set of two cannot drop a member: the operation that finds it
// failed, and every later write, fail unacknowledged.
}  // namespace
}  // namespace rpma::testing
