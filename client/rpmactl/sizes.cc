#include "client/rpmactl/sizes.h"

namespace rpmactl {

std::optional<uint64_t> ParseSizeArgument(const std::string &what, const std::string &text,
                                          std::string *error) {
    std::string why;
    const std::optional<uint64_t> bytes = rpma::util::ParseSize(text, &why);
    if (!bytes)
        *error = what + ": " + why;
    return bytes;
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
        const auto offset =
            ParseSizeArgument("the offset after the colon", text.substr(colon + 1), error);
        if (!offset)
            return std::nullopt;
        address.offset = *offset;
    }
    return address;
}

}  // namespace rpmactl
