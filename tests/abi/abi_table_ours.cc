// The ABI table of our librpma.h, included by its path in the workspace so
// that Debian's /usr/include/librpma.h cannot be picked up instead.
#include "rpma_core/include/librpma.h"

#include "tests/abi/abi_table.h"

namespace rpma_abi_test {

std::vector<AbiEntry> OurAbiTable() {
    return {
#include "tests/abi/abi_names.inc"
    };
}

}  // namespace rpma_abi_test
