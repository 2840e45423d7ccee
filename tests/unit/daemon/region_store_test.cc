// The region store on real files: regions survive a restart, limits and
// validation answer with the right codes, and damage found at start-up
// (a truncated file, a damaged catalog, leftovers of a crash) is reported
// while the rest of the pool serves.
#include "daemon/region_store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "daemon/durable_file.h"
#include "tests/unit/daemon/scratch_tmpfs.h"

namespace rpmad {
namespace {

using ::rpmad::testing::FreshTestDirectory;
using ::rpmad::testing::ReadFileOrEmpty;
using ::rpmad::testing::ScratchTmpfs;
using ::rpmad::testing::WriteFile;

constexpr uint64_t kPage = 4096;

std::unique_ptr<RegionStore> OpenOrDie(const RegionStoreOptions &options) {
    StatusOr<std::unique_ptr<RegionStore>> store = RegionStore::Open(options);
    EXPECT_TRUE(store.ok()) << store.status().message();
    return store.ok() ? std::move(*store) : nullptr;
}

std::vector<std::string> RegionFiles(const std::string &pool_dir) {
    std::vector<std::string> names;
    for (const auto &entry : std::filesystem::directory_iterator(pool_dir + "/regions")) {
        names.push_back(entry.path().filename());
    }
    std::sort(names.begin(), names.end());
    return names;
}

bool AnyContains(const std::vector<std::string> &lines, const std::string &needle) {
    return std::any_of(lines.begin(), lines.end(), [&needle](const std::string &line) {
        return line.find(needle) != std::string::npos;
    });
}

std::string Joined(const std::vector<std::string> &lines) {
    std::string out;
    for (const std::string &line : lines) {
        out += line + "\n";
    }
    return out;
}

class RegionStoreTest : public ::testing::Test {
  protected:
    void SetUp() override { options_.pool_dir = FreshTestDirectory() + "/pool"; }
    const std::string &pool() const { return options_.pool_dir; }

