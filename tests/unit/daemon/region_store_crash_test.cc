// Every crash point of the region store's changes to its pool (create,
// delete, a replica-set record, and the recovery of a damaged catalog): a child process makes the
// change and stops right before its step K, as a crash would (_exit: no
// cleanup, nothing closed); then the pool must open by itself, with every
// region either as before the change or as after it, whole, with its bytes.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "daemon/durable_file.h"
#include "daemon/region_store.h"
#include "tests/unit/daemon/test_files.h"

namespace rpmad {
namespace {

using ::rpmad::testing::FreshTestDirectory;
using ::rpmad::testing::ReadFileOrEmpty;
using ::rpmad::testing::WriteFile;

constexpr uint64_t kPage = 4096;
constexpr int kStoppedExitCode = 77;
constexpr int kMaxSteps = 64;  // far more than any change takes

// The child's hook: counts steps and ends the process before step `stop_at`,
// telling the parent which step that was.
int steps_seen = 0;
int stop_at = -1;
int report_fd = -1;

int StopBeforeStep(const std::string &step) {
    if (steps_seen++ == stop_at) {
        (void)!write(report_fd, step.data(), step.size());
        _exit(kStoppedExitCode);
    }
    return 0;
}

struct ChildRun {
    bool stopped = false;  // at the step asked for; otherwise it finished
    std::string said;      // the step it stopped before, or why it failed
    bool ok = false;       // stopped, or finished with an empty answer
};

// Runs `change` in a child process stopped before its step `stop_before`
// (counting from 0). `change` answers "" when all went right.
ChildRun RunStopped(int stop_before, const std::function<std::string()> &change) {
    int fds[2];
    if (pipe(fds) != 0) {
        return {false, "pipe failed", false};
    }
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        report_fd = fds[1];
        stop_at = stop_before;
        steps_seen = 0;
        SetStepHookForTesting(StopBeforeStep);
        const std::string answer = change();
        (void)!write(fds[1], answer.data(), answer.size());
        _exit(answer.empty() ? 0 : 1);
    }
    close(fds[1]);
    ChildRun run;
    char buffer[4096];
    for (ssize_t n; (n = read(fds[0], buffer, sizeof(buffer))) > 0;) {
        run.said.append(buffer, static_cast<size_t>(n));
    }
    close(fds[0]);
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) {
        run.said = "the child did not exit normally: " + run.said;
        return run;
    }
    run.stopped = WEXITSTATUS(status) == kStoppedExitCode;
    run.ok = run.stopped || WEXITSTATUS(status) == 0;
    return run;
}

std::vector<std::byte> Pattern(const std::string &name) {
    std::vector<std::byte> bytes(kPage);
    for (size_t i = 0; i < bytes.size(); i++) {
        bytes[i] = static_cast<std::byte>(name[0] + i * 13);
    }
    return bytes;
}

std::string Persist(RegionStore &store, const std::string &name) {
    StatusOr<std::shared_ptr<Region>> region = store.Get(name);
    if (!region.ok()) {
        return region.status().message();
    }
    std::vector<std::byte> bytes = Pattern(name);
    std::copy(bytes.begin(), bytes.end(), (*region)->bytes().begin());
    return (*region)->Persist(0, bytes.size()).message();
}

class RegionStoreCrashTest : public ::testing::Test {
  protected:
    void SetUp() override { root_ = FreshTestDirectory(); }

    RegionStoreOptions Options(const std::string &pool) const {
        RegionStoreOptions options;
        options.pool_dir = pool;
        return options;
    }

    // A pool holding `names`, each with its pattern persisted; "" when made.
    std::string MakePool(const std::string &pool, const std::vector<std::string> &names) {
        StatusOr<std::unique_ptr<RegionStore>> store = RegionStore::Open(Options(pool));
        if (!store.ok()) {
            return store.status().message();
        }
        for (const std::string &name : names) {
            if (auto created = (*store)->Create(name, kPage); !created.ok()) {
                return created.status().message();
            }
            if (std::string error = Persist(**store, name); !error.empty()) {
                return error;
            }
        }
        return "";
    }

    // A copy of `pool` to crash in.
    std::string CopyOf(const std::string &pool, const std::string &name) {
        const std::string copy = root_ + "/" + name;
        std::filesystem::remove_all(copy);
        std::filesystem::copy(pool, copy, std::filesystem::copy_options::recursive);
        return copy;
    }

