#include "client/rpmactl/sizes.h"

#include <cctype>
#include <cstdio>
#include <limits>

namespace rpmactl {

std::optional<uint64_t> ParseSize(const std::string &text) {
    size_t i = 0;
    uint64_t value = 0;
    constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
        const uint64_t digit = static_cast<uint64_t>(text[i] - '0');
        if (value > (kMax - digit) / 10)
            return std::nullopt;
        value = value * 10 + digit;
        ++i;
    }
    if (i == 0)
        return std::nullopt;
    std::string suffix;
    for (; i < text.size(); ++i)
        suffix += static_cast<char>(std::tolower(static_cast<unsigned char>(text[i])));
    int shift = 0;
    if (suffix.empty() || suffix == "b")
        shift = 0;
    else if (suffix == "k" || suffix == "kib")
        shift = 10;
    else if (suffix == "m" || suffix == "mib")
        shift = 20;
    else if (suffix == "g" || suffix == "gib")
        shift = 30;
    else if (suffix == "t" || suffix == "tib")
        shift = 40;
    else
        return std::nullopt;
    if (value > (kMax >> shift))
        return std::nullopt;
    return value << shift;
}

std::string FormatSize(uint64_t bytes) {
    static const char *const kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    if (bytes < 1024)
        return std::to_string(bytes) + " B";
    double value = static_cast<double>(bytes) / 1024;
    size_t unit = 0;
    while (value >= 1024 && unit + 1 < std::size(kUnits)) {
        value /= 1024;
        ++unit;
    }
    char text[32];
    snprintf(text, sizeof(text), "%.1f %s", value, kUnits[unit]);
    return text;
}

std::optional<RegionAddress> ParseRegionAddress(const std::string &text, std::string *error) {
    RegionAddress address;
    const size_t colon = text.rfind(':');
    address.region = text.substr(0, colon);
    if (address.region.empty()) {
        *error = "'" + text + "' names no region: write REGION or REGION:OFFSET";
        return std::nullopt;
    }
    if (colon != std::string::npos) {
        const auto offset = ParseSize(text.substr(colon + 1));
        if (!offset) {
            *error = "'" + text.substr(colon + 1) +
                     "' is not an offset: write a byte count such as 4096 or 1MiB after the colon";
            return std::nullopt;
        }
        address.offset = *offset;
    }
    return address;
}

}  // namespace rpmactl