    RegionStoreOptions options_;
};

TEST_F(RegionStoreTest, CreateGetListDeleteRoundTrip) {
    auto store = OpenOrDie(options_);
    ASSERT_NE(store, nullptr);
    EXPECT_EQ(store->pool_dir(), pool());
    EXPECT_TRUE(store->problems().empty()) << Joined(store->problems());

    StatusOr<std::shared_ptr<Region>> b = store->Create("b", 2 * kPage);
    ASSERT_TRUE(b.ok()) << b.status().message();
    StatusOr<std::shared_ptr<Region>> a = store->Create("a", kPage);
    ASSERT_TRUE(a.ok()) << a.status().message();
    EXPECT_EQ((*b)->name(), "b");
    EXPECT_EQ((*b)->size(), 2 * kPage);
    EXPECT_EQ((*b)->bytes().size(), 2 * kPage);
    EXPECT_EQ((*b)->path(), pool() + "/regions/b.pmem");
    EXPECT_NE((*a)->id(), (*b)->id());
    EXPECT_GT((*b)->created_unix(), 0);
    EXPECT_EQ(std::filesystem::file_size((*b)->path()), 2 * kPage);

    StatusOr<std::shared_ptr<Region>> got = store->Get("b");
    ASSERT_TRUE(got.ok());
    EXPECT_EQ(got->get(), b->get());
    EXPECT_EQ(store->region_count(), 2u);
    EXPECT_EQ(store->used_bytes(), 3 * kPage);

    std::vector<RegionInfo> list = store->List();
    ASSERT_EQ(list.size(), 2u);
    EXPECT_EQ(list[0].name, "a");
    EXPECT_EQ(list[1].name, "b");
    EXPECT_EQ(list[1].size, 2 * kPage);
    EXPECT_EQ(list[1].id, (*b)->id());
    EXPECT_EQ(list[1].created_unix, (*b)->created_unix());
    EXPECT_EQ(list[1].path, (*b)->path());
    EXPECT_EQ(list[1].granularity, GranularityName((*b)->granularity()));
    EXPECT_TRUE(list[1].healthy);
    EXPECT_TRUE(list[1].problem.empty());

    ASSERT_TRUE(store->Delete("b").ok());
    EXPECT_EQ(store->Get("b").status().code(), StatusCode::kNotFound);
    EXPECT_EQ(store->Delete("b").code(), StatusCode::kNotFound);
    EXPECT_FALSE(std::filesystem::exists(pool() + "/regions/b.pmem"));
    EXPECT_EQ(store->region_count(), 1u);
    EXPECT_EQ(store->used_bytes(), kPage);
    EXPECT_EQ(RegionFiles(pool()), std::vector<std::string>{"a.pmem"});
}

TEST_F(RegionStoreTest, APageCacheRegionIsHonestAboutPageGranularity) {
    // TEST_TMPDIR is an ordinary filesystem: no MAP_SYNC, so a store is
    // durable only once its page is written back.
    auto store = OpenOrDie(options_);
    ASSERT_NE(store, nullptr);
    StatusOr<std::shared_ptr<Region>> region = store->Create("r", kPage);
    ASSERT_TRUE(region.ok()) << region.status().message();
    EXPECT_EQ((*region)->granularity(), Granularity::kPage);
    EXPECT_EQ((*region)->backing(), Backing::kPoolFile);
    std::vector<RegionInfo> list = store->List();
    ASSERT_EQ(list.size(), 1u);
    EXPECT_EQ(list[0].granularity, "page");
    EXPECT_EQ(list[0].persist_method, "msync");
    EXPECT_EQ(list[0].backing, Backing::kPoolFile);
}

TEST_F(RegionStoreTest, PersistedBytesSurviveReopening) {
    uint64_t id = 0;
    int64_t created = 0;
    {
        auto store = OpenOrDie(options_);
        ASSERT_NE(store, nullptr);
        StatusOr<std::shared_ptr<Region>> region = store->Create("data", 4 * kPage);
        ASSERT_TRUE(region.ok()) << region.status().message();
        std::span<std::byte> bytes = (*region)->bytes();
        for (size_t i = 0; i < bytes.size(); i++) {
            bytes[i] = static_cast<std::byte>(i * 7 + 1);
        }
        ASSERT_TRUE((*region)->Persist(0, bytes.size()).ok());
        id = (*region)->id();
        created = (*region)->created_unix();
    }
    auto store = OpenOrDie(options_);
    ASSERT_NE(store, nullptr);
    EXPECT_TRUE(store->problems().empty()) << Joined(store->problems());
    StatusOr<std::shared_ptr<Region>> region = store->Get("data");
    ASSERT_TRUE(region.ok()) << region.status().message();
    EXPECT_EQ((*region)->id(), id);
    EXPECT_EQ((*region)->created_unix(), created);
    std::span<std::byte> bytes = (*region)->bytes();
    ASSERT_EQ(bytes.size(), 4 * kPage);
    for (size_t i = 0; i < bytes.size(); i++) {
        ASSERT_EQ(bytes[i], static_cast<std::byte>(i * 7 + 1)) << "byte " << i;
    }
}

TEST_F(RegionStoreTest, ARecreatedRegionHasANewId) {
    auto store = OpenOrDie(options_);
    ASSERT_NE(store, nullptr);
    StatusOr<std::shared_ptr<Region>> first = store->Create("r", kPage);
    ASSERT_TRUE(first.ok());
    ASSERT_TRUE(store->Delete("r").ok());
    StatusOr<std::shared_ptr<Region>> second = store->Create("r", kPage);
    ASSERT_TRUE(second.ok());
    EXPECT_NE((*first)->id(), (*second)->id());
}

TEST_F(RegionStoreTest, InvalidRequestsAreRejectedWithTheirCodes) {
    options_.max_region_size = 16 * kPage;
    auto store = OpenOrDie(options_);
    ASSERT_NE(store, nullptr);
    for (const std::string &name :
         {std::string(), std::string("-a"), std::string(".a"), std::string("_a"),
          std::string("a/b"), std::string("a b"), std::string("a\xc3\xa9"), std::string(65, 'x'),
          std::string("..")}) {
        StatusOr<std::shared_ptr<Region>> region = store->Create(name, kPage);
        ASSERT_FALSE(region.ok()) << "name \"" << name << "\" was accepted";
        EXPECT_EQ(region.status().code(), StatusCode::kInvalidArgument);
        EXPECT_NE(region.status().message().find("starts with a letter or a digit"),
                  std::string::npos)
            << region.status().message();
    }
    EXPECT_TRUE(store->Create(std::string(64, 'x'), kPage).ok());
    EXPECT_TRUE(store->Create("A.b_c-9", kPage).ok());

    for (uint64_t size : {uint64_t{0}, uint64_t{1}, kPage + 1, 17 * kPage}) {
        StatusOr<std::shared_ptr<Region>> region = store->Create("sized", size);
        ASSERT_FALSE(region.ok()) << "size " << size << " was accepted";
        EXPECT_EQ(region.status().code(), StatusCode::kInvalidArgument) << size;
    }
    EXPECT_NE(store->Create("sized", 17 * kPage).status().message().find("max_region_size"),
              std::string::npos);
    EXPECT_TRUE(store->Create("sized", 16 * kPage).ok());

    StatusOr<std::shared_ptr<Region>> again = store->Create("sized", kPage);
    EXPECT_EQ(again.status().code(), StatusCode::kAlreadyExists);
    EXPECT_EQ(store->Get("nope").status().code(), StatusCode::kNotFound);
    // Failed creates leave nothing behind.
    EXPECT_EQ(RegionFiles(pool()), (std::vector<std::string>{"A.b_c-9.pmem", "sized.pmem",
                                                             std::string(64, 'x') + ".pmem"}));
}

TEST_F(RegionStoreTest, MaxRegionsIsEnforced) {
    options_.max_regions = 2;
    auto store = OpenOrDie(options_);
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->Create("one", kPage).ok());
    ASSERT_TRUE(store->Create("two", kPage).ok());
    StatusOr<std::shared_ptr<Region>> three = store->Create("three", kPage);
    EXPECT_EQ(three.status().code(), StatusCode::kResourceExhausted);
    EXPECT_NE(three.status().message().find("max_regions (2)"), std::string::npos)
        << three.status().message();
    ASSERT_TRUE(store->Delete("one").ok());
    EXPECT_TRUE(store->Create("three", kPage).ok());
}

TEST_F(RegionStoreTest, CapacityIsEnforced) {
    options_.capacity = 4 * kPage;
    auto store = OpenOrDie(options_);
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->Create("one", 3 * kPage).ok());
    StatusOr<std::shared_ptr<Region>> two = store->Create("two", 2 * kPage);
    EXPECT_EQ(two.status().code(), StatusCode::kResourceExhausted);
    EXPECT_NE(two.status().message().find("capacity"), std::string::npos);
    StatusOr<std::shared_ptr<Region>> huge = store->Create("huge", 8 * kPage);
    EXPECT_EQ(huge.status().code(), StatusCode::kResourceExhausted);
    EXPECT_TRUE(store->Create("two", kPage).ok());
    EXPECT_EQ(store->used_bytes(), 4 * kPage);
}

