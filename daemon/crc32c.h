// CRC-32C (Castagnoli), the checksum LevelDB puts on its records: the region
// catalog carries one so that a damaged file is recognised instead of
// trusted.
#ifndef DAEMON_CRC32C_H
#define DAEMON_CRC32C_H

#include <cstdint>
#include <string_view>

namespace rpmad {

// The CRC-32C of `data`; Crc32c("123456789") == 0xE3069283.
uint32_t Crc32c(std::string_view data);

}  // namespace rpmad

#endif  // DAEMON_CRC32C_H
