// The ABI table of Debian's librpma.h, included by absolute path: this target
// has no dependency that could put our librpma.h on the include path.
#include "/usr/include/librpma.h"

#include "tests/abi/abi_table.h"

namespace rpma_abi_test {

std::vector<AbiEntry> DebianAbiTable() {
    return {
#include "tests/abi/abi_names.inc"
    };
}

}  // namespace rpma_abi_test