TEST_F(RegionStoreTest, ASecondOpenOfTheSamePoolFails) {
    auto first = OpenOrDie(options_);
    ASSERT_NE(first, nullptr);
    StatusOr<std::unique_ptr<RegionStore>> second = RegionStore::Open(options_);
    ASSERT_FALSE(second.ok());
    EXPECT_EQ(second.status().code(), StatusCode::kFailedPrecondition);
    EXPECT_NE(
        second.status().message().find("pool directory " + pool() + " is in use by another rpmad"),
        std::string::npos)
        << second.status().message();
    first.reset();
    EXPECT_TRUE(RegionStore::Open(options_).ok());
}

TEST_F(RegionStoreTest, OpenCreatesThePoolDirectoryPrivate) {
    options_.pool_dir += "/deeper/still";
    auto store = OpenOrDie(options_);
    ASSERT_NE(store, nullptr);
    auto perms = std::filesystem::status(pool()).permissions();
    EXPECT_EQ(perms, std::filesystem::perms::owner_all);
    EXPECT_TRUE(std::filesystem::is_directory(pool() + "/regions"));
    EXPECT_TRUE(std::filesystem::exists(pool() + "/catalog"));
}

TEST_F(RegionStoreTest, PersistChecksBoundsWithoutOverflow) {
    auto store = OpenOrDie(options_);
    ASSERT_NE(store, nullptr);
    StatusOr<std::shared_ptr<Region>> created = store->Create("r", 2 * kPage);
    ASSERT_TRUE(created.ok());
    const Region &region = **created;
    constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();

    EXPECT_TRUE(region.Persist(0, 2 * kPage).ok());
    EXPECT_TRUE(region.Persist(100, 50).ok());
    EXPECT_TRUE(region.Persist(2 * kPage, 0).ok());
    EXPECT_TRUE(region.Persist(2 * kPage - 1, 1).ok());
    struct Range {
        uint64_t offset, length;
    };
    for (Range range :
         {Range{2 * kPage - 1, 2}, Range{2 * kPage + 1, 0}, Range{0, 2 * kPage + 1}, Range{1, kMax},
          Range{kMax, 2}, Range{kPage, kMax - kPage + 1}, Range{kMax, kMax}}) {
        Status status = region.Persist(range.offset, range.length);
        EXPECT_EQ(status.code(), StatusCode::kInvalidArgument)
            << "offset " << range.offset << " length " << range.length;
    }
    EXPECT_NE(region.Persist(kMax, 2).message().find("outside region \"r\""), std::string::npos);
}

TEST_F(RegionStoreTest, HoldersKeepTheMappingOfADeletedRegion) {
    auto store = OpenOrDie(options_);
    ASSERT_NE(store, nullptr);
    StatusOr<std::shared_ptr<Region>> region = store->Create("r", kPage);
    ASSERT_TRUE(region.ok());
    ASSERT_TRUE(store->Delete("r").ok());
    EXPECT_FALSE(std::filesystem::exists(pool() + "/regions/r.pmem"));
    std::span<std::byte> bytes = (*region)->bytes();
    std::fill(bytes.begin(), bytes.end(), std::byte{0x5a});
    EXPECT_TRUE((*region)->Persist(0, kPage).ok());
    EXPECT_EQ(bytes[kPage - 1], std::byte{0x5a});
}