    // Opens `pool` as rpmad would after the crash: it must come up with one
    // of `allowed` region sets, every region whole and holding its bytes and
    // no region file left unlisted; it must then take a change, and open
    // cleanly after it.
    void ExpectStartsFrom(const std::string &pool, const std::set<std::set<std::string>> &allowed,
                          const std::string &crash) {
        SCOPED_TRACE(crash);
        StatusOr<std::unique_ptr<RegionStore>> store = RegionStore::Open(Options(pool));
        ASSERT_TRUE(store.ok()) << store.status().message();
        std::set<std::string> names;
        std::set<std::string> files;
        for (const RegionInfo &info : (*store)->List()) {
            names.insert(info.name);
            files.insert(info.name + ".pmem");
            EXPECT_TRUE(info.healthy) << info.name << ": " << info.problem;
            StatusOr<std::shared_ptr<Region>> region = (*store)->Get(info.name);
            if (region.ok() && info.name != "new") {
                std::span<std::byte> bytes = (*region)->bytes();
                EXPECT_TRUE(std::equal(bytes.begin(), bytes.end(), Pattern(info.name).begin()))
                    << "region " << info.name << " lost its bytes";
            }
        }
        EXPECT_EQ(allowed.count(names), 1u) << "regions after the crash: " << Joined(names);
        std::set<std::string> on_disk;
        for (const auto &entry : std::filesystem::directory_iterator(pool + "/regions")) {
            on_disk.insert(entry.path().filename());
        }
        EXPECT_EQ(on_disk, files);
        ASSERT_TRUE((*store)->Create("later", kPage).ok());
        store->reset();
        store = RegionStore::Open(Options(pool));
        ASSERT_TRUE(store.ok()) << store.status().message();
        EXPECT_TRUE((*store)->problems().empty()) << Joined((*store)->problems());
        EXPECT_TRUE((*store)->Get("later").ok());
    }

    static std::string Joined(const auto &lines) {
        std::string out;
        for (const std::string &line : lines) {
            out += line + "; ";
        }
        return out;
    }

    // Runs `change` on a copy of `pool` stopped before each of its steps in
    // turn, and once to its end, checking each outcome with `check`. Returns
    // the number of steps.
    int ForEveryCrashPoint(
        const std::string &pool, const std::function<std::string(const std::string &copy)> &change,
        const std::function<void(const std::string &copy, const std::string &crash)> &check) {
        for (int step = 0; step < kMaxSteps; step++) {
            const std::string copy = CopyOf(
                pool, std::filesystem::path(pool).filename().string() + "." + std::to_string(step));
            ChildRun run = RunStopped(step, [&] { return change(copy); });
            EXPECT_TRUE(run.ok) << "step " << step << ": " << run.said;
            // Paths relative to the test's directory, for short messages.
            for (size_t at; (at = run.said.find(root_ + "/")) != std::string::npos;) {
                run.said.erase(at, root_.size() + 1);
            }
            check(copy, run.stopped
                            ? "stopped before step " + std::to_string(step) + ", " + run.said
                            : "after the change ran to its end");
            if (!run.stopped || ::testing::Test::HasFatalFailure()) {
                return step;
            }
        }
        ADD_FAILURE() << "a change of more than " << kMaxSteps << " steps";
        return kMaxSteps;
    }

    // ForEveryCrashPoint, each outcome checked with ExpectStartsFrom.
    int ForEveryCrashPointExpectStartsFrom(
        const std::string &pool, const std::function<std::string(const std::string &)> &change,
        const std::set<std::set<std::string>> &allowed) {
        return ForEveryCrashPoint(pool, change,
                                  [&](const std::string &copy, const std::string &crash) {
                                      ExpectStartsFrom(copy, allowed, crash);
                                  });
    }

    std::string root_;
};

std::string CreateIn(const std::string &pool, const std::string &name) {
    RegionStoreOptions options;
    options.pool_dir = pool;
    StatusOr<std::unique_ptr<RegionStore>> store = RegionStore::Open(options);
    if (!store.ok()) {
        return store.status().message();
    }
    StatusOr<std::shared_ptr<Region>> created = (*store)->Create(name, kPage);
    return created.ok() ? Persist(**store, name) : created.status().message();
}

std::string DeleteIn(const std::string &pool, const std::string &name) {
    RegionStoreOptions options;
    options.pool_dir = pool;
    StatusOr<std::unique_ptr<RegionStore>> store = RegionStore::Open(options);
    return store.ok() ? (*store)->Delete(name).message() : store.status().message();
}

std::string OpenIn(const std::string &pool) {
    RegionStoreOptions options;
    options.pool_dir = pool;
    return RegionStore::Open(options).status().message();
}

