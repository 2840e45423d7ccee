#include <gtest/gtest.h>

#include <cstdint>

#include "librpma.h"

namespace {

class PeerCfg : public ::testing::Test {
  protected:
    void SetUp() override { ASSERT_EQ(rpma_peer_cfg_new(&cfg_), 0); }
    void TearDown() override { EXPECT_EQ(rpma_peer_cfg_delete(&cfg_), 0); }
    rpma_peer_cfg *cfg_ = nullptr;
};

TEST(PeerCfgNew, NullPointerIsInvalid) {
    EXPECT_EQ(rpma_peer_cfg_new(nullptr), RPMA_E_INVAL);
}

TEST(PeerCfgDelete, NullPointerIsInvalid) {
    EXPECT_EQ(rpma_peer_cfg_delete(nullptr), RPMA_E_INVAL);
}

TEST(PeerCfgDelete, NullObjectIsANoOp) {
    rpma_peer_cfg *cfg = nullptr;
    EXPECT_EQ(rpma_peer_cfg_delete(&cfg), 0);
}

TEST_F(PeerCfg, DeleteClearsThePointer) {
    ASSERT_EQ(rpma_peer_cfg_delete(&cfg_), 0);
    EXPECT_EQ(cfg_, nullptr);
}

TEST_F(PeerCfg, DirectWriteToPmemIsOffByDefault) {
    bool supported = true;
    ASSERT_EQ(rpma_peer_cfg_get_direct_write_to_pmem(cfg_, &supported), 0);
    EXPECT_FALSE(supported);
}

TEST_F(PeerCfg, SetDirectWriteToPmemIsReadBack) {
    bool supported = false;
    ASSERT_EQ(rpma_peer_cfg_set_direct_write_to_pmem(cfg_, true), 0);
    ASSERT_EQ(rpma_peer_cfg_get_direct_write_to_pmem(cfg_, &supported), 0);
    EXPECT_TRUE(supported);
    ASSERT_EQ(rpma_peer_cfg_set_direct_write_to_pmem(cfg_, false), 0);
    ASSERT_EQ(rpma_peer_cfg_get_direct_write_to_pmem(cfg_, &supported), 0);
    EXPECT_FALSE(supported);
}

TEST_F(PeerCfg, NullArgumentsAreInvalid) {
    bool supported;
    size_t size;
    uint8_t desc;
    EXPECT_EQ(rpma_peer_cfg_set_direct_write_to_pmem(nullptr, true), RPMA_E_INVAL);
    EXPECT_EQ(rpma_peer_cfg_get_direct_write_to_pmem(nullptr, &supported), RPMA_E_INVAL);
    EXPECT_EQ(rpma_peer_cfg_get_direct_write_to_pmem(cfg_, nullptr), RPMA_E_INVAL);
    EXPECT_EQ(rpma_peer_cfg_get_descriptor(nullptr, &desc), RPMA_E_INVAL);
    EXPECT_EQ(rpma_peer_cfg_get_descriptor(cfg_, nullptr), RPMA_E_INVAL);
    EXPECT_EQ(rpma_peer_cfg_get_descriptor_size(nullptr, &size), RPMA_E_INVAL);
    EXPECT_EQ(rpma_peer_cfg_get_descriptor_size(cfg_, nullptr), RPMA_E_INVAL);
}

TEST_F(PeerCfg, DescriptorIsOneByteHoldingTheFlag) {
    size_t size = 0;
    ASSERT_EQ(rpma_peer_cfg_get_descriptor_size(cfg_, &size), 0);
    EXPECT_EQ(size, 1u);

    uint8_t desc[2] = {0xAA, 0xBB};
    ASSERT_EQ(rpma_peer_cfg_get_descriptor(cfg_, desc), 0);
    EXPECT_EQ(desc[0], 0);
    EXPECT_EQ(desc[1], 0xBB) << "wrote past the 1-byte descriptor";

    ASSERT_EQ(rpma_peer_cfg_set_direct_write_to_pmem(cfg_, true), 0);
    ASSERT_EQ(rpma_peer_cfg_get_descriptor(cfg_, desc), 0);
    EXPECT_EQ(desc[0], 1);
}

TEST(PeerCfgFromDescriptor, RoundTripsTheFlag) {
    for (uint8_t byte : {0, 1}) {
        rpma_peer_cfg *cfg = nullptr;
        ASSERT_EQ(rpma_peer_cfg_from_descriptor(&byte, 1, &cfg), 0);
        bool supported = !byte;
        ASSERT_EQ(rpma_peer_cfg_get_direct_write_to_pmem(cfg, &supported), 0);
        EXPECT_EQ(supported, byte == 1);
        uint8_t out = 0xFF;
        ASSERT_EQ(rpma_peer_cfg_get_descriptor(cfg, &out), 0);
        EXPECT_EQ(out, byte);
        ASSERT_EQ(rpma_peer_cfg_delete(&cfg), 0);
    }
}

TEST(PeerCfgFromDescriptor, AnyNonZeroByteMeansSupportedAndReencodesAsOne) {
    uint8_t byte = 7;
    rpma_peer_cfg *cfg = nullptr;
    ASSERT_EQ(rpma_peer_cfg_from_descriptor(&byte, 1, &cfg), 0);
    uint8_t out = 0;
    ASSERT_EQ(rpma_peer_cfg_get_descriptor(cfg, &out), 0);
    EXPECT_EQ(out, 1);
    ASSERT_EQ(rpma_peer_cfg_delete(&cfg), 0);
}

TEST(PeerCfgFromDescriptor, InvalidInputIsRejectedAndOutputUntouched) {
    uint8_t byte = 1;
    rpma_peer_cfg *sentinel = reinterpret_cast<rpma_peer_cfg *>(0x1);
    rpma_peer_cfg *cfg = sentinel;
    EXPECT_EQ(rpma_peer_cfg_from_descriptor(nullptr, 1, &cfg), RPMA_E_INVAL);
    EXPECT_EQ(rpma_peer_cfg_from_descriptor(&byte, 1, nullptr), RPMA_E_INVAL);
    EXPECT_EQ(rpma_peer_cfg_from_descriptor(&byte, 0, &cfg), RPMA_E_INVAL);
    EXPECT_EQ(cfg, sentinel);
}

}  // namespace