TEST_F(RegionStoreTest, ATruncatedRegionIsUnhealthyAndTheOthersServe) {
    {
        auto store = OpenOrDie(options_);
        ASSERT_NE(store, nullptr);
        ASSERT_TRUE(store->Create("good", kPage).ok());
        ASSERT_TRUE(store->Create("cut", 2 * kPage).ok());
        ASSERT_TRUE(store->Create("gone", kPage).ok());
    }
    std::filesystem::resize_file(pool() + "/regions/cut.pmem", kPage);
    std::filesystem::remove(pool() + "/regions/gone.pmem");

    auto store = OpenOrDie(options_);
    ASSERT_NE(store, nullptr);
    EXPECT_TRUE(store->Get("good").ok());
    StatusOr<std::shared_ptr<Region>> cut = store->Get("cut");
    EXPECT_EQ(cut.status().code(), StatusCode::kFailedPrecondition);
    EXPECT_NE(cut.status().message().find("is 4096 bytes but the catalog says 8192"),
              std::string::npos)
        << cut.status().message();
    EXPECT_NE(store->Get("gone").status().message().find("is missing"), std::string::npos);

    std::vector<RegionInfo> list = store->List();
    ASSERT_EQ(list.size(), 3u);
    EXPECT_EQ(list[0].name, "cut");
    EXPECT_FALSE(list[0].healthy);
    EXPECT_NE(list[0].problem.find("truncated"), std::string::npos);
    EXPECT_TRUE(list[0].granularity.empty());
    EXPECT_FALSE(list[1].healthy);
    EXPECT_TRUE(list[2].healthy);
    std::vector<std::string> problems = store->problems();
    EXPECT_EQ(problems.size(), 2u) << Joined(problems);
    EXPECT_TRUE(AnyContains(problems, "region \"cut\" is unhealthy")) << Joined(problems);
    EXPECT_TRUE(AnyContains(problems, "region \"gone\" is unhealthy")) << Joined(problems);

    ASSERT_TRUE(store->Delete("cut").ok());
    ASSERT_TRUE(store->Delete("gone").ok());
    EXPECT_TRUE(store->problems().empty()) << Joined(store->problems());
    EXPECT_EQ(RegionFiles(pool()), std::vector<std::string>{"good.pmem"});
    store.reset();
    store = OpenOrDie(options_);
    ASSERT_NE(store, nullptr);
    EXPECT_EQ(store->region_count(), 1u);
    EXPECT_TRUE(store->problems().empty()) << Joined(store->problems());
}

TEST_F(RegionStoreTest, LeftoversOfACrashAreRemovedAndReported) {
    {
        auto store = OpenOrDie(options_);
        ASSERT_NE(store, nullptr);
        ASSERT_TRUE(store->Create("kept", kPage).ok());
    }
    WriteFile(pool() + "/regions/half.pmem.tmp", std::string(100, 'x'));
    WriteFile(pool() + "/regions/unlisted.pmem", std::string(kPage, 'x'));
    WriteFile(pool() + "/regions/notes.txt", "someone's file");

    auto store = OpenOrDie(options_);
    ASSERT_NE(store, nullptr);
    EXPECT_EQ(RegionFiles(pool()), (std::vector<std::string>{"kept.pmem", "notes.txt"}));
    std::vector<std::string> problems = store->problems();
    EXPECT_EQ(problems.size(), 3u) << Joined(problems);
    EXPECT_TRUE(AnyContains(problems, "removed leftover " + pool() + "/regions/half.pmem.tmp"))
        << Joined(problems);
    EXPECT_TRUE(AnyContains(problems, "removed leftover " + pool() + "/regions/unlisted.pmem"))
        << Joined(problems);
    EXPECT_TRUE(AnyContains(problems, "ignored " + pool() + "/regions/notes.txt"))
        << Joined(problems);
    EXPECT_TRUE(store->Get("kept").ok());
    EXPECT_EQ(store->region_count(), 1u);
}

TEST_F(RegionStoreTest, ADamagedCatalogWithoutPreviousFailsOpenClearly) {
    {
        auto store = OpenOrDie(options_);
        ASSERT_NE(store, nullptr);
        ASSERT_TRUE(store->Create("r", kPage).ok());
    }
    std::string bytes = ReadFileOrEmpty(pool() + "/catalog");
    bytes[bytes.size() / 2] ^= 0x01;
    WriteFile(pool() + "/catalog", bytes);
    std::filesystem::remove(pool() + "/catalog.prev");

    StatusOr<std::unique_ptr<RegionStore>> store = RegionStore::Open(options_);
    ASSERT_FALSE(store.ok());
    EXPECT_EQ(store.status().code(), StatusCode::kFailedPrecondition);
    const std::string message = store.status().message();
    EXPECT_NE(message.find(pool() + "/catalog is damaged: checksum mismatch"), std::string::npos)
        << message;
    EXPECT_NE(message.find("Restore the catalog from a backup"), std::string::npos) << message;
    // Nothing was touched: the region file is still there.
    EXPECT_EQ(RegionFiles(pool()), std::vector<std::string>{"r.pmem"});
}

