// The persist method of a registered range (tcp_persist.h): the rule from
// the kernel's facts, the facts read from real mappings, and a persistent
// flush that really writes the target's pages back.
//
// Without DAX hardware the rule is tested through ChoosePersistMethod; with
// it (the VM tier), RPMA_TEST_DAX_DIR names a directory on an fsdax mount
// and RPMA_TEST_DEVDAX a device-DAX device, and the same tests check that
// such mappings are flushed from the CPU caches.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include <linux/magic.h>

#include "librpma.h"
#include "rpma_core/src/provider/tcp/tcp_memory_table.h"
#include "rpma_core/src/provider/tcp/tcp_persist.h"
#include "tests/unit/log_capture.h"
#include "tests/unit/provider/tcp/tcp_test_support.h"

#ifndef MAP_SHARED_VALIDATE
#define MAP_SHARED_VALIDATE 0x03
#endif
#ifndef MAP_SYNC
#define MAP_SYNC 0x80000
#endif

namespace rpma::provider::tcp::testing {
namespace {

size_t PageSize() {
    return static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

std::string TestDir() {
    const char *dir = getenv("TEST_TMPDIR");
    return dir != nullptr ? dir : "/tmp";
}

// An unlinked file of `size` bytes in `dir`; -1 on failure.
int TemporaryFile(const std::string &dir, size_t size) {
    std::string path = dir + "/rpma_tcp_persist_XXXXXX";
    const int fd = mkstemp(path.data());
    if (fd < 0)
        return -1;
    unlink(path.c_str());
    if (ftruncate(fd, static_cast<off_t>(size)) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

// ---- the rule -------------------------------------------------------------------

TEST(TcpPersistRule, PrivateMemoryNeedsNothing) {
    EXPECT_EQ(ChoosePersistMethod({.mapped = true}), PersistMethod::kNone);
}

TEST(TcpPersistRule, SharedPageCacheFileIsMsynced) {
    EXPECT_EQ(ChoosePersistMethod({.mapped = true, .shared = true}), PersistMethod::kMsync);
}

TEST(TcpPersistRule, DaxFileWithoutMapSyncIsMsynced) {
    // Its blocks may be allocated by the write's page fault: only an fsync
    // makes that allocation durable.
    EXPECT_EQ(ChoosePersistMethod({.mapped = true, .shared = true, .dax_file = true}),
              PersistMethod::kMsync);
}

TEST(TcpPersistRule, MapSyncAndDeviceDaxAreFlushedFromTheCpuCaches) {
    ASSERT_STRNE(CpuFlushInstruction(), "") << "x86-64 always has at least clflush";
    EXPECT_EQ(ChoosePersistMethod(
                  {.mapped = true, .shared = true, .dax_file = true, .synchronous = true}),
              PersistMethod::kCpuFlush);
    EXPECT_EQ(ChoosePersistMethod({.mapped = true, .shared = true, .device_dax = true}),
              PersistMethod::kCpuFlush);
}

TEST(TcpPersistRule, AHoleIsMsyncedSoThatTheFlushReportsIt) {
    EXPECT_EQ(ChoosePersistMethod({}), PersistMethod::kMsync);
}

// ---- the facts, from real mappings ------------------------------------------------

TEST(TcpPersistPlan, AnonymousMemoryGetsNone) {
    const size_t size = 2 * PageSize();
    void *anon = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(anon, MAP_FAILED);
    const PersistPlan plan = PersistPlan::ForRange(anon, size);
    ASSERT_EQ(plan.pieces().size(), 1u) << plan.Describe();
    EXPECT_EQ(plan.pieces()[0].method, PersistMethod::kNone);
    EXPECT_FALSE(plan.HasWork());
    EXPECT_EQ(plan.Persist(anon, size), 0);
    munmap(anon, size);
}

TEST(TcpPersistPlan, SharedFileMappingGetsMsync) {
    const size_t size = 4 * PageSize();
    const int fd = TemporaryFile(TestDir(), size);
    ASSERT_GE(fd, 0) << strerror(errno);
    void *mapped = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    ASSERT_NE(mapped, MAP_FAILED);
    const PersistPlan plan = PersistPlan::ForRange(static_cast<uint8_t *>(mapped) + 10, size - 20);
    ASSERT_EQ(plan.pieces().size(), 1u) << plan.Describe();
    EXPECT_EQ(plan.pieces()[0].method, PersistMethod::kMsync);
    EXPECT_NE(plan.Describe().find("msync (shared mapping of " + TestDir()), std::string::npos)
        << plan.Describe();
    EXPECT_EQ(plan.Persist(static_cast<uint8_t *>(mapped) + 100, 5000), 0);
    munmap(mapped, size);
    close(fd);
}

TEST(TcpPersistPlan, EachMappingUnderTheRangeGetsItsOwnMethod) {
    const size_t page = PageSize();
    auto *base = static_cast<uint8_t *>(
        mmap(nullptr, 3 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    ASSERT_NE(base, MAP_FAILED);
    const int fd = TemporaryFile(TestDir(), page);
    ASSERT_GE(fd, 0);
    ASSERT_NE(mmap(base + page, page, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0),
              MAP_FAILED);
    const PersistPlan plan = PersistPlan::ForRange(base + 100, 3 * page - 200);
    ASSERT_EQ(plan.pieces().size(), 3u) << plan.Describe();
    EXPECT_EQ(plan.pieces()[0].method, PersistMethod::kNone);
    EXPECT_EQ(plan.pieces()[1].method, PersistMethod::kMsync);
    EXPECT_EQ(plan.pieces()[2].method, PersistMethod::kNone);
    EXPECT_EQ(plan.pieces()[1].begin, reinterpret_cast<uintptr_t>(base + page));
    EXPECT_EQ(plan.pieces()[1].end, reinterpret_cast<uintptr_t>(base + 2 * page));
    EXPECT_EQ(plan.Persist(base + 100, 3 * page - 200), 0);
    munmap(base, 3 * page);
    close(fd);
}

TEST(TcpPersistPlan, AFlushOverAHoleFailsWithENOMEM) {
    const size_t page = PageSize();
    void *mapped = mmap(nullptr, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(mapped, MAP_FAILED);
    munmap(mapped, page);
    const PersistPlan plan = PersistPlan::ForRange(mapped, page);
    ASSERT_EQ(plan.pieces().size(), 1u);
    EXPECT_EQ(plan.pieces()[0].method, PersistMethod::kMsync);
    EXPECT_EQ(plan.Persist(mapped, page), ENOMEM);
}

TEST(TcpPersistPlan, CpuFlushKeepsTheBytesAndSucceeds) {
    // What DAX gets, run on ordinary memory: the flush instructions work on
    // any write-back memory.
    std::vector<uint8_t> bytes(10000);
    for (size_t i = 0; i < bytes.size(); ++i)
        bytes[i] = static_cast<uint8_t>(i * 7);
    const auto begin = reinterpret_cast<uintptr_t>(bytes.data());
    const PersistPlan plan(
        {{begin, begin + bytes.size(), PersistMethod::kCpuFlush, "test: heap memory"}});
    EXPECT_TRUE(plan.HasWork());
    EXPECT_EQ(plan.Persist(bytes.data() + 3, bytes.size() - 3), 0);
    for (size_t i = 0; i < bytes.size(); ++i)
        ASSERT_EQ(bytes[i], static_cast<uint8_t>(i * 7)) << i;
    EXPECT_EQ(plan.Describe(),
              std::string("cpu-flush with ") + CpuFlushInstruction() + " (test: heap memory)");
}

TEST(TcpPersistPlan, MapSyncIsRefusedOffDaxAndFlushedFromTheCpuCachesOnIt) {
    // RPMA_TEST_DAX_DIR: a directory on an fsdax mount (the VM tier).
    const char *dax_dir = getenv("RPMA_TEST_DAX_DIR");
    const size_t size = 2 * PageSize();
    const int fd = TemporaryFile(dax_dir != nullptr ? dax_dir : TestDir(), size);
    ASSERT_GE(fd, 0) << strerror(errno);
    void *mapped =
        mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED_VALIDATE | MAP_SYNC, fd, 0);
    if (dax_dir == nullptr) {
        EXPECT_EQ(mapped, MAP_FAILED) << TestDir() << " is on DAX: set RPMA_TEST_DAX_DIR to it";
        EXPECT_EQ(errno, EOPNOTSUPP);
    } else {
        ASSERT_NE(mapped, MAP_FAILED) << dax_dir << ": MAP_SYNC refused: " << strerror(errno);
        const PersistPlan plan = PersistPlan::ForRange(mapped, size);
        ASSERT_EQ(plan.pieces().size(), 1u) << plan.Describe();
        EXPECT_EQ(plan.pieces()[0].method, PersistMethod::kCpuFlush) << plan.Describe();
        EXPECT_EQ(plan.Persist(mapped, size), 0);
        munmap(mapped, size);
    }
    close(fd);
}

TEST(TcpPersistPlan, DeviceDaxIsFlushedFromTheCpuCachesAndOtherDevicesAreNot) {
    // RPMA_TEST_DEVDAX: a device-DAX character device (the VM tier).
    if (const char *devdax = getenv("RPMA_TEST_DEVDAX")) {
        const int fd = open(devdax, O_RDWR | O_CLOEXEC);
        ASSERT_GE(fd, 0) << devdax << ": " << strerror(errno);
        // Device DAX maps in units of its alignment, 2 MiB by default.
        const size_t size = size_t{2} << 20;
        void *mapped = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        ASSERT_NE(mapped, MAP_FAILED) << strerror(errno);
        const PersistPlan plan = PersistPlan::ForRange(mapped, size);
        ASSERT_EQ(plan.pieces().size(), 1u) << plan.Describe();
        EXPECT_EQ(plan.pieces()[0].method, PersistMethod::kCpuFlush) << plan.Describe();
        EXPECT_EQ(plan.Persist(mapped, 4096), 0);
        munmap(mapped, size);
        close(fd);
    }
    // A shared mapping of another character device is not device DAX.
    const int zero = open("/dev/zero", O_RDWR | O_CLOEXEC);
    ASSERT_GE(zero, 0);
    const size_t size = PageSize();
    void *mapped = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, zero, 0);
    ASSERT_NE(mapped, MAP_FAILED);
    const PersistPlan plan = PersistPlan::ForRange(mapped, size);
    ASSERT_EQ(plan.pieces().size(), 1u) << plan.Describe();
    EXPECT_EQ(plan.pieces()[0].method, PersistMethod::kMsync) << plan.Describe();
    munmap(mapped, size);
    close(zero);
}

// ---- the choice is visible ------------------------------------------------------

TEST(TcpPersistLog, ARegistrationSaysAtDebugLevelHowItsRangeIsPersisted) {
    rpma_test::LogCapture log;
    const size_t size = PageSize();
    const int fd = TemporaryFile(TestDir(), size);
    ASSERT_GE(fd, 0);
    void *mapped = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    ASSERT_NE(mapped, MAP_FAILED);
    MemoryTable table;
    std::shared_ptr<Region> region;
    ASSERT_EQ(table.Register(mapped, size, kRemoteAll, 1, &region), 0);
    table.Deregister(region);
    munmap(mapped, size);
    close(fd);

    const std::string expected =
        "a persistent flush persists by msync (shared mapping of " + TestDir();
    EXPECT_TRUE(log.Contains(expected)) << "no log line contains: " << expected << "\n"
                                        << log.Text();
}

// ---- a persistent flush writes the target's pages back ------------------------

// Dirty kilobytes of the mapping that starts at `start`, as smaps counts
// them (dirty page-table entries or dirty pages); -1 when not found.
long DirtyKilobytes(const void *start) {
    std::ifstream smaps("/proc/self/smaps");
    char header[32];
    snprintf(header, sizeof(header), "%lx-", reinterpret_cast<unsigned long>(start));
    std::string line;
    bool inside = false;
    long dirty = -1;
    while (std::getline(smaps, line)) {
        if (line.rfind(header, 0) == 0) {
            inside = true;
            dirty = 0;
        } else if (inside &&
                   (line.rfind("Shared_Dirty:", 0) == 0 || line.rfind("Private_Dirty:", 0) == 0)) {
            std::istringstream fields(line.substr(line.find(':') + 1));
            long kilobytes = 0;
            fields >> kilobytes;
            dirty += kilobytes;
        } else if (inside && line.rfind("VmFlags:", 0) == 0) {
            break;
        }
    }
    return dirty;
}

class TcpPersistentFlush : public ConnectedPair {
  protected:
    void SetUp() override {
        ConnectedPair::SetUp();
        ASSERT_NO_FATAL_FAILURE(Connect());
    }
};

TEST_F(TcpPersistentFlush, WritesTheTargetsDirtyPagesBack) {
    // Persistence a test can see: a target that acknowledged a persistent
    // flush without writing its pages back would leave them dirty here.
    struct statfs fs;
    ASSERT_EQ(statfs(TestDir().c_str(), &fs), 0);
    if (fs.f_type == TMPFS_MAGIC)
        GTEST_SKIP() << TestDir() << " is tmpfs, which has no write-back to see";
    const size_t size = 4 * PageSize();
    const int fd = TemporaryFile(TestDir(), size);
    ASSERT_GE(fd, 0) << strerror(errno);
    void *mapped = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    ASSERT_NE(mapped, MAP_FAILED);
    std::unique_ptr<provider::MemoryRegion> file_mr;
    ASSERT_EQ(server_pd->RegisterMemory(mapped, size, kRemoteAll, &file_mr), 0);
    EXPECT_EQ(DirtyKilobytes(mapped), 0);

    Buffer local(*client_pd, size, kRemoteAll);
    memset(local.data(), 0x5a, size);
    const uint64_t target = reinterpret_cast<uintptr_t>(mapped);
    ibv_sge sge = local.Sge(0, static_cast<uint32_t>(size));
    ASSERT_EQ(client.qp().PostSend(SendWr(IBV_WR_RDMA_WRITE, &sge, 1, target, file_mr->Rkey())), 0);
    ASSERT_EQ(client.send.WaitOne().status, IBV_WC_SUCCESS);
    // A visibility flush makes the bytes visible, not durable.
    ASSERT_EQ(client.qp().PostFlush(target, file_mr->Rkey(), static_cast<uint32_t>(size),
                                    FlushType::kVisibility, true, 2),
              0);
    ASSERT_EQ(client.send.WaitOne().status, IBV_WC_SUCCESS);
    EXPECT_EQ(DirtyKilobytes(mapped), static_cast<long>(size / 1024));

    ASSERT_EQ(client.qp().PostFlush(target, file_mr->Rkey(), static_cast<uint32_t>(size),
                                    FlushType::kPersistent, true, 3),
              0);
    ASSERT_EQ(client.send.WaitOne().status, IBV_WC_SUCCESS);
    EXPECT_EQ(DirtyKilobytes(mapped), 0) << "the acknowledged range is still in the page cache";

    file_mr.reset();
    munmap(mapped, size);
    close(fd);
}

}  // namespace
}  // namespace rpma::provider::tcp::testing
