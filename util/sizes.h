// Byte sizes as people write them: a whole number of bytes, or one with a
// binary unit. Decimal units (K, MB, G, ...) are refused rather than
// guessed at: a size is 1024-based everywhere in rpma, and "1G" would read
// as 10^9 to some.
#ifndef UTIL_SIZES_H
#define UTIL_SIZES_H

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace rpma::util {

// "4096", "64MiB", "2 GiB", "1tib" (units B KiB MiB GiB TiB PiB, any case).
// nullopt with *error saying what is wrong and what to write, for example
// "\"1G\" is ambiguous (1000 or 1024 based?); write \"1GiB\" or the number
// of bytes".
std::optional<uint64_t> ParseSize(std::string_view text, std::string *error);

// Exact, and read back by ParseSize: "64GiB" when a whole number of the
// largest such unit, else the number of bytes ("4097").
std::string FormatSize(uint64_t bytes);

// Rounded, for people: "512 B", "4.0 KiB", "1.5 GiB".
std::string FormatSizeRounded(uint64_t bytes);

}  // namespace rpma::util

#endif  // UTIL_SIZES_H