TEST_F(RegionStoreTest, ADamagedCatalogIsRecoveredFromThePreviousGeneration) {
    uint64_t first_id = 0;
    {
        auto store = OpenOrDie(options_);
        ASSERT_NE(store, nullptr);
        StatusOr<std::shared_ptr<Region>> first = store->Create("first", kPage);
        ASSERT_TRUE(first.ok());
        first_id = (*first)->id();
        StatusOr<std::shared_ptr<Region>> last = store->Create("last", 2 * kPage);
        ASSERT_TRUE(last.ok());
        (*last)->bytes()[5] = std::byte{42};
        ASSERT_TRUE((*last)->Persist(0, 2 * kPage).ok());
    }
    std::string bytes = ReadFileOrEmpty(pool() + "/catalog");
    bytes[bytes.size() - 10] ^= 0x01;
    WriteFile(pool() + "/catalog", bytes);

    {
        auto store = OpenOrDie(options_);
        ASSERT_NE(store, nullptr);
        std::vector<std::string> problems = store->problems();
        EXPECT_TRUE(AnyContains(problems, "recovered the previous generation")) << Joined(problems);
        EXPECT_TRUE(AnyContains(problems, "adopted " + pool() + "/regions/last.pmem"))
            << Joined(problems);
        EXPECT_EQ(ReadFileOrEmpty(pool() + "/catalog.damaged"), bytes);
        StatusOr<std::shared_ptr<Region>> first = store->Get("first");
        ASSERT_TRUE(first.ok());
        EXPECT_EQ((*first)->id(), first_id);
        // The region the old generation did not know keeps its data.
        StatusOr<std::shared_ptr<Region>> last = store->Get("last");
        ASSERT_TRUE(last.ok()) << last.status().message();
        EXPECT_EQ((*last)->size(), 2 * kPage);
        EXPECT_EQ((*last)->bytes()[5], std::byte{42});
    }
    // The recovered catalog was committed: the next start is clean.
    auto store = OpenOrDie(options_);
    ASSERT_NE(store, nullptr);
    EXPECT_TRUE(store->problems().empty()) << Joined(store->problems());
    EXPECT_EQ(store->region_count(), 2u);
}

TEST_F(RegionStoreTest, ALostCatalogWithRegionFilesFailsOpen) {
    {
        auto store = OpenOrDie(options_);
        ASSERT_NE(store, nullptr);
        ASSERT_TRUE(store->Create("r", kPage).ok());
    }
    std::filesystem::remove(pool() + "/catalog");
    std::filesystem::remove(pool() + "/catalog.prev");
    StatusOr<std::unique_ptr<RegionStore>> store = RegionStore::Open(options_);
    ASSERT_FALSE(store.ok());
    EXPECT_EQ(store.status().code(), StatusCode::kFailedPrecondition);
    EXPECT_NE(store.status().message().find("is missing but"), std::string::npos)
        << store.status().message();
    EXPECT_EQ(RegionFiles(pool()), std::vector<std::string>{"r.pmem"});
}

TEST_F(RegionStoreTest, ConcurrentCreatesAndListsAgree) {
    auto store = OpenOrDie(options_);
    ASSERT_NE(store, nullptr);
    constexpr int kThreads = 4;
    constexpr int kEach = 8;
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; t++) {
        threads.emplace_back([&store, t] {
            for (int i = 0; i < kEach; i++) {
                std::string name = "t" + std::to_string(t) + "-" + std::to_string(i);
                EXPECT_TRUE(store->Create(name, kPage).ok()) << name;
                EXPECT_TRUE(store->Get(name).ok()) << name;
                EXPECT_GE(store->List().size(), 1u);
            }
        });
    }
    for (std::thread &thread : threads) {
        thread.join();
    }
    EXPECT_EQ(store->region_count(), size_t{kThreads * kEach});
    store.reset();
    store = OpenOrDie(options_);
    ASSERT_NE(store, nullptr);
    EXPECT_EQ(store->region_count(), size_t{kThreads * kEach});
}

// ---- a catalog whose directory sync fails (issue 24, item 1) ----------------

// Makes the sync of one directory fail with EIO while it lives.
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