TEST_F(RegionStoreCrashTest, EveryCrashPointOfANewPoolsFirstStartLeavesAPoolThatStarts) {
    const std::string pool = root_ + "/pool";
    std::filesystem::create_directories(pool);
    EXPECT_GE(ForEveryCrashPointExpectStartsFrom(pool, OpenIn, {{}}), 4);
}

TEST_F(RegionStoreCrashTest, EveryCrashPointOfACreateLeavesAPoolThatStarts) {
    const std::string pool = root_ + "/pool";
    ASSERT_EQ(MakePool(pool, {"a", "b"}), "");
    auto create = [](const std::string &copy) { return CreateIn(copy, "new"); };
    EXPECT_GE(ForEveryCrashPointExpectStartsFrom(pool, create, {{"a", "b"}, {"a", "b", "new"}}), 6);
}

TEST_F(RegionStoreCrashTest, EveryCrashPointOfADeleteLeavesAPoolThatStarts) {
    const std::string pool = root_ + "/pool";
    ASSERT_EQ(MakePool(pool, {"a", "b"}), "");
    auto remove = [](const std::string &copy) { return DeleteIn(copy, "b"); };
    EXPECT_GE(ForEveryCrashPointExpectStartsFrom(pool, remove, {{"a", "b"}, {"a"}}), 6);
}

std::string SetRecordIn(const std::string &pool, const std::string &name,
                        const std::string &record) {
    RegionStoreOptions options;
    options.pool_dir = pool;
    StatusOr<std::unique_ptr<RegionStore>> store = RegionStore::Open(options);
    if (!store.ok()) {
        return store.status().message();
    }
    StatusOr<std::shared_ptr<Region>> region = (*store)->Get(name);
    if (!region.ok()) {
        return region.status().message();
    }
    return (*store)->SetReplicaSet(name, (*region)->id(), record).status.message();
}

std::string RecordIn(const std::string &pool, const std::string &name) {
    RegionStoreOptions options;
    options.pool_dir = pool;
    StatusOr<std::unique_ptr<RegionStore>> store = RegionStore::Open(options);
    if (!store.ok()) {
        return "<" + store.status().message() + ">";
    }
    for (const RegionInfo &info : (*store)->List()) {
        if (info.name == name) {
            return info.replica_set;
        }
    }
    return "<no region " + name + ">";
}

// A replica-set record is a catalog commit: after a crash at any point the
// region holds the record before or the one after, never none or a mix.
TEST_F(RegionStoreCrashTest, EveryCrashPointOfAReplicaSetChangeLeavesTheOldOrTheNewRecord) {
    const std::string pool = root_ + "/pool";
    ASSERT_EQ(MakePool(pool, {"a", "b"}), "");
    ASSERT_EQ(SetRecordIn(pool, "a", "record-1"), "");
    auto change = [](const std::string &copy) { return SetRecordIn(copy, "a", "record-2"); };
    int steps =
        ForEveryCrashPoint(pool, change, [&](const std::string &copy, const std::string &crash) {
            SCOPED_TRACE(crash);
            const std::string record = RecordIn(copy, "a");
            EXPECT_TRUE(record == "record-1" || record == "record-2") << record;
            if (crash == "after the change ran to its end") {
                EXPECT_EQ(record, "record-2");
            }
            EXPECT_EQ(RecordIn(copy, "b"), "");
            ExpectStartsFrom(copy, {{"a", "b"}}, crash);
        });
    EXPECT_GE(steps, 4);
}

// The catalog is damaged; catalog.prev lacks "b", created last. Recovery
// sets the damaged file aside, adopts b's file and commits: a crash at any
// point of it, and again at any point of the recovery after that, must
// leave a pool that starts with both regions.
TEST_F(RegionStoreCrashTest, EveryCrashPointOfARecoveryLeavesAPoolThatStarts) {
    const std::string pool = root_ + "/pool";
    ASSERT_EQ(MakePool(pool, {"a", "b"}), "");
    std::string catalog = ReadFileOrEmpty(pool + "/catalog");
    catalog[catalog.size() / 2] ^= 0x01;
    WriteFile(pool + "/catalog", catalog);

    const std::set<std::set<std::string>> both = {{"a", "b"}};
    int steps = ForEveryCrashPoint(
        pool, [](const std::string &copy) { return OpenIn(copy); },
        [&](const std::string &crashed, const std::string &crash) {
            // The next start may crash as well, at any of its steps.
            ForEveryCrashPoint(
                crashed, [](const std::string &copy) { return OpenIn(copy); },
                [&](const std::string &copy, const std::string &again) {
                    ExpectStartsFrom(copy, both, crash + "; then " + again);
                });
        });
    EXPECT_GE(steps, 6);
}

}  // namespace
}  // namespace rpmad
