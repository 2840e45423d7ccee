// A region's replica-set record on one daemon: the compare-and-set rules
// (replica_set.h), and the record in the region store's catalog: kept
// across a restart, gone with its region, refused while the catalog waits
// for a restart after a failed sync.
#include "daemon/replica_set.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cerrno>
#include <string>

#include "daemon/durable_file.h"
#include "daemon/region_store.h"
#include "tests/unit/daemon/test_files.h"

namespace rpmad {
namespace {

using ::rpmad::testing::FreshTestDirectory;
using ::testing::HasSubstr;

const std::string kSelf = "0123456789abcdef0123456789abcdef";
const std::string kOther = "fedcba9876543210fedcba9876543210";
constexpr uint64_t kPage = 4096;

v1::ReplicaSetRecord Record(uint64_t generation, const std::string &set_id = "set-1") {
    v1::ReplicaSetRecord record;
    record.set_set_id(set_id);
    record.set_generation(generation);
    record.set_quorum(2);
    record.set_writer("host pid 1");
    record.set_reason("open");
    for (const std::string &id : {kSelf, kOther}) {
        v1::ReplicaSetMember *member = record.add_members();
        member->set_daemon_id(id);
        member->set_address("127.0.0.1:" + id.substr(0, 4));
        member->set_state(v1::ReplicaSetMember::STATE_IN_SYNC);
    }
    return record;
}

TEST(ReplicaSetRulesTest, TheNextGenerationAppliesOnTheExpectedOne) {
    auto first = DecideReplicaSetChange(v1::ReplicaSetRecord(), 0, Record(1), kSelf);
    ASSERT_TRUE(first.ok()) << first.status().message();
    EXPECT_TRUE(*first);
    auto next = DecideReplicaSetChange(Record(1), 1, Record(2), kSelf);
    ASSERT_TRUE(next.ok()) << next.status().message();
    EXPECT_TRUE(*next);
}

TEST(ReplicaSetRulesTest, AWrongExpectedGenerationIsNotAppliedAndNoError) {
    // Another writer moved it on: the caller learns what is, no error.
    for (uint64_t expected : {0, 1, 3}) {
        auto decided = DecideReplicaSetChange(Record(2), expected, Record(expected + 1), kSelf);
        ASSERT_TRUE(decided.ok()) << expected << ": " << decided.status().message();
        EXPECT_FALSE(*decided) << expected;
    }
}

TEST(ReplicaSetRulesTest, MalformedRecordsAreRefusedWithWhatIsWrong) {
    struct Case {
        const char *what;
        void (*spoil)(v1::ReplicaSetRecord *);
        const char *message;
    };
    const Case cases[] = {
        {"no set id", [](v1::ReplicaSetRecord *r) { r->clear_set_id(); }, "set_id is empty"},
        {"no members", [](v1::ReplicaSetRecord *r) { r->clear_members(); }, "0 members"},
        {"bad daemon id",
         [](v1::ReplicaSetRecord *r) { r->mutable_members(1)->set_daemon_id("ABCDEF"); },
         "32 lowercase hex digits"},
        {"upper-case daemon id",
         [](v1::ReplicaSetRecord *r) {
             r->mutable_members(1)->set_daemon_id("FEDCBA9876543210FEDCBA9876543210");
         },
         "32 lowercase hex digits"},
        {"no state",
         [](v1::ReplicaSetRecord *r) {
             r->mutable_members(1)->set_state(v1::ReplicaSetMember::STATE_UNSPECIFIED);
         },
         "has no state"},
        {"this daemon missing",
         [](v1::ReplicaSetRecord *r) {
             r->mutable_members(0)->set_daemon_id("11111111111111111111111111111111");
         },
         "is not among its members"},
        {"a daemon twice",
         [](v1::ReplicaSetRecord *r) { r->mutable_members(1)->set_daemon_id(kSelf); },
         "already lists"},
        {"quorum above members", [](v1::ReplicaSetRecord *r) { r->set_quorum(3); },
         "quorum 3 is more than its 2 members"},
        {"long writer", [](v1::ReplicaSetRecord *r) { r->set_writer(std::string(257, 'w')); },
         "writer is 257 bytes"},
        {"long address",
         [](v1::ReplicaSetRecord *r) { r->mutable_members(0)->set_address(std::string(300, 'a')); },
         "address is 300 bytes"},
        {"too many members",
         [](v1::ReplicaSetRecord *r) {
             for (int i = 0; i < kMaxReplicaSetMembers; ++i) {
                 char id[33];
                 std::snprintf(id, sizeof(id), "%032x", i + 1);
                 auto *m = r->add_members();
                 m->set_daemon_id(id);
                 m->set_state(v1::ReplicaSetMember::STATE_STALE);
             }
         },
         "66 members"},
    };
    for (const Case &c : cases) {
        v1::ReplicaSetRecord record = Record(2);
        c.spoil(&record);
        auto decided = DecideReplicaSetChange(Record(1), 1, record, kSelf);
        ASSERT_FALSE(decided.ok()) << c.what;
        EXPECT_EQ(decided.status().code(), StatusCode::kInvalidArgument) << c.what;
        EXPECT_THAT(decided.status().message(), HasSubstr(c.message)) << c.what;
    }
}

TEST(ReplicaSetRulesTest, AGenerationThatDoesNotFollowTheExpectedOneIsRefused) {
    for (uint64_t generation : {1, 3, 9}) {
        auto decided = DecideReplicaSetChange(Record(1), 1, Record(generation), kSelf);
        ASSERT_FALSE(decided.ok()) << generation;
        EXPECT_EQ(decided.status().code(), StatusCode::kInvalidArgument);
        EXPECT_THAT(decided.status().message(), HasSubstr("every change adds exactly 1"));
    }
    v1::ReplicaSetRecord wrapped = Record(1);
    wrapped.set_generation(0);
    EXPECT_FALSE(DecideReplicaSetChange(Record(1), UINT64_MAX, wrapped, kSelf).ok());
}

TEST(ReplicaSetRulesTest, AnotherSetIdIsRefusedOnceOneIsRecorded) {
    auto decided = DecideReplicaSetChange(Record(4, "set-1"), 4, Record(5, "set-2"), kSelf);
    ASSERT_FALSE(decided.ok());
    EXPECT_EQ(decided.status().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(decided.status().message(), HasSubstr("another replica set of this region"));
    // Before any record, any set id starts the set.
    auto first = DecideReplicaSetChange(v1::ReplicaSetRecord(), 0, Record(1, "set-2"), kSelf);
    ASSERT_TRUE(first.ok());
    EXPECT_TRUE(*first);
}

TEST(ReplicaSetRulesTest, AnEmptyRecordIsGenerationZeroAndGarbageIsDamage) {
    auto empty = ParseReplicaSetRecord("");
    ASSERT_TRUE(empty.ok());
    EXPECT_EQ(empty->generation(), 0u);
    auto parsed = ParseReplicaSetRecord(Record(7).SerializeAsString());
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(parsed->generation(), 7u);
    EXPECT_EQ(ParseReplicaSetRecord("\xff\xff\xff").status().code(),
              StatusCode::kFailedPrecondition);
}

class ReplicaSetStoreTest : public ::testing::Test {
  protected:
    void SetUp() override { options_.pool_dir = FreshTestDirectory() + "/pool"; }

    std::unique_ptr<RegionStore> Open() {
        auto store = RegionStore::Open(options_);
        EXPECT_TRUE(store.ok()) << store.status().message();
        return store.ok() ? std::move(*store) : nullptr;
    }

    static std::string RecordOf(const RegionStore &store, const std::string &name) {
        for (const RegionInfo &info : store.List())
            if (info.name == name)
                return info.replica_set;
        return "<no region>";
    }

    RegionStoreOptions options_;
};

TEST_F(ReplicaSetStoreTest, TheRecordSurvivesAReopenAndGoesWithItsRegion) {
    auto store = Open();
    ASSERT_NE(store, nullptr);
    auto region = store->Create("r", kPage);
    ASSERT_TRUE(region.ok());
    ASSERT_TRUE(store->Create("other", kPage).ok());
    const uint64_t id = (*region)->id();
    EXPECT_EQ(RecordOf(*store, "r"), "");
    const std::string bytes = Record(3).SerializeAsString();
    Replacement set = store->SetReplicaSet("r", id, bytes);
    ASSERT_TRUE(set.status.ok()) << set.status.message();
    EXPECT_TRUE(set.visible);
    EXPECT_EQ(RecordOf(*store, "r"), bytes);

    store.reset();
    store = Open();
    ASSERT_NE(store, nullptr);
    EXPECT_EQ(RecordOf(*store, "r"), bytes);
    EXPECT_EQ(RecordOf(*store, "other"), "");

    // Another incarnation's id changes nothing.
    EXPECT_EQ(store->SetReplicaSet("r", id + 1, Record(4).SerializeAsString()).status.code(),
              StatusCode::kNotFound);
    EXPECT_EQ(RecordOf(*store, "r"), bytes);

    ASSERT_TRUE(store->Delete("r").ok());
    EXPECT_EQ(store->SetReplicaSet("r", id, bytes).status.code(), StatusCode::kNotFound);
    ASSERT_TRUE(store->Create("r", kPage).ok());
    EXPECT_EQ(RecordOf(*store, "r"), "") << "a region created again starts at generation 0";
    store.reset();
    store = Open();
    ASSERT_NE(store, nullptr);
    EXPECT_EQ(RecordOf(*store, "r"), "");
}

TEST_F(ReplicaSetStoreTest, AnOversizedRecordIsRefusedAndChangesNothing) {
    auto store = Open();
    ASSERT_NE(store, nullptr);
    auto region = store->Create("r", kPage);
    ASSERT_TRUE(region.ok());
    Replacement set =
        store->SetReplicaSet("r", (*region)->id(), std::string(kMaxReplicaSetRecordBytes + 1, 'x'));
    EXPECT_EQ(set.status.code(), StatusCode::kInvalidArgument);
    EXPECT_FALSE(set.visible);
    EXPECT_EQ(RecordOf(*store, "r"), "");
}

class FailingDirectorySync {
  public:
    explicit FailingDirectorySync(const std::string &dir) {
        failing_step() = "sync " + dir;
        SetStepHookForTesting(
            [](const std::string &step) { return step == failing_step() ? EIO : 0; });
    }
    ~FailingDirectorySync() { SetStepHookForTesting(nullptr); }

  private:
    static std::string &failing_step() {
        static std::string step;
        return step;
    }
};

TEST_F(ReplicaSetStoreTest, ARecordWhoseCatalogSyncFailsIsInPlaceAndChangesWaitForARestart) {
    auto store = Open();
    ASSERT_NE(store, nullptr);
    auto region = store->Create("r", kPage);
    ASSERT_TRUE(region.ok());
    const uint64_t id = (*region)->id();
    const std::string bytes = Record(1).SerializeAsString();
    Replacement set;
    {
        FailingDirectorySync failing(options_.pool_dir);
        set = store->SetReplicaSet("r", id, bytes);
    }
    EXPECT_FALSE(set.status.ok());
    EXPECT_TRUE(set.visible);
    EXPECT_THAT(set.status.message(), HasSubstr("may not be durable"));
    // Memory follows the catalog a restart reads.
    EXPECT_EQ(RecordOf(*store, "r"), bytes);
    Replacement refused = store->SetReplicaSet("r", id, Record(2).SerializeAsString());
    EXPECT_EQ(refused.status.code(), StatusCode::kFailedPrecondition);
    EXPECT_FALSE(refused.visible);
    EXPECT_THAT(refused.status.message(),
                HasSubstr("refuses region changes until it is restarted"));
    EXPECT_EQ(RecordOf(*store, "r"), bytes);

    store.reset();
    store = Open();
    ASSERT_NE(store, nullptr);
    EXPECT_EQ(RecordOf(*store, "r"), bytes);
    EXPECT_TRUE(store->SetReplicaSet("r", id, Record(2).SerializeAsString()).status.ok());
}

TEST_F(ReplicaSetStoreTest, ACatalogThatCannotBeWrittenChangesNothing) {
    auto store = Open();
    ASSERT_NE(store, nullptr);
    auto region = store->Create("r", kPage);
    ASSERT_TRUE(region.ok());
    SetStepHookForTesting(
        [](const std::string &step) { return step.starts_with("write ") ? ENOSPC : 0; });
    Replacement set = store->SetReplicaSet("r", (*region)->id(), Record(1).SerializeAsString());
    SetStepHookForTesting(nullptr);
    EXPECT_EQ(set.status.code(), StatusCode::kFailedPrecondition);
    EXPECT_FALSE(set.visible);
    EXPECT_THAT(set.status.message(), HasSubstr("was not changed"));
    EXPECT_EQ(RecordOf(*store, "r"), "");
    // Nothing waits for a restart: the next one goes through.
    EXPECT_TRUE(
        store->SetReplicaSet("r", (*region)->id(), Record(1).SerializeAsString()).status.ok());
}

}  // namespace
}  // namespace rpmad
