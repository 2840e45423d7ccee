// One-sided operations executed by the target's progress thread: WRITE,
// READ, ATOMIC_WRITE, FLUSH, their access checks and the send queue.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "tests/unit/provider/tcp/tcp_test_support.h"

namespace rpma::provider::tcp::testing {
namespace {

class TcpRemoteOps : public ConnectedPair {
  protected:
    void SetUp() override {
        ConnectedPair::SetUp();
        ASSERT_NO_FATAL_FAILURE(Connect());
    }

    int Write(Buffer &src, size_t src_offset, uint64_t remote_addr, uint32_t rkey, uint32_t length,
              uint64_t wr_id, bool signaled = true) {
        ibv_sge sge = src.Sge(src_offset, length);
        return client.qp().PostSend(
            SendWr(IBV_WR_RDMA_WRITE, &sge, wr_id, remote_addr, rkey, signaled));
    }

    int Read(Buffer &dst, size_t dst_offset, uint64_t remote_addr, uint32_t rkey, uint32_t length,
             uint64_t wr_id) {
        ibv_sge sge = dst.Sge(dst_offset, length);
        return client.qp().PostSend(SendWr(IBV_WR_RDMA_READ, &sge, wr_id, remote_addr, rkey));
    }

    // Holds the target: a SEND with no receive posted stops the server from
    // reading further, so the WRs posted next are all outstanding together.
    void HoldTarget(Buffer &scratch) {
        ibv_sge sge = scratch.Sge(0, 8);
        ASSERT_EQ(client.qp().PostSend(SendWr(IBV_WR_SEND, &sge, 900, 0, 0, false)), 0);
    }
    void ReleaseTarget(Buffer &scratch) {
        ibv_sge sge = scratch.Sge(0, 8);
        ASSERT_EQ(server.qp().PostRecv(RecvWr(&sge, 901)), 0);
    }

