// One-sided operations longer than one tcp wire message (2 GiB) through the
// librpma API: each is one work request and one completion, as on verbs,
// and its bytes land where they belong at both ends. The 3 GiB regions are
// sparse: a file nothing wrote to, or mostly one small buffer mapped over
// and over, so the tests cost little memory.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "connected_pair.h"
#include "librpma.h"
#include "rpma_ext.h"

namespace {

constexpr size_t kGiB = size_t{1} << 30;
constexpr size_t kRegionSize = 3 * kGiB;
constexpr size_t kPage = 4096;

// 3 GiB of address space in units of kUnit, where the units holding the
// offsets a test looks at (the ends and around the 2 GiB message boundary)
// are memory of their own and every other unit maps one shared buffer.
class SparseBuffer {
  public:
    static constexpr size_t kUnit = size_t{16} << 20;

    SparseBuffer() {
        void *reserved = mmap(nullptr, kRegionSize, PROT_NONE,
                              MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        EXPECT_NE(reserved, MAP_FAILED);
        data_ = static_cast<char *>(reserved);
        const int shared = memfd_create("large_ops_shared", MFD_CLOEXEC);
        EXPECT_GE(shared, 0);
        EXPECT_EQ(ftruncate(shared, kUnit), 0);
        for (size_t at = 0; at < kRegionSize; at += kUnit) {
            const bool own =
                at == 0 || at + kUnit == kRegionSize || at + kUnit == 2 * kGiB || at == 2 * kGiB;
            int fd = shared;
            if (own) {
                fd = memfd_create("large_ops_own", MFD_CLOEXEC);
                EXPECT_EQ(ftruncate(fd, kUnit), 0);
            }
            EXPECT_NE(mmap(data_ + at, kUnit, PROT_READ | PROT_WRITE,
                           MAP_SHARED | MAP_FIXED | MAP_POPULATE, fd, 0),
                      MAP_FAILED);
            if (own)
                close(fd);
        }
        close(shared);
    }
    ~SparseBuffer() { munmap(data_, kRegionSize); }
    SparseBuffer(const SparseBuffer &) = delete;
    SparseBuffer &operator=(const SparseBuffer &) = delete;

    char *data() { return data_; }

  private:
    char *data_ = nullptr;
};

// Just over one message, so that the transfers stay short: its last part
// is one unit.
constexpr size_t kTransfer = 2 * kGiB + SparseBuffer::kUnit;
// The offsets looked at: the first and last page of the transfer, and a
// page across the 2 GiB message boundary.
const size_t kProbes[] = {0, 2 * kGiB - kPage / 2, kTransfer - kPage};

void FillProbes(char *data, char seed) {
    for (size_t i = 0; i < std::size(kProbes); ++i)
        for (size_t k = 0; k < kPage; ++k)
            data[kProbes[i] + k] = static_cast<char>(seed + i * 7 + k % 251);
}

::testing::AssertionResult ProbesHold(const char *data, char seed) {
    for (size_t i = 0; i < std::size(kProbes); ++i)
        for (size_t k = 0; k < kPage; ++k)
            if (data[kProbes[i] + k] != static_cast<char>(seed + i * 7 + k % 251))
                return ::testing::AssertionFailure()
                       << "byte " << kProbes[i] + k << " is not the one written";
    return ::testing::AssertionSuccess();
}

class LargeOps : public rpma_test::ConnectedPair {
  protected:
    void Expose(void *remote, int usage) {
        ASSERT_EQ(rpma_mr_reg(peer_, remote, kRegionSize, usage, &remote_mr_), 0);
        uint8_t desc[21];
        ASSERT_EQ(rpma_mr_get_descriptor(remote_mr_, desc), 0);
        ASSERT_EQ(rpma_mr_remote_from_descriptor(desc, sizeof(desc), &dst_), 0);
    }
    void TearDown() override {
        if (dst_ != nullptr) {
            EXPECT_EQ(rpma_mr_remote_delete(&dst_), 0);
        }
        if (local_mr_ != nullptr) {
            EXPECT_EQ(rpma_mr_dereg(&local_mr_), 0);
        }
        if (remote_mr_ != nullptr) {
            EXPECT_EQ(rpma_mr_dereg(&remote_mr_), 0);
        }
        ConnectedPair::TearDown();
    }
    // The one completion of the WR posted with `context`, successful, and
    // no other after it.
    void ExpectOneCompletion(ibv_wc_opcode opcode, const void *context) {
        ibv_wc wc = NextCompletion(client_);
        EXPECT_EQ(wc.status, IBV_WC_SUCCESS) << ibv_wc_status_str(wc.status);
        EXPECT_EQ(wc.opcode, opcode);
        EXPECT_EQ(wc.wr_id, reinterpret_cast<uintptr_t>(context));
        rpma_cq *cq = nullptr;
        ASSERT_EQ(rpma_conn_get_cq(client_, &cq), 0);
        EXPECT_EQ(rpma_cq_get_wc(cq, 1, &wc, nullptr), RPMA_E_NO_COMPLETION)
            << "one work request, one completion";
    }
    void ApplyDirectWriteToPmem() {
        rpma_peer_cfg *pcfg = nullptr;
        ASSERT_EQ(rpma_peer_cfg_new(&pcfg), 0);
        ASSERT_EQ(rpma_peer_cfg_set_direct_write_to_pmem(pcfg, true), 0);
        ASSERT_EQ(rpma_conn_apply_remote_peer_cfg(client_, pcfg), 0);
        ASSERT_EQ(rpma_peer_cfg_delete(&pcfg), 0);
    }

