// rpma_peer_cfg_from_descriptor() on arbitrary bytes: the peer's
// configuration arrives over the wire and must never be trusted.
#include <cstddef>
#include <cstdint>

#include "librpma.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
    rpma_fuzz::RouteLoggingToNowhere();
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static int sentinel;
    auto *const untouched = reinterpret_cast<rpma_peer_cfg *>(&sentinel);
    rpma_peer_cfg *cfg = untouched;

    const int ret = rpma_peer_cfg_from_descriptor(data, size, &cfg);
    if (size < 1) {
        FUZZ_CHECK(ret == RPMA_E_INVAL);
        FUZZ_CHECK(cfg == untouched);
        return 0;
    }
    if (ret == RPMA_E_NOMEM) {
        FUZZ_CHECK(cfg == untouched);
        return 0;
    }
    FUZZ_CHECK(ret == 0);
    FUZZ_CHECK(cfg != nullptr && cfg != untouched);

    // Any non-zero first byte means "supported"; it is sent on as exactly 1.
    const bool expected = data[0] != 0;
    bool supported = !expected;
    FUZZ_CHECK(rpma_peer_cfg_get_direct_write_to_pmem(cfg, &supported) == 0);
    FUZZ_CHECK(supported == expected);
    size_t descriptor_size = 0;
    FUZZ_CHECK(rpma_peer_cfg_get_descriptor_size(cfg, &descriptor_size) == 0);
    FUZZ_CHECK(descriptor_size == 1);
    uint8_t descriptor = 0xff;
    FUZZ_CHECK(rpma_peer_cfg_get_descriptor(cfg, &descriptor) == 0);
    FUZZ_CHECK(descriptor == (expected ? 1 : 0));

    FUZZ_CHECK(rpma_peer_cfg_delete(&cfg) == 0);
    FUZZ_CHECK(cfg == nullptr);
    return 0;
}