    // A violation: the first WR fails with `status`, the WR behind it is
    // flushed, the target memory is unchanged and the connection breaks.
    void ExpectViolation(ibv_send_wr bad, ibv_wc_status status, Buffer &remote) {
        Buffer scratch(*client_pd, 64, kRemoteAll);
        Buffer server_scratch(*server_pd, 64, kRemoteAll);
        Buffer local(*client_pd, 4096, kRemoteAll);
        memset(local.data(), 0xee, local.size());
        const std::vector<uint8_t> before(remote.data(), remote.data() + remote.size());

        HoldTarget(scratch);
        ASSERT_EQ(client.qp().PostSend(bad), 0);
        ASSERT_EQ(Write(local, 0, remote.addr(), remote.rkey(), 16, 2), 0);
        ReleaseTarget(server_scratch);

        auto wcs = client.send.Wait(2);
        ASSERT_EQ(wcs.size(), 2u);
        EXPECT_EQ(wcs[0].wr_id, bad.wr_id);
        EXPECT_EQ(wcs[0].status, status);
        EXPECT_EQ(wcs[1].wr_id, 2u);
        EXPECT_EQ(wcs[1].status, IBV_WC_WR_FLUSH_ERR);
        ExpectBroken();
        EXPECT_EQ(std::vector<uint8_t>(remote.data(), remote.data() + remote.size()), before);
        // A broken connection takes new work and flushes it, as a QP in
        // the error state does.
        ASSERT_EQ(Write(local, 0, remote.addr(), remote.rkey(), 16, 3), 0);
        const ibv_wc flushed = client.send.WaitOne();
        EXPECT_EQ(flushed.wr_id, 3u);
        EXPECT_EQ(flushed.status, IBV_WC_WR_FLUSH_ERR);
    }
};

TEST_F(TcpRemoteOps, WriteThenReadBackReturnsWrittenBytes) {
    Buffer local(*client_pd, 8192, kRemoteAll);
    Buffer remote(*server_pd, 8192, kRemoteAll);
    for (size_t i = 0; i < 4096; ++i)
        local.data()[i] = static_cast<uint8_t>(i * 7);
    ASSERT_EQ(Write(local, 0, remote.addr(100), remote.rkey(), 4096, 1), 0);
    ASSERT_EQ(Read(local, 4096, remote.addr(100), remote.rkey(), 4096, 2), 0);
    auto wcs = client.send.Wait(2);
    ASSERT_EQ(wcs.size(), 2u);
    EXPECT_EQ(wcs[0].wr_id, 1u);
    EXPECT_EQ(wcs[0].status, IBV_WC_SUCCESS);
    EXPECT_EQ(wcs[0].opcode, IBV_WC_RDMA_WRITE);
    EXPECT_EQ(wcs[0].qp_num, client.qp().QpNum());
    EXPECT_EQ(wcs[1].wr_id, 2u);
    EXPECT_EQ(wcs[1].status, IBV_WC_SUCCESS);
    EXPECT_EQ(wcs[1].opcode, IBV_WC_RDMA_READ);
    EXPECT_EQ(memcmp(remote.data() + 100, local.data(), 4096), 0);
    EXPECT_EQ(memcmp(local.data() + 4096, local.data(), 4096), 0);
}

TEST_F(TcpRemoteOps, ReadLandsInASecondRegion) {
    Buffer source(*server_pd, 1 << 20, kRemoteAll);
    Buffer first(*client_pd, 64, kRemoteAll);
    Buffer second(*client_pd, 1 << 20, IBV_ACCESS_LOCAL_WRITE);
    for (size_t i = 0; i < source.size(); ++i)
        source.data()[i] = static_cast<uint8_t>(i ^ (i >> 8));
    ASSERT_EQ(Read(second, 0, source.addr(), source.rkey(), 1 << 20, 5), 0);
    const ibv_wc wc = client.send.WaitOne();
    EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
    EXPECT_EQ(wc.opcode, IBV_WC_RDMA_READ);
    EXPECT_EQ(memcmp(second.data(), source.data(), source.size()), 0);
    EXPECT_EQ(first.data()[0], 0);
}

TEST_F(TcpRemoteOps, UnsignaledWritesProduceNoCompletion) {
    Buffer local(*client_pd, 64, kRemoteAll);
    Buffer remote(*server_pd, 64, kRemoteAll);
    local.data()[0] = 1;
    for (int i = 0; i < 5; ++i)
        ASSERT_EQ(Write(local, 0, remote.addr(), remote.rkey(), 8, 10 + i, /*signaled=*/false), 0);
    ASSERT_EQ(Write(local, 0, remote.addr(), remote.rkey(), 8, 20), 0);
    const ibv_wc wc = client.send.WaitOne();
    EXPECT_EQ(wc.wr_id, 20u);
    EXPECT_EQ(client.send.PollNow(), 0);
}

TEST_F(TcpRemoteOps, AtomicWriteStoresEightBytesAndCompletesAsWrite) {
    Buffer remote(*server_pd, 64, kRemoteAll);
    const char value[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    ASSERT_EQ(client.qp().PostAtomicWrite(remote.addr(16), remote.rkey(), value, true, 77), 0);
    const ibv_wc wc = client.send.WaitOne();
    EXPECT_EQ(wc.wr_id, 77u);
    EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
    EXPECT_EQ(wc.opcode, IBV_WC_RDMA_WRITE);
    EXPECT_EQ(memcmp(remote.data() + 16, value, 8), 0);
    EXPECT_EQ(remote.data()[15], 0);
    EXPECT_EQ(remote.data()[24], 0);
}

TEST_F(TcpRemoteOps, AtomicWriteToUnalignedAddressFailsWithInvalidRequest) {
    Buffer remote(*server_pd, 64, kRemoteAll);
    const char value[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    ASSERT_EQ(client.qp().PostAtomicWrite(remote.addr(3), remote.rkey(), value, true, 1), 0);
    EXPECT_EQ(client.send.WaitOne().status, IBV_WC_REM_INV_REQ_ERR);
    ExpectBroken();
}

TEST(TcpMsync, MsyncOfAnonymousMemorySucceeds) {
    // msync is harmless on anonymous mappings; the persistent flush skips it
    // there anyway (a syscall per flush for nothing) and keeps it for shared
    // mappings (see TcpMemoryTable.WriteBackIsNeededOnlyForSharedMappings).
    const size_t size = 2 * static_cast<size_t>(sysconf(_SC_PAGESIZE));
    void *anon = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(anon, MAP_FAILED);
    EXPECT_EQ(msync(anon, size, MS_SYNC), 0);
    munmap(anon, size);
}

TEST_F(TcpRemoteOps, PersistentFlushOnAnonymousMemoryCompletesAsRead) {
    Buffer local(*client_pd, 64, kRemoteAll);
    Buffer remote(*server_pd, 8192, kRemoteAll);
    ASSERT_EQ(Write(local, 0, remote.addr(4000), remote.rkey(), 64, 1, false), 0);
    ASSERT_EQ(client.qp().PostFlush(remote.addr(4000), remote.rkey(), 64, FlushType::kPersistent,
                                    true, 2),
              0);
    const ibv_wc wc = client.send.WaitOne();
    EXPECT_EQ(wc.wr_id, 2u);
    EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
    EXPECT_EQ(wc.opcode, IBV_WC_RDMA_READ);
}

TEST_F(TcpRemoteOps, PersistentFlushOnFileMappingPutsDataInTheFile) {
    char path[] = "/tmp/rpma_tcp_flush_XXXXXX";
    const int fd = mkstemp(path);
    ASSERT_GE(fd, 0);
    unlink(path);
    const size_t size = 16384;
    ASSERT_EQ(ftruncate(fd, size), 0);
    void *mapped = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    ASSERT_NE(mapped, MAP_FAILED);
    std::unique_ptr<provider::MemoryRegion> file_mr;
    ASSERT_EQ(server_pd->RegisterMemory(mapped, size, kRemoteAll, &file_mr), 0);

    Buffer local(*client_pd, 8192, kRemoteAll);
    memset(local.data(), 0x3c, 8192);
    const uint64_t target = reinterpret_cast<uintptr_t>(mapped) + 5000;
    ibv_sge sge = local.Sge(0, 8192);
    ASSERT_EQ(
        client.qp().PostSend(SendWr(IBV_WR_RDMA_WRITE, &sge, 1, target, file_mr->Rkey(), false)),
        0);
    ASSERT_EQ(client.qp().PostFlush(target, file_mr->Rkey(), 8192, FlushType::kPersistent, true, 2),
              0);
    EXPECT_EQ(client.send.WaitOne().status, IBV_WC_SUCCESS);

    std::vector<uint8_t> on_disk(8192);
    ASSERT_EQ(pread(fd, on_disk.data(), on_disk.size(), 5000), 8192);
    EXPECT_EQ(memcmp(on_disk.data(), local.data(), 8192), 0);
    file_mr.reset();
    munmap(mapped, size);
    close(fd);
}

TEST_F(TcpRemoteOps, VisibilityFlushCompletesAfterEarlierWrites) {
    Buffer local(*client_pd, 256, kRemoteAll);
    Buffer remote(*server_pd, 256, kRemoteAll);
    memset(local.data(), 9, 256);
    ASSERT_EQ(Write(local, 0, remote.addr(), remote.rkey(), 256, 1, false), 0);
    ASSERT_EQ(
        client.qp().PostFlush(remote.addr(), remote.rkey(), 256, FlushType::kVisibility, true, 2),
        0);
    EXPECT_EQ(client.send.WaitOne().wr_id, 2u);
    EXPECT_EQ(remote.data()[255], 9);
}

TEST_F(TcpRemoteOps, WriteWithUnknownRkeyFailsWithRemoteAccessError) {
    Buffer local(*client_pd, 64, kRemoteAll);
    Buffer remote(*server_pd, 64, kRemoteAll);
    ibv_sge sge = local.Sge(0, 16);
    ExpectViolation(SendWr(IBV_WR_RDMA_WRITE, &sge, 1, remote.addr(), remote.rkey() ^ 0x5555),
                    IBV_WC_REM_ACCESS_ERR, remote);
}

TEST_F(TcpRemoteOps, WriteBeyondTheRegionFailsWithRemoteAccessError) {
    Buffer local(*client_pd, 64, kRemoteAll);
    Buffer remote(*server_pd, 64, kRemoteAll);
    ibv_sge sge = local.Sge(0, 16);
    ExpectViolation(SendWr(IBV_WR_RDMA_WRITE, &sge, 1, remote.addr(56), remote.rkey()),
                    IBV_WC_REM_ACCESS_ERR, remote);
}

TEST_F(TcpRemoteOps, WriteWhoseEndWrapsAroundFailsWithRemoteAccessError) {
    Buffer local(*client_pd, 64, kRemoteAll);
    Buffer remote(*server_pd, 64, kRemoteAll);
    ibv_sge sge = local.Sge(0, 16);
    ExpectViolation(SendWr(IBV_WR_RDMA_WRITE, &sge, 1, ~uint64_t{0} - 4, remote.rkey()),
                    IBV_WC_REM_ACCESS_ERR, remote);
}

TEST_F(TcpRemoteOps, WriteWithoutRemoteWriteAccessFailsWithRemoteAccessError) {
    Buffer local(*client_pd, 64, kRemoteAll);
    Buffer remote(*server_pd, 64, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
    ibv_sge sge = local.Sge(0, 16);
    ExpectViolation(SendWr(IBV_WR_RDMA_WRITE, &sge, 1, remote.addr(), remote.rkey()),
                    IBV_WC_REM_ACCESS_ERR, remote);
}

TEST_F(TcpRemoteOps, ReadWithoutRemoteReadAccessFailsWithRemoteAccessError) {
    Buffer local(*client_pd, 64, kRemoteAll);
    Buffer remote(*server_pd, 64, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    ibv_sge sge = local.Sge(0, 16);
    ExpectViolation(SendWr(IBV_WR_RDMA_READ, &sge, 1, remote.addr(), remote.rkey()),
                    IBV_WC_REM_ACCESS_ERR, remote);
}

TEST_F(TcpRemoteOps, RegionOfAnotherProtectionDomainIsNotReachable) {
    Buffer local(*client_pd, 64, kRemoteAll);
    // Registered in the client's PD, not the target QP's.
    Buffer remote(*client_pd, 64, kRemoteAll);
    ibv_sge sge = local.Sge(0, 16);
    ExpectViolation(SendWr(IBV_WR_RDMA_WRITE, &sge, 1, remote.addr(), remote.rkey()),
                    IBV_WC_REM_ACCESS_ERR, remote);
}

TEST_F(TcpRemoteOps, DeregisteredRegionRejectsRemoteWrites) {
    Buffer local(*client_pd, 64, kRemoteAll);
    Buffer remote(*server_pd, 64, kRemoteAll);
    const uint32_t stale_rkey = remote.rkey();
    remote.Deregister();
    ASSERT_EQ(Write(local, 0, remote.addr(), stale_rkey, 16, 1), 0);
    EXPECT_EQ(client.send.WaitOne().status, IBV_WC_REM_ACCESS_ERR);
    ExpectBroken();
}

TEST_F(TcpRemoteOps, UnregisteredSourceCompletesWithLocalProtectionError) {
    Buffer remote(*server_pd, 64, kRemoteAll);
    Buffer local(*client_pd, 64, kRemoteAll);
    ibv_sge sge = local.Sge(0, 16);
    sge.lkey ^= 0x1234;
    ASSERT_EQ(client.qp().PostSend(
                  SendWr(IBV_WR_RDMA_WRITE, &sge, 1, remote.addr(), remote.rkey(), false)),
              0);
    const ibv_wc wc = client.send.WaitOne();
    EXPECT_EQ(wc.wr_id, 1u);
    EXPECT_EQ(wc.status, IBV_WC_LOC_PROT_ERR);
    ExpectBroken();
}

TEST_F(TcpRemoteOps, ReadIntoMemoryWithoutLocalWriteCompletesWithLocalProtectionError) {
    Buffer remote(*server_pd, 64, kRemoteAll);
    Buffer local(*client_pd, 64, IBV_ACCESS_REMOTE_READ);
    ASSERT_EQ(Read(local, 0, remote.addr(), remote.rkey(), 16, 4), 0);
    const ibv_wc wc = client.send.WaitOne();
    EXPECT_EQ(wc.wr_id, 4u);
    EXPECT_EQ(wc.status, IBV_WC_LOC_PROT_ERR);
}

TEST_F(TcpRemoteOps, SendQueueFullFailsWithEnomemUntilCompletionsFreeSlots) {
    // sq_size is 16 (PairOptions); the held SEND takes one slot.
    Buffer scratch(*client_pd, 64, kRemoteAll);
    Buffer server_scratch(*server_pd, 64, kRemoteAll);
    Buffer local(*client_pd, 64, kRemoteAll);
    Buffer remote(*server_pd, 64, kRemoteAll);
    HoldTarget(scratch);
    for (int i = 0; i < 15; ++i)
        ASSERT_EQ(Write(local, 0, remote.addr(), remote.rkey(), 8, i, /*signaled=*/i == 14), 0);
    EXPECT_EQ(Write(local, 0, remote.addr(), remote.rkey(), 8, 99, true), ENOMEM);
    ReleaseTarget(server_scratch);
    // The acknowledgement that completes the last write frees every slot.
    EXPECT_EQ(client.send.WaitOne().wr_id, 14u);
    ASSERT_EQ(Write(local, 0, remote.addr(), remote.rkey(), 8, 100, true), 0);
    EXPECT_EQ(client.send.WaitOne().wr_id, 100u);
}

TEST_F(TcpRemoteOps, ZeroLengthWriteAndReadComplete) {
    Buffer remote(*server_pd, 64, kRemoteAll);
    ASSERT_EQ(
        client.qp().PostSend(SendWr(IBV_WR_RDMA_WRITE, nullptr, 1, remote.addr(), remote.rkey())),
        0);
    ASSERT_EQ(
        client.qp().PostSend(SendWr(IBV_WR_RDMA_READ, nullptr, 2, remote.addr(), remote.rkey())),
        0);
    auto wcs = client.send.Wait(2);
    ASSERT_EQ(wcs.size(), 2u);
    EXPECT_EQ(wcs[0].status, IBV_WC_SUCCESS);
    EXPECT_EQ(wcs[1].status, IBV_WC_SUCCESS);
}

}  // namespace
}  // namespace rpma::provider::tcp::testing
