#include <gtest/gtest.h>

#include <cstdint>
#include <thread>

#include "librpma.h"

namespace {

class ConnCfg : public ::testing::Test {
  protected:
    void SetUp() override { ASSERT_EQ(rpma_conn_cfg_new(&cfg_), 0); }
    void TearDown() override { EXPECT_EQ(rpma_conn_cfg_delete(&cfg_), 0); }
    rpma_conn_cfg *cfg_ = nullptr;
};

using SetSize = int (*)(rpma_conn_cfg *, uint32_t);
using GetSize = int (*)(const rpma_conn_cfg *, uint32_t *);

struct SizeField {
    const char *name;
    SetSize set;
    GetSize get;
    uint32_t default_value;
};

const SizeField kSizeFields[] = {
    {"cq_size", rpma_conn_cfg_set_cq_size, rpma_conn_cfg_get_cq_size, 10},
    {"rcq_size", rpma_conn_cfg_set_rcq_size, rpma_conn_cfg_get_rcq_size, 0},
    {"sq_size", rpma_conn_cfg_set_sq_size, rpma_conn_cfg_get_sq_size, 10},
    {"rq_size", rpma_conn_cfg_set_rq_size, rpma_conn_cfg_get_rq_size, 10},
};

TEST(ConnCfgNew, NullPointerIsInvalid) {
    EXPECT_EQ(rpma_conn_cfg_new(nullptr), RPMA_E_INVAL);
}

TEST(ConnCfgDelete, NullPointerIsInvalidNullObjectIsANoOp) {
    EXPECT_EQ(rpma_conn_cfg_delete(nullptr), RPMA_E_INVAL);
    rpma_conn_cfg *cfg = nullptr;
    EXPECT_EQ(rpma_conn_cfg_delete(&cfg), 0);
}

TEST_F(ConnCfg, DefaultsMatchLibrpma) {
    int timeout = 0;
    ASSERT_EQ(rpma_conn_cfg_get_timeout(cfg_, &timeout), 0);
    EXPECT_EQ(timeout, RPMA_DEFAULT_TIMEOUT_MS);
    for (const SizeField &field : kSizeFields) {
        uint32_t value = 12345;
        ASSERT_EQ(field.get(cfg_, &value), 0) << field.name;
        EXPECT_EQ(value, field.default_value) << field.name;
    }
    bool shared = true;
    ASSERT_EQ(rpma_conn_cfg_get_compl_channel(cfg_, &shared), 0);
    EXPECT_FALSE(shared);
    rpma_srq *srq = reinterpret_cast<rpma_srq *>(0x1);
    ASSERT_EQ(rpma_conn_cfg_get_srq(cfg_, &srq), 0);
    EXPECT_EQ(srq, nullptr);
}

TEST_F(ConnCfg, SizesRoundTripOverTheWholeRange) {
    for (const SizeField &field : kSizeFields) {
        for (uint32_t value : {0u, 1u, 77u, UINT32_MAX}) {
            ASSERT_EQ(field.set(cfg_, value), 0) << field.name;
            uint32_t read = value + 1;
            ASSERT_EQ(field.get(cfg_, &read), 0) << field.name;
            EXPECT_EQ(read, value) << field.name;
        }
    }
}

TEST_F(ConnCfg, SizeAccessorsRejectNullArguments) {
    for (const SizeField &field : kSizeFields) {
        uint32_t value;
        EXPECT_EQ(field.set(nullptr, 1), RPMA_E_INVAL) << field.name;
        EXPECT_EQ(field.get(nullptr, &value), RPMA_E_INVAL) << field.name;
        EXPECT_EQ(field.get(cfg_, nullptr), RPMA_E_INVAL) << field.name;
    }
}

TEST_F(ConnCfg, TimeoutRoundTripsAndNegativeIsInvalid) {
    int timeout = 0;
    ASSERT_EQ(rpma_conn_cfg_set_timeout(cfg_, 0), 0);
    ASSERT_EQ(rpma_conn_cfg_get_timeout(cfg_, &timeout), 0);
    EXPECT_EQ(timeout, 0);
    ASSERT_EQ(rpma_conn_cfg_set_timeout(cfg_, 250), 0);
    EXPECT_EQ(rpma_conn_cfg_set_timeout(cfg_, -1), RPMA_E_INVAL);
    ASSERT_EQ(rpma_conn_cfg_get_timeout(cfg_, &timeout), 0);
    EXPECT_EQ(timeout, 250) << "a rejected value must not change the configuration";
    EXPECT_EQ(rpma_conn_cfg_set_timeout(nullptr, 10), RPMA_E_INVAL);
    EXPECT_EQ(rpma_conn_cfg_get_timeout(nullptr, &timeout), RPMA_E_INVAL);
    EXPECT_EQ(rpma_conn_cfg_get_timeout(cfg_, nullptr), RPMA_E_INVAL);
}

TEST_F(ConnCfg, ComplChannelRoundTrips) {
    bool shared = false;
    ASSERT_EQ(rpma_conn_cfg_set_compl_channel(cfg_, true), 0);
    ASSERT_EQ(rpma_conn_cfg_get_compl_channel(cfg_, &shared), 0);
    EXPECT_TRUE(shared);
    EXPECT_EQ(rpma_conn_cfg_set_compl_channel(nullptr, true), RPMA_E_INVAL);
    EXPECT_EQ(rpma_conn_cfg_get_compl_channel(nullptr, &shared), RPMA_E_INVAL);
    EXPECT_EQ(rpma_conn_cfg_get_compl_channel(cfg_, nullptr), RPMA_E_INVAL);
}

TEST_F(ConnCfg, SrqRoundTripsAndNullIsRejected) {
    // The configuration only stores the pointer; it never dereferences it.
    auto *srq = reinterpret_cast<rpma_srq *>(0x1000);
    rpma_srq *read = nullptr;
    ASSERT_EQ(rpma_conn_cfg_set_srq(cfg_, srq), 0);
    ASSERT_EQ(rpma_conn_cfg_get_srq(cfg_, &read), 0);
    EXPECT_EQ(read, srq);
    EXPECT_EQ(rpma_conn_cfg_set_srq(cfg_, nullptr), RPMA_E_INVAL);
    ASSERT_EQ(rpma_conn_cfg_get_srq(cfg_, &read), 0);
    EXPECT_EQ(read, srq) << "a rejected value must not change the configuration";
    EXPECT_EQ(rpma_conn_cfg_set_srq(nullptr, srq), RPMA_E_INVAL);
    EXPECT_EQ(rpma_conn_cfg_get_srq(nullptr, &read), RPMA_E_INVAL);
    EXPECT_EQ(rpma_conn_cfg_get_srq(cfg_, nullptr), RPMA_E_INVAL);
}

TEST_F(ConnCfg, ConcurrentReadersSeeOnlyValuesThatWereSet) {
    // librpma documents the configuration as safe to read while another
    // thread changes it; a torn or stale-garbage value would show up here.
    std::thread writer([this] {
        for (uint32_t i = 0; i < 20000; ++i)
            rpma_conn_cfg_set_sq_size(cfg_, (i % 2) ? 0xFFFF0000u : 0x0000FFFFu);
    });
    for (int i = 0; i < 20000; ++i) {
        uint32_t value = 0;
        ASSERT_EQ(rpma_conn_cfg_get_sq_size(cfg_, &value), 0);
        ASSERT_TRUE(value == 10 || value == 0xFFFF0000u || value == 0x0000FFFFu) << value;
    }
    writer.join();
}

}  // namespace