TEST_F(RegionStoreTest, ADeleteWhoseCatalogSyncFailsIsDoneAndFurtherChangesWaitForARestart) {
    auto store = OpenOrDie(options_);
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->Create("kept", kPage).ok());
    ASSERT_TRUE(store->Create("victim", kPage).ok());
    Status deleted;
    {
        FailingDirectorySync failing(pool());
        deleted = store->Delete("victim");
    }
    ASSERT_FALSE(deleted.ok());
    EXPECT_EQ(deleted.code(), StatusCode::kInternal);
    EXPECT_THAT(deleted.message(),
                ::testing::AllOf(::testing::HasSubstr("region \"victim\" is deleted"),
                                 ::testing::HasSubstr("cannot sync directory " + pool()),
                                 ::testing::HasSubstr("restart rpmad")));
    // Memory follows the catalog a restart reads: no longer served.
    EXPECT_EQ(store->Get("victim").status().code(), StatusCode::kNotFound);
    EXPECT_EQ(store->region_count(), 1u);
    // Its file stays until a start finds it unlisted (or listed again after
    // a power cut brought the old catalog back: then it is whole).
    EXPECT_EQ(RegionFiles(pool()), (std::vector<std::string>{"kept.pmem", "victim.pmem"}));
    EXPECT_TRUE(store->Get("kept").ok());
    for (Status refused : {store->Create("other", kPage).status(), store->Delete("kept")}) {
        EXPECT_EQ(refused.code(), StatusCode::kFailedPrecondition);
        EXPECT_THAT(refused.message(), ::testing::HasSubstr("refuses region changes until it is "
                                                            "restarted"));
    }
    EXPECT_TRUE(AnyContains(store->problems(), "cannot sync directory " + pool()))
        << Joined(store->problems());

    store.reset();
    store = OpenOrDie(options_);
    ASSERT_NE(store, nullptr);
    EXPECT_EQ(store->Get("victim").status().code(), StatusCode::kNotFound);
    EXPECT_TRUE(store->Get("kept").ok());
    EXPECT_EQ(RegionFiles(pool()), std::vector<std::string>{"kept.pmem"});
    EXPECT_TRUE(store->Create("other", kPage).ok());
}

TEST_F(RegionStoreTest, ACreateWhoseCatalogSyncFailsKeepsItsFileAndServesItAfterARestart) {
    auto store = OpenOrDie(options_);
    ASSERT_NE(store, nullptr);
    StatusOr<std::shared_ptr<Region>> created = Status();
    {
        FailingDirectorySync failing(pool());
        created = store->Create("newborn", 2 * kPage);
    }
    ASSERT_FALSE(created.ok());
    EXPECT_THAT(created.status().message(),
                ::testing::AllOf(::testing::HasSubstr("region \"newborn\" is created but not "
                                                      "served yet"),
                                 ::testing::HasSubstr("cannot sync directory " + pool())));
    // The catalog lists it, so its file is there; served after a restart.
    EXPECT_EQ(RegionFiles(pool()), std::vector<std::string>{"newborn.pmem"});
    EXPECT_EQ(store->Get("newborn").status().code(), StatusCode::kFailedPrecondition);
    std::vector<RegionInfo> list = store->List();
    ASSERT_EQ(list.size(), 1u);
    EXPECT_FALSE(list[0].healthy);
    EXPECT_THAT(list[0].problem, ::testing::HasSubstr("served once rpmad restarts"));

    store.reset();
    store = OpenOrDie(options_);
    ASSERT_NE(store, nullptr);
    EXPECT_TRUE(store->problems().empty()) << Joined(store->problems());
    StatusOr<std::shared_ptr<Region>> region = store->Get("newborn");
    ASSERT_TRUE(region.ok()) << region.status().message();
    EXPECT_EQ((*region)->size(), 2 * kPage);
}

TEST_F(RegionStoreTest, ACatalogRenameThatFailsUndoesTheChangeAndTakesTheNextOne) {
    auto store = OpenOrDie(options_);
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->Create("kept", kPage).ok());
    SetStepHookForTesting([](const std::string &step) {
        return step.find("/catalog.tmp to ") != std::string::npos ? EIO : 0;
    });
    StatusOr<std::shared_ptr<Region>> created = store->Create("never", kPage);
    Status deleted = store->Delete("kept");
    SetStepHookForTesting(nullptr);
    EXPECT_FALSE(created.ok());
    EXPECT_THAT(created.status().message(), ::testing::HasSubstr("cannot rename"));
    EXPECT_FALSE(deleted.ok());
    EXPECT_EQ(store->Get("never").status().code(), StatusCode::kNotFound);
    EXPECT_TRUE(store->Get("kept").ok());
    EXPECT_EQ(RegionFiles(pool()), std::vector<std::string>{"kept.pmem"});
    EXPECT_TRUE(store->Create("next", kPage).ok());
}

