// Byte counts as people write them ("4096", "64KiB", "1G") and read them
// ("64.0 MiB"), and the "REGION[:OFFSET]" argument of put and get.
#ifndef CLIENT_RPMACTL_SIZES_H
#define CLIENT_RPMACTL_SIZES_H

#include <cstdint>
#include <optional>
#include <string>

namespace rpmactl {

// A decimal count with an optional binary suffix: K, KiB, M, MiB, G, GiB,
// T, TiB (any case; "B" alone allowed). nullopt when malformed or over
// 2^64-1.
std::optional<uint64_t> ParseSize(const std::string &text);

// "512 B", "4.0 KiB", "1.5 GiB".
std::string FormatSize(uint64_t bytes);

struct RegionAddress {
    std::string region;
    uint64_t offset = 0;
};

// "NAME" or "NAME:OFFSET" (OFFSET as ParseSize reads it); nullopt with
// *error saying what is wrong.
std::optional<RegionAddress> ParseRegionAddress(const std::string &text, std::string *error);

}  // namespace rpmactl

#endif  // CLIENT_RPMACTL_SIZES_H
