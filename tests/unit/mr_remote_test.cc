#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstring>

#include "librpma.h"

namespace {

using Descriptor = std::array<uint8_t, 21>;

// Builds librpma's wire format by hand, independently of the library.
Descriptor MakeDescriptor(uint64_t addr, uint64_t size, uint32_t rkey, uint8_t usage) {
    Descriptor d{};
    for (int i = 0; i < 8; ++i)
        d[i] = static_cast<uint8_t>(addr >> (8 * i));
    for (int i = 0; i < 8; ++i)
        d[8 + i] = static_cast<uint8_t>(size >> (8 * i));
    for (int i = 0; i < 4; ++i)
        d[16 + i] = static_cast<uint8_t>(rkey >> (8 * i));
    d[20] = usage;
    return d;
}

TEST(MrRemoteFromDescriptor, ReadsTheLittleEndianFields) {
    Descriptor d = MakeDescriptor(0x1122334455667788, 0x0000000100000200, 0xCAFEBABE,
                                  RPMA_MR_USAGE_WRITE_DST | RPMA_MR_USAGE_FLUSH_TYPE_PERSISTENT);
    rpma_mr_remote *mr = nullptr;
    ASSERT_EQ(rpma_mr_remote_from_descriptor(d.data(), d.size(), &mr), 0);
    size_t size = 0;
    ASSERT_EQ(rpma_mr_remote_get_size(mr, &size), 0);
    EXPECT_EQ(size, 0x0000000100000200u);
    int flush_type = 0;
    ASSERT_EQ(rpma_mr_remote_get_flush_type(mr, &flush_type), 0);
    EXPECT_EQ(flush_type, RPMA_MR_USAGE_FLUSH_TYPE_PERSISTENT);
    ASSERT_EQ(rpma_mr_remote_delete(&mr), 0);
    EXPECT_EQ(mr, nullptr);
}

TEST(MrRemoteFromDescriptor, FlushTypeReportsOnlyTheTwoFlushBits) {
    for (int usage = 1; usage <= 0xFF; ++usage) {
        Descriptor d = MakeDescriptor(0x1000, 64, 1, static_cast<uint8_t>(usage));
        rpma_mr_remote *mr = nullptr;
        ASSERT_EQ(rpma_mr_remote_from_descriptor(d.data(), d.size(), &mr), 0) << usage;
        int flush_type = -1;
        ASSERT_EQ(rpma_mr_remote_get_flush_type(mr, &flush_type), 0);
        EXPECT_EQ(flush_type, usage & (RPMA_MR_USAGE_FLUSH_TYPE_PERSISTENT |
                                       RPMA_MR_USAGE_FLUSH_TYPE_VISIBILITY));
        ASSERT_EQ(rpma_mr_remote_delete(&mr), 0);
    }
}

TEST(MrRemoteFromDescriptor, LongerBuffersAreAcceptedShorterRejected) {
    std::array<uint8_t, 64> buffer{};
    Descriptor d = MakeDescriptor(0x1000, 4096, 7, RPMA_MR_USAGE_READ_SRC);
    memcpy(buffer.data(), d.data(), d.size());
    rpma_mr_remote *mr = nullptr;
    ASSERT_EQ(rpma_mr_remote_from_descriptor(buffer.data(), buffer.size(), &mr), 0);
    ASSERT_EQ(rpma_mr_remote_delete(&mr), 0);
    for (size_t len = 0; len < d.size(); ++len) {
        rpma_mr_remote *untouched = reinterpret_cast<rpma_mr_remote *>(0x1);
        EXPECT_EQ(rpma_mr_remote_from_descriptor(d.data(), len, &untouched), RPMA_E_INVAL) << len;
        EXPECT_EQ(untouched, reinterpret_cast<rpma_mr_remote *>(0x1));
    }
}

TEST(MrRemoteFromDescriptor, UsageZeroIsRejected) {
    Descriptor d = MakeDescriptor(0x1000, 4096, 7, 0);
    rpma_mr_remote *mr = nullptr;
    EXPECT_EQ(rpma_mr_remote_from_descriptor(d.data(), d.size(), &mr), RPMA_E_INVAL);
    EXPECT_EQ(mr, nullptr);
}

TEST(MrRemote, NullArgumentsAreInvalid) {
    Descriptor d = MakeDescriptor(0x1000, 4096, 7, RPMA_MR_USAGE_READ_SRC);
    rpma_mr_remote *mr = nullptr;
    EXPECT_EQ(rpma_mr_remote_from_descriptor(nullptr, d.size(), &mr), RPMA_E_INVAL);
    EXPECT_EQ(rpma_mr_remote_from_descriptor(d.data(), d.size(), nullptr), RPMA_E_INVAL);
    ASSERT_EQ(rpma_mr_remote_from_descriptor(d.data(), d.size(), &mr), 0);
    size_t size;
    int flush_type;
    EXPECT_EQ(rpma_mr_remote_get_size(nullptr, &size), RPMA_E_INVAL);
    EXPECT_EQ(rpma_mr_remote_get_size(mr, nullptr), RPMA_E_INVAL);
    EXPECT_EQ(rpma_mr_remote_get_flush_type(nullptr, &flush_type), RPMA_E_INVAL);
    EXPECT_EQ(rpma_mr_remote_get_flush_type(mr, nullptr), RPMA_E_INVAL);
    EXPECT_EQ(rpma_mr_remote_delete(nullptr), RPMA_E_INVAL);
    ASSERT_EQ(rpma_mr_remote_delete(&mr), 0);
    EXPECT_EQ(rpma_mr_remote_delete(&mr), 0) << "deleting a NULL object is a no-op";
}

}  // namespace