    rpma_mr_local *remote_mr_ = nullptr;
    rpma_mr_local *local_mr_ = nullptr;
    rpma_mr_remote *dst_ = nullptr;
};

// As rpmad serves a region: a shared mapping of a sparse file, made durable
// by msync. The flush covers more than one message and completes once, after
// every part is durable: the write at the far end, posted before it, is in
// the file when the flush's completion comes.
TEST_F(LargeOps, PersistentFlushLongerThanOneMessageCompletesOnceWhenAllIsDurable) {
    const char *tmp = getenv("TEST_TMPDIR");
    std::string path = std::string(tmp != nullptr ? tmp : "/tmp") + "/large_flush_XXXXXX";
    const int fd = mkstemp(path.data());
    ASSERT_GE(fd, 0);
    unlink(path.c_str());
    ASSERT_EQ(ftruncate(fd, kRegionSize), 0);
    void *mapped = mmap(nullptr, kRegionSize, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    ASSERT_NE(mapped, MAP_FAILED);
    ASSERT_NO_FATAL_FAILURE(Expose(mapped, RPMA_MR_USAGE_WRITE_DST | RPMA_MR_USAGE_READ_SRC |
                                               RPMA_MR_USAGE_FLUSH_TYPE_PERSISTENT));
    ASSERT_NO_FATAL_FAILURE(ApplyDirectWriteToPmem());
    char word[8] = {'f', 'a', 'r', ' ', 'e', 'n', 'd', '!'};
    std::vector<char> local(kPage);
    memcpy(local.data(), word, sizeof(word));
    ASSERT_EQ(rpma_mr_reg(peer_, local.data(), local.size(), RPMA_MR_USAGE_WRITE_SRC, &local_mr_),
              0);

    const size_t length = 2 * kGiB + kPage;
    ASSERT_EQ(rpma_write(client_, dst_, length - sizeof(word), local_mr_, 0, sizeof(word),
                         RPMA_F_COMPLETION_ON_ERROR, nullptr),
              0);
    int context = 0;
    ASSERT_EQ(rpma_flush(client_, dst_, 0, length, RPMA_FLUSH_TYPE_PERSISTENT,
                         RPMA_F_COMPLETION_ALWAYS, &context),
              0)
        << "errno " << strerror(errno);
    ExpectOneCompletion(IBV_WC_RDMA_READ, &context);

    rpma_ext_mr_remote_stats stats{};
    ASSERT_EQ(rpma_ext_mr_get_remote_stats(remote_mr_, &stats), 0);
    EXPECT_EQ(stats.bytes_persisted, length);
    char landed[sizeof(word)] = {};
    ASSERT_EQ(pread(fd, landed, sizeof(landed), static_cast<off_t>(length - sizeof(word))),
              static_cast<ssize_t>(sizeof(landed)));
    EXPECT_EQ(memcmp(landed, word, sizeof(word)), 0);

    EXPECT_EQ(rpma_mr_dereg(&remote_mr_), 0);
    munmap(mapped, kRegionSize);
    close(fd);
}

// A write and a read of more than 2 GiB from registered buffers: one
// completion each, and the bytes at both ends and across the 2 GiB message
// boundary are those of the source.
TEST_F(LargeOps, WriteAndReadLongerThanOneMessageCompleteOnceWithEveryByteInPlace) {
    SparseBuffer remote, source, destination;
    ASSERT_NO_FATAL_FAILURE(
        Expose(remote.data(), RPMA_MR_USAGE_WRITE_DST | RPMA_MR_USAGE_READ_SRC));
    FillProbes(source.data(), 'a');
    ASSERT_EQ(rpma_mr_reg(peer_, source.data(), kRegionSize, RPMA_MR_USAGE_WRITE_SRC, &local_mr_),
              0);
    int write_context = 0;
    ASSERT_EQ(rpma_write(client_, dst_, 0, local_mr_, 0, kTransfer, RPMA_F_COMPLETION_ALWAYS,
                         &write_context),
              0)
        << "errno " << strerror(errno);
    ExpectOneCompletion(IBV_WC_RDMA_WRITE, &write_context);
    EXPECT_TRUE(ProbesHold(remote.data(), 'a'));
    ASSERT_EQ(rpma_mr_dereg(&local_mr_), 0);

    ASSERT_EQ(
        rpma_mr_reg(peer_, destination.data(), kRegionSize, RPMA_MR_USAGE_READ_DST, &local_mr_), 0);
    int read_context = 0;
    ASSERT_EQ(rpma_read(client_, local_mr_, 0, dst_, 0, kTransfer, RPMA_F_COMPLETION_ALWAYS,
                        &read_context),
              0)
        << "errno " << strerror(errno);
    ExpectOneCompletion(IBV_WC_RDMA_READ, &read_context);
    EXPECT_TRUE(ProbesHold(destination.data(), 'a'));
    // Before the buffers go.
    EXPECT_EQ(rpma_mr_dereg(&local_mr_), 0);
    EXPECT_EQ(rpma_mr_dereg(&remote_mr_), 0);
}

// A post the provider refuses says why in errno, as RPMA_E_PROVIDER
// promises (it said whatever errno an earlier call had left).
TEST_F(LargeOps, RefusedPostLeavesTheProvidersErrorInErrno) {
    std::vector<char> remote(kPage);
    ASSERT_EQ(
        rpma_mr_reg(peer_, remote.data(), remote.size(),
                    RPMA_MR_USAGE_WRITE_DST | RPMA_MR_USAGE_FLUSH_TYPE_VISIBILITY, &remote_mr_),
        0);
    uint8_t desc[21];
    ASSERT_EQ(rpma_mr_get_descriptor(remote_mr_, desc), 0);
    ASSERT_EQ(rpma_mr_remote_from_descriptor(desc, sizeof(desc), &dst_), 0);
    errno = EINPROGRESS;
    // Longer than any region can be: the tcp provider refuses it at once.
    EXPECT_EQ(rpma_flush(client_, dst_, 0, size_t{1} << 60, RPMA_FLUSH_TYPE_VISIBILITY,
                         RPMA_F_COMPLETION_ALWAYS, nullptr),
              RPMA_E_PROVIDER);
    EXPECT_EQ(errno, EINVAL) << strerror(errno);
}

}  // namespace
