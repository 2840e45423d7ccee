// rpma_mr_remote_from_descriptor() on arbitrary bytes: a memory-region
// descriptor arrives from the peer and must never be trusted.
#include <cstddef>
#include <cstdint>

#include "librpma.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

// u64 address, u64 length, u32 rkey, u8 usage; little-endian.
constexpr size_t kDescriptorSize = 21;
constexpr size_t kLengthOffset = 8;
constexpr size_t kUsageOffset = 20;
constexpr int kFlushTypes =
    RPMA_MR_USAGE_FLUSH_TYPE_PERSISTENT | RPMA_MR_USAGE_FLUSH_TYPE_VISIBILITY;

uint64_t LoadLittleEndian64(const uint8_t *bytes) {
    uint64_t value = 0;
    for (int i = 7; i >= 0; --i)
        value = value << 8 | bytes[i];
    return value;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
    rpma_fuzz::RouteLoggingToNowhere();
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static int sentinel;
    auto *const untouched = reinterpret_cast<rpma_mr_remote *>(&sentinel);
    rpma_mr_remote *mr = untouched;

    const int ret = rpma_mr_remote_from_descriptor(data, size, &mr);
    if (size < kDescriptorSize || data[kUsageOffset] == 0) {
        FUZZ_CHECK(ret == RPMA_E_INVAL);
        FUZZ_CHECK(mr == untouched);
        return 0;
    }
    if (ret == RPMA_E_NOMEM) {
        FUZZ_CHECK(mr == untouched);
        return 0;
    }
    FUZZ_CHECK(ret == 0);
    FUZZ_CHECK(mr != nullptr && mr != untouched);

    size_t length = 0;
    FUZZ_CHECK(rpma_mr_remote_get_size(mr, &length) == 0);
    FUZZ_CHECK(length == LoadLittleEndian64(data + kLengthOffset));
    int flush_type = -1;
    FUZZ_CHECK(rpma_mr_remote_get_flush_type(mr, &flush_type) == 0);
    FUZZ_CHECK(flush_type == (data[kUsageOffset] & kFlushTypes));

    FUZZ_CHECK(rpma_mr_remote_delete(&mr) == 0);
    FUZZ_CHECK(mr == nullptr);
    return 0;
}
