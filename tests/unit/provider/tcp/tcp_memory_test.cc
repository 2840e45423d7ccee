// Memory registration rules and ibv_advise_mr.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>

#include <cerrno>
#include <set>

#include "tests/unit/provider/tcp/tcp_test_support.h"

namespace rpma::provider::tcp::testing {
namespace {

class TcpMemory : public ::testing::Test {
  protected:
    void SetUp() override { ASSERT_EQ(GetDevice().AllocPd(&pd), 0); }
    std::unique_ptr<provider::ProtectionDomain> pd;
};

TEST_F(TcpMemory, RkeysAreNonZeroUniqueAndEqualToLkeys) {
    std::vector<uint8_t> memory(4096);
    std::vector<std::unique_ptr<provider::MemoryRegion>> mrs(64);
    std::set<uint32_t> keys;
    for (size_t i = 0; i < mrs.size(); ++i) {
        ASSERT_EQ(pd->RegisterMemory(memory.data() + i, 64, kRemoteAll, &mrs[i]), 0);
        EXPECT_NE(mrs[i]->Rkey(), 0u);
        EXPECT_EQ(mrs[i]->Lkey(), mrs[i]->Rkey());
        EXPECT_EQ(mrs[i]->Addr(), memory.data() + i);
        EXPECT_EQ(mrs[i]->Length(), 64u);
        keys.insert(mrs[i]->Rkey());
    }
    EXPECT_EQ(keys.size(), mrs.size());
}

TEST_F(TcpMemory, RegistrationRejectsBadArguments) {
    std::vector<uint8_t> memory(64);
    std::unique_ptr<provider::MemoryRegion> mr;
    EXPECT_EQ(pd->RegisterMemory(nullptr, 64, kRemoteAll, &mr), EINVAL);
    EXPECT_EQ(pd->RegisterMemory(memory.data(), 0, kRemoteAll, &mr), EINVAL);
    EXPECT_EQ(pd->RegisterMemory(memory.data(), 64, IBV_ACCESS_REMOTE_WRITE, &mr), EINVAL);
    EXPECT_EQ(pd->RegisterMemory(memory.data(), 64, 1 << 15, &mr), EINVAL);
    EXPECT_EQ(pd->RegisterMemory(memory.data(), 64, IBV_ACCESS_ON_DEMAND, &mr), EOPNOTSUPP);
    EXPECT_EQ(mr, nullptr);
}

class TcpAdvise : public TcpMemory {
  protected:
    void SetUp() override {
        TcpMemory::SetUp();
        page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
        size = 4 * page;
        void *mapped =
            mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        ASSERT_NE(mapped, MAP_FAILED);
        memory = static_cast<uint8_t *>(mapped);
        // The region starts mid-page: advice must not touch bytes before it.
        ASSERT_EQ(pd->RegisterMemory(memory + 100, size - 200, kRemoteAll, &mr), 0);
    }
    void TearDown() override {
        mr.reset();
        munmap(memory, size);
    }

    size_t page = 0;
    size_t size = 0;
    uint8_t *memory = nullptr;
    std::unique_ptr<provider::MemoryRegion> mr;
};

TEST_F(TcpAdvise, EveryPrefetchAdviceInsideTheRegionSucceeds) {
    memory[100] = 0x42;
    for (int advice : {IBV_ADVISE_MR_ADVICE_PREFETCH, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE,
                       IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT}) {
        for (uint32_t flags : {0u, static_cast<uint32_t>(IBV_ADVISE_MR_FLAG_FLUSH)}) {
            EXPECT_EQ(mr->Advise(memory + 100, size - 200, advice, flags), 0)
                << "advice " << advice << " flags " << flags;
        }
    }
    EXPECT_EQ(memory[100], 0x42);  // touched, not changed
    EXPECT_EQ(mr->Advise(memory + 200, 0, IBV_ADVISE_MR_ADVICE_PREFETCH, 0), 0);
}

TEST_F(TcpAdvise, RangeOutsideTheRegionFailsWithEfault) {
    EXPECT_EQ(mr->Advise(memory + 99, 16, IBV_ADVISE_MR_ADVICE_PREFETCH, 0), EFAULT);
    EXPECT_EQ(mr->Advise(memory + 100, size - 199, IBV_ADVISE_MR_ADVICE_PREFETCH, 0), EFAULT);
    EXPECT_EQ(mr->Advise(memory + size, 1, IBV_ADVISE_MR_ADVICE_PREFETCH, 0), EFAULT);
}

TEST_F(TcpAdvise, UnknownAdviceOrFlagsFailWithEinval) {
    EXPECT_EQ(mr->Advise(memory + 100, 16, 3, 0), EINVAL);
    EXPECT_EQ(mr->Advise(memory + 100, 16, -1, 0), EINVAL);
    EXPECT_EQ(mr->Advise(memory + 100, 16, IBV_ADVISE_MR_ADVICE_PREFETCH, 2), EINVAL);
}

TEST_F(TcpAdvise, PrefetchForWritingNeedsLocalWriteAccess) {
    std::unique_ptr<provider::MemoryRegion> read_only;
    ASSERT_EQ(pd->RegisterMemory(memory, page, IBV_ACCESS_REMOTE_READ, &read_only), 0);
    EXPECT_EQ(read_only->Advise(memory, page, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE, 0), EINVAL);
    EXPECT_EQ(read_only->Advise(memory, page, IBV_ADVISE_MR_ADVICE_PREFETCH, 0), 0);
}

TEST(TcpMemoryTable, WriteBackIsNeededOnlyForSharedMappings) {
    // A persistent flush msyncs only regions that have shared pages.
    MemoryTable table;
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    auto needs = [&](void *addr, size_t length) {
        std::shared_ptr<Region> region;
        EXPECT_EQ(table.Register(addr, length, kRemoteAll, 1, &region), 0);
        const bool result = region != nullptr && region->NeedsWriteBack();
        if (region != nullptr)
            table.Deregister(region);
        return result;
    };
    // Three adjacent pages: private anonymous, shared file, private anonymous.
    auto *base = static_cast<uint8_t *>(
        mmap(nullptr, 3 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    ASSERT_NE(base, MAP_FAILED);
    char path[] = "/tmp/rpma_tcp_maps_XXXXXX";
    const int fd = mkstemp(path);
    ASSERT_GE(fd, 0);
    unlink(path);
    ASSERT_EQ(ftruncate(fd, static_cast<off_t>(page)), 0);
    ASSERT_NE(mmap(base + page, page, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0),
              MAP_FAILED);
    EXPECT_FALSE(needs(base, page));
    EXPECT_FALSE(needs(base + 2 * page + 100, 200));
    EXPECT_TRUE(needs(base + page, page));
    EXPECT_TRUE(needs(base + page - 1, 2));  // straddles into the shared page
    EXPECT_TRUE(needs(base, 3 * page));
    std::vector<uint8_t> heap(64);  // heap memory is private
    EXPECT_FALSE(needs(heap.data(), heap.size()));
    munmap(base, 3 * page);
    close(fd);
    EXPECT_TRUE(needs(base, page));  // unmapped: msync will tell
}

}  // namespace
}  // namespace rpma::provider::tcp::testing
