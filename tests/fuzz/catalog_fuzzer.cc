// DecodeCatalog() on arbitrary bytes: the region catalog is read back from a
// disk that may have been damaged, truncated or written by someone else, and
// a bad file must come back as a Status, never as a crash or a wrong catalog.
//
// Random bytes almost never carry a valid CRC-32C, which would leave the
// record parser behind the checksum unexplored; so each input is decoded
// twice: as it is, and with its correct checksum appended.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "daemon/catalog.h"
#include "daemon/crc32c.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

void CheckDecode(std::string_view bytes) {
    rpmad::StatusOr<rpmad::Catalog> decoded = rpmad::DecodeCatalog(bytes);
    if (!decoded.ok()) {
        FUZZ_CHECK(decoded.status().code() == rpmad::StatusCode::kFailedPrecondition);
        FUZZ_CHECK(!decoded.status().message().empty());
        return;
    }
    // The format has one spelling per catalog: whatever decodes was written
    // by EncodeCatalog, byte for byte.
    const std::string encoded = rpmad::EncodeCatalog(*decoded);
    FUZZ_CHECK(encoded == bytes);
    rpmad::StatusOr<rpmad::Catalog> again = rpmad::DecodeCatalog(encoded);
    FUZZ_CHECK(again.ok());
    FUZZ_CHECK(*again == *decoded);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const std::string_view bytes(reinterpret_cast<const char *>(data), size);
    CheckDecode(bytes);

    std::string with_checksum(bytes);
    const uint32_t crc = rpmad::Crc32c(bytes);
    for (int i = 0; i < 4; ++i)
        with_checksum.push_back(static_cast<char>(crc >> (8 * i)));
    CheckDecode(with_checksum);
    return 0;
}
