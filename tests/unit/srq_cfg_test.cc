#include <gtest/gtest.h>

#include <cstdint>

#include "librpma.h"

namespace {

class SrqCfg : public ::testing::Test {
  protected:
    void SetUp() override { ASSERT_EQ(rpma_srq_cfg_new(&cfg_), 0); }
    void TearDown() override { EXPECT_EQ(rpma_srq_cfg_delete(&cfg_), 0); }
    rpma_srq_cfg *cfg_ = nullptr;
};

TEST(SrqCfgNewDelete, NullPointersAreInvalidNullObjectIsANoOp) {
    EXPECT_EQ(rpma_srq_cfg_new(nullptr), RPMA_E_INVAL);
    EXPECT_EQ(rpma_srq_cfg_delete(nullptr), RPMA_E_INVAL);
    rpma_srq_cfg *cfg = nullptr;
    EXPECT_EQ(rpma_srq_cfg_delete(&cfg), 0);
}

TEST_F(SrqCfg, DefaultsMatchLibrpma) {
    uint32_t value = 0;
    ASSERT_EQ(rpma_srq_cfg_get_rq_size(cfg_, &value), 0);
    EXPECT_EQ(value, 20u);
    ASSERT_EQ(rpma_srq_cfg_get_rcq_size(cfg_, &value), 0);
    EXPECT_EQ(value, 20u);
}

TEST_F(SrqCfg, SizesRoundTrip) {
    uint32_t value = 0;
    ASSERT_EQ(rpma_srq_cfg_set_rq_size(cfg_, 4096), 0);
    ASSERT_EQ(rpma_srq_cfg_get_rq_size(cfg_, &value), 0);
    EXPECT_EQ(value, 4096u);
    ASSERT_EQ(rpma_srq_cfg_set_rcq_size(cfg_, 0), 0);
    ASSERT_EQ(rpma_srq_cfg_get_rcq_size(cfg_, &value), 0);
    EXPECT_EQ(value, 0u);
}

TEST_F(SrqCfg, NullArgumentsAreInvalid) {
    uint32_t value;
    EXPECT_EQ(rpma_srq_cfg_set_rq_size(nullptr, 1), RPMA_E_INVAL);
    EXPECT_EQ(rpma_srq_cfg_get_rq_size(nullptr, &value), RPMA_E_INVAL);
    EXPECT_EQ(rpma_srq_cfg_get_rq_size(cfg_, nullptr), RPMA_E_INVAL);
    EXPECT_EQ(rpma_srq_cfg_set_rcq_size(nullptr, 1), RPMA_E_INVAL);
    EXPECT_EQ(rpma_srq_cfg_get_rcq_size(nullptr, &value), RPMA_E_INVAL);
    EXPECT_EQ(rpma_srq_cfg_get_rcq_size(cfg_, nullptr), RPMA_E_INVAL);
}

}  // namespace