// A pool on a 1 MiB tmpfs: the file system, not a configured limit, is full.
class FullPoolTest : public ::testing::Test {
  protected:
    void SetUp() override {
        tmpfs_ = std::make_unique<ScratchTmpfs>(FreshTestDirectory() + "/mnt", 1 << 20);
        ASSERT_TRUE(tmpfs_->mounted()) << tmpfs_->error();
        options_.pool_dir = tmpfs_->dir() + "/pool";
    }
    const std::string &pool() const { return options_.pool_dir; }

    RegionStoreOptions options_;
    std::unique_ptr<ScratchTmpfs> tmpfs_;
};

TEST_F(FullPoolTest, ARegionLargerThanTheFreeSpaceLeavesNoTrace) {
    auto store = OpenOrDie(options_);
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->Create("small", 16 * kPage).ok());
    const std::string catalog = ReadFileOrEmpty(pool() + "/catalog");

    StatusOr<std::shared_ptr<Region>> big = store->Create("big", 2 << 20);
    ASSERT_FALSE(big.ok());
    EXPECT_EQ(big.status().code(), StatusCode::kResourceExhausted);
    EXPECT_NE(big.status().message().find("pool directory " + pool()), std::string::npos)
        << big.status().message();
    EXPECT_EQ(RegionFiles(pool()), std::vector<std::string>{"small.pmem"});
    EXPECT_EQ(ReadFileOrEmpty(pool() + "/catalog"), catalog);
    EXPECT_EQ(store->Get("big").status().code(), StatusCode::kNotFound);
    // The space the failed create took is back.
    EXPECT_TRUE(store->Create("medium", 64 * kPage).ok());
}

TEST_F(FullPoolTest, ACatalogThatCannotBeWrittenUndoesTheCreate) {
    auto store = OpenOrDie(options_);
    ASSERT_NE(store, nullptr);
    const std::string catalog = ReadFileOrEmpty(pool() + "/catalog");
    // A region that takes every free block: its file fits, the new catalog
    // does not.
    const uint64_t free = tmpfs_->FreeBytes() / kPage * kPage;
    ASSERT_GT(free, 0u);

    StatusOr<std::shared_ptr<Region>> region = store->Create("all", free);
    ASSERT_FALSE(region.ok());
    EXPECT_EQ(region.status().code(), StatusCode::kResourceExhausted);
    EXPECT_NE(region.status().message().find(pool() + "/catalog.tmp"), std::string::npos)
        << region.status().message();
    EXPECT_TRUE(RegionFiles(pool()).empty());
    EXPECT_EQ(ReadFileOrEmpty(pool() + "/catalog"), catalog);
    EXPECT_EQ(store->region_count(), 0u);
    EXPECT_TRUE(store->Create("fits", kPage).ok());
}

TEST_F(FullPoolTest, AReadOnlyPoolRefusesCreateAndOpen) {
    auto store = OpenOrDie(options_);
    ASSERT_NE(store, nullptr);
    const std::string catalog = ReadFileOrEmpty(pool() + "/catalog");
    std::string error = tmpfs_->RemountReadOnly();
    ASSERT_TRUE(error.empty()) << error;

    StatusOr<std::shared_ptr<Region>> region = store->Create("r", kPage);
    ASSERT_FALSE(region.ok());
    EXPECT_EQ(region.status().code(), StatusCode::kPermissionDenied);
    EXPECT_NE(region.status().message().find("Read-only file system"), std::string::npos)
        << region.status().message();
    EXPECT_TRUE(RegionFiles(pool()).empty());
    EXPECT_EQ(ReadFileOrEmpty(pool() + "/catalog"), catalog);

    store.reset();
    StatusOr<std::unique_ptr<RegionStore>> reopened = RegionStore::Open(options_);
    ASSERT_FALSE(reopened.ok());
    EXPECT_EQ(reopened.status().code(), StatusCode::kPermissionDenied);
    EXPECT_NE(reopened.status().message().find("pool directory " + pool() + " is not writable"),
              std::string::npos)
        << reopened.status().message();
}

// ---- regions on device DAX ----------------------------------------------------

RegionMetadata DeviceDax(const std::string &name, const std::string &path, uint64_t offset = 0,
                         uint64_t size = 0) {
    RegionMetadata metadata;
    metadata.name = name;
    metadata.path = path;
    metadata.offset = offset;
    metadata.size = size;
    return metadata;
}

