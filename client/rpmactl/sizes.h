// Byte counts on rpmactl's command line (rpma::util::ParseSize, which rpmad
// shares), and the "REGION[:OFFSET]" argument of put and get.
#ifndef CLIENT_RPMACTL_SIZES_H
#define CLIENT_RPMACTL_SIZES_H

#include <cstdint>
#include <optional>
#include <string>

#include "util/sizes.h"

namespace rpmactl {

using rpma::util::FormatSizeRounded;

// rpma::util::ParseSize of the value of `what` (an option or argument
// name); nullopt with *error "WHAT: ..." saying what to write.
std::optional<uint64_t> ParseSizeArgument(const std::string &what, const std::string &text,
                                          std::string *error);

struct RegionAddress {
    std::string region;
    uint64_t offset = 0;
};

// "NAME" or "NAME:OFFSET" (OFFSET a size); nullopt with *error saying what
// is wrong.
std::optional<RegionAddress> ParseRegionAddress(const std::string &text, std::string *error);

}  // namespace rpmactl

#endif  // CLIENT_RPMACTL_SIZES_H
