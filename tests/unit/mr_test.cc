#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "connected_pair.h"
#include "librpma.h"

namespace {

class Mr : public ::testing::Test {
  protected:
    void SetUp() override { peer_ = rpma_test::NewPeer(); }
    void TearDown() override { EXPECT_EQ(rpma_peer_delete(&peer_), 0); }
    rpma_peer *peer_ = nullptr;
    std::vector<char> buffer_ = std::vector<char>(8192, 'x');
};

TEST_F(Mr, RegisterQueryAndDeregister) {
    rpma_mr_local *mr = nullptr;
    ASSERT_EQ(rpma_mr_reg(peer_, buffer_.data(), buffer_.size(), RPMA_MR_USAGE_READ_SRC, &mr), 0);
    void *ptr = nullptr;
    size_t size = 0;
    ASSERT_EQ(rpma_mr_get_ptr(mr, &ptr), 0);
    ASSERT_EQ(rpma_mr_get_size(mr, &size), 0);
    EXPECT_EQ(ptr, buffer_.data());
    EXPECT_EQ(size, buffer_.size());
    ASSERT_EQ(rpma_mr_dereg(&mr), 0);
    EXPECT_EQ(mr, nullptr);
    EXPECT_EQ(rpma_mr_dereg(&mr), 0) << "deregistering NULL is a no-op";
}

TEST_F(Mr, InvalidRegistrationsAreRejected) {
    rpma_mr_local *mr = nullptr;
    char *p = buffer_.data();
    EXPECT_EQ(rpma_mr_reg(nullptr, p, 64, RPMA_MR_USAGE_READ_SRC, &mr), RPMA_E_INVAL);
    EXPECT_EQ(rpma_mr_reg(peer_, nullptr, 64, RPMA_MR_USAGE_READ_SRC, &mr), RPMA_E_INVAL);
    EXPECT_EQ(rpma_mr_reg(peer_, p, 0, RPMA_MR_USAGE_READ_SRC, &mr), RPMA_E_INVAL);
    EXPECT_EQ(rpma_mr_reg(peer_, p, 64, 0, &mr), RPMA_E_INVAL);
    EXPECT_EQ(rpma_mr_reg(peer_, p, 64, 1 << 8, &mr), RPMA_E_INVAL);
    EXPECT_EQ(rpma_mr_reg(peer_, p, 64, RPMA_MR_USAGE_READ_SRC, nullptr), RPMA_E_INVAL);
    EXPECT_EQ(mr, nullptr);
    EXPECT_EQ(rpma_mr_dereg(nullptr), RPMA_E_INVAL);
}

TEST_F(Mr, GettersRejectNullArguments) {
    rpma_mr_local *mr = nullptr;
    ASSERT_EQ(rpma_mr_reg(peer_, buffer_.data(), 64, RPMA_MR_USAGE_WRITE_DST, &mr), 0);
    void *ptr;
    size_t size;
    char desc[21];
    EXPECT_EQ(rpma_mr_get_ptr(nullptr, &ptr), RPMA_E_INVAL);
    EXPECT_EQ(rpma_mr_get_ptr(mr, nullptr), RPMA_E_INVAL);
    EXPECT_EQ(rpma_mr_get_size(nullptr, &size), RPMA_E_INVAL);
    EXPECT_EQ(rpma_mr_get_size(mr, nullptr), RPMA_E_INVAL);
    EXPECT_EQ(rpma_mr_get_descriptor(nullptr, desc), RPMA_E_INVAL);
    EXPECT_EQ(rpma_mr_get_descriptor(mr, nullptr), RPMA_E_INVAL);
    EXPECT_EQ(rpma_mr_get_descriptor_size(nullptr, &size), RPMA_E_INVAL);
    EXPECT_EQ(rpma_mr_get_descriptor_size(mr, nullptr), RPMA_E_INVAL);
    ASSERT_EQ(rpma_mr_dereg(&mr), 0);
}

TEST_F(Mr, DescriptorRoundTripsThroughTheRemoteView) {
    int usage = RPMA_MR_USAGE_WRITE_DST | RPMA_MR_USAGE_FLUSH_TYPE_PERSISTENT;
    rpma_mr_local *mr = nullptr;
    ASSERT_EQ(rpma_mr_reg(peer_, buffer_.data(), buffer_.size(), usage, &mr), 0);
    size_t desc_size = 0;
    ASSERT_EQ(rpma_mr_get_descriptor_size(mr, &desc_size), 0);
    ASSERT_EQ(desc_size, 21u);
    uint8_t desc[21];
    ASSERT_EQ(rpma_mr_get_descriptor(mr, desc), 0);

    uint64_t addr = 0;
    for (int i = 7; i >= 0; --i)
        addr = (addr << 8) | desc[i];
    EXPECT_EQ(addr, reinterpret_cast<uintptr_t>(buffer_.data())) << "little-endian address";
    EXPECT_EQ(desc[20], usage);

    rpma_mr_remote *remote = nullptr;
    ASSERT_EQ(rpma_mr_remote_from_descriptor(desc, sizeof(desc), &remote), 0);
    size_t size = 0;
    int flush_type = 0;
    ASSERT_EQ(rpma_mr_remote_get_size(remote, &size), 0);
    ASSERT_EQ(rpma_mr_remote_get_flush_type(remote, &flush_type), 0);
    EXPECT_EQ(size, buffer_.size());
    EXPECT_EQ(flush_type, RPMA_MR_USAGE_FLUSH_TYPE_PERSISTENT);
    ASSERT_EQ(rpma_mr_remote_delete(&remote), 0);
    ASSERT_EQ(rpma_mr_dereg(&mr), 0);
}

TEST_F(Mr, RkeysDifferBetweenRegistrations) {
    rpma_mr_local *a = nullptr;
    rpma_mr_local *b = nullptr;
    ASSERT_EQ(rpma_mr_reg(peer_, buffer_.data(), 64, RPMA_MR_USAGE_READ_SRC, &a), 0);
    ASSERT_EQ(rpma_mr_reg(peer_, buffer_.data(), 64, RPMA_MR_USAGE_READ_SRC, &b), 0);
    uint8_t da[21], db[21];
    ASSERT_EQ(rpma_mr_get_descriptor(a, da), 0);
    ASSERT_EQ(rpma_mr_get_descriptor(b, db), 0);
    EXPECT_NE(memcmp(da + 16, db + 16, 4), 0);
    ASSERT_EQ(rpma_mr_dereg(&a), 0);
    ASSERT_EQ(rpma_mr_dereg(&b), 0);
}

// Ranges are checked before the provider sees them, on every provider.
TEST_F(Mr, AdviseRejectsRangesOutsideTheRegion) {
    rpma_mr_local *mr = nullptr;
    ASSERT_EQ(rpma_mr_reg(peer_, buffer_.data(), buffer_.size(), RPMA_MR_USAGE_WRITE_DST, &mr), 0);
    EXPECT_EQ(rpma_mr_advise(nullptr, 0, 1, IBV_ADVISE_MR_ADVICE_PREFETCH, 0), RPMA_E_INVAL);
    EXPECT_EQ(rpma_mr_advise(mr, 4096, 4097, IBV_ADVISE_MR_ADVICE_PREFETCH, 0), RPMA_E_INVAL);
    EXPECT_EQ(rpma_mr_advise(mr, SIZE_MAX, 2, IBV_ADVISE_MR_ADVICE_PREFETCH, 0), RPMA_E_INVAL);
    ASSERT_EQ(rpma_mr_dereg(&mr), 0);
}

// The tcp provider takes valid advice and rejects the rest. On verbs it is
// the device's ibv_advise_mr, mapped as librpma maps it: Soft-RoCE has none
// (EOPNOTSUPP), so everything in range is RPMA_E_NOSUPP there; an RNIC that
// implements it (mlx5) behaves as tcp does.
TEST_F(Mr, AdviseChecksAdviceAndFlagsAsTheDeviceDoes) {
    const bool supported = !rpma_test::OnSoftRoce();
    rpma_mr_local *mr = nullptr;
    ASSERT_EQ(rpma_mr_reg(peer_, buffer_.data(), buffer_.size(), RPMA_MR_USAGE_WRITE_DST, &mr), 0);
    EXPECT_EQ(rpma_mr_advise(mr, 0, buffer_.size(), IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE,
                             IBV_ADVISE_MR_FLAG_FLUSH),
              supported ? 0 : RPMA_E_NOSUPP);
    EXPECT_EQ(rpma_mr_advise(mr, 4096, 4096, IBV_ADVISE_MR_ADVICE_PREFETCH, 0),
              supported ? 0 : RPMA_E_NOSUPP);
    EXPECT_EQ(rpma_mr_advise(mr, 0, 1, 77, 0), supported ? RPMA_E_INVAL : RPMA_E_NOSUPP);
    EXPECT_EQ(rpma_mr_advise(mr, 0, 1, IBV_ADVISE_MR_ADVICE_PREFETCH, 0x80),
              supported ? RPMA_E_INVAL : RPMA_E_NOSUPP);
    ASSERT_EQ(rpma_mr_dereg(&mr), 0);
}

TEST_F(Mr, PrefetchForWritingNeedsAWritableRegion) {
    rpma_mr_local *mr = nullptr;
    ASSERT_EQ(rpma_mr_reg(peer_, buffer_.data(), 64, RPMA_MR_USAGE_READ_SRC, &mr), 0);
    EXPECT_EQ(rpma_mr_advise(mr, 0, 64, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE, 0), RPMA_E_INVAL);
    ASSERT_EQ(rpma_mr_dereg(&mr), 0);
}

}  // namespace