TEST_F(RegionStoreTest, APathThatIsNotADeviceDaxDeviceIsRefusedClearly) {
    const std::string file = FreshTestDirectory() + "/not-a-device";
    WriteFile(file, std::string(kPage, 'x'));
    StatusOr<std::unique_ptr<RegionStore>> opened =
        RegionStore::Open(options_, {DeviceDax("file", file), DeviceDax("zero", "/dev/zero"),
                                     DeviceDax("missing", "/dev/dax-no-such-device")});
    ASSERT_TRUE(opened.ok()) << opened.status().message();
    RegionStore &store = **opened;
    std::vector<RegionInfo> list = store.List();
    ASSERT_EQ(list.size(), 3u);
    for (const RegionInfo &info : list) {
        EXPECT_FALSE(info.healthy) << info.name;
        EXPECT_EQ(info.backing, Backing::kDeviceDax) << info.name;
        EXPECT_TRUE(info.persist_method.empty()) << info.name;
        EXPECT_THAT(info.problem, ::testing::HasSubstr("storage.devdax_regions takes "
                                                       "device-DAX character devices"));
    }
    EXPECT_EQ(list[0].name, "file");
    EXPECT_EQ(list[0].path, file);
    EXPECT_THAT(list[0].problem,
                ::testing::HasSubstr(file + " is not a device-DAX device (not a character "
                                            "device)"));
    EXPECT_EQ(list[1].name, "missing");
    EXPECT_THAT(list[1].problem,
                ::testing::HasSubstr("cannot open device /dev/dax-no-such-device"));
    EXPECT_EQ(list[2].name, "zero");
    EXPECT_THAT(list[2].problem,
                ::testing::HasSubstr("/dev/zero is a character device but not device DAX"));

    StatusOr<std::shared_ptr<Region>> got = store.Get("zero");
    EXPECT_EQ(got.status().code(), StatusCode::kFailedPrecondition);
    EXPECT_THAT(got.status().message(), ::testing::HasSubstr("not device DAX"));
    EXPECT_TRUE(AnyContains(store.problems(), "region \"file\" is unhealthy"))
        << Joined(store.problems());
}

TEST_F(RegionStoreTest, DeviceDaxRegionsAreConfiguredNotCreatedOrDeleted) {
    {
        StatusOr<std::unique_ptr<RegionStore>> opened =
            RegionStore::Open(options_, {DeviceDax("dax", "/dev/zero")});
        ASSERT_TRUE(opened.ok()) << opened.status().message();
        RegionStore &store = **opened;
        EXPECT_EQ(store.Create("dax", kPage).status().code(), StatusCode::kAlreadyExists);
        Status deleted = store.Delete("dax");
        EXPECT_EQ(deleted.code(), StatusCode::kFailedPrecondition);
        EXPECT_THAT(deleted.message(),
                    ::testing::HasSubstr("remove it from rpmad's configuration and restart"));
        ASSERT_TRUE(store.Create("file", kPage).ok());
        EXPECT_EQ(store.used_bytes(), kPage);  // a device is not the pool's space
        EXPECT_EQ(store.region_count(), 2u);
    }
    // The catalog never listed it: without the configuration it is gone,
    // and the pool's own region is intact.
    auto store = OpenOrDie(options_);
    ASSERT_NE(store, nullptr);
    EXPECT_TRUE(store->problems().empty()) << Joined(store->problems());
    std::vector<RegionInfo> list = store->List();
    ASSERT_EQ(list.size(), 1u);
    EXPECT_EQ(list[0].name, "file");
    EXPECT_TRUE(list[0].healthy);
}

TEST_F(RegionStoreTest, ADeviceDaxRegionCannotTakeTheNameOfAnother) {
    {
        auto store = OpenOrDie(options_);
        ASSERT_NE(store, nullptr);
        ASSERT_TRUE(store->Create("taken", kPage).ok());
    }
    StatusOr<std::unique_ptr<RegionStore>> opened =
        RegionStore::Open(options_, {DeviceDax("taken", "/dev/zero")});
    ASSERT_FALSE(opened.ok());
    EXPECT_EQ(opened.status().code(), StatusCode::kFailedPrecondition);
    EXPECT_THAT(opened.status().message(),
                ::testing::AllOf(::testing::HasSubstr("storage.devdax_regions: region \"taken\""),
                                 ::testing::HasSubstr("has the name of a region of the pool")));
    opened =
        RegionStore::Open(options_, {DeviceDax("d", "/dev/zero"), DeviceDax("d", "/dev/null")});
    ASSERT_FALSE(opened.ok());
    EXPECT_THAT(opened.status().message(), ::testing::HasSubstr("another device-DAX region"));
    opened = RegionStore::Open(options_, {DeviceDax("no/slash", "/dev/zero")});
    ASSERT_FALSE(opened.ok());
    EXPECT_EQ(opened.status().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(opened.status().message(), ::testing::HasSubstr("storage.devdax_regions: invalid"));
}

// The same on real DAX (fsdax, device DAX): region_store_dax_check.cc, run
// by the PMem VM tier.

}  // namespace
}  // namespace rpmad
