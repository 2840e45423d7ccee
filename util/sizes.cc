#include "util/sizes.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <iterator>

namespace rpma::util {
namespace {

struct Unit {
    std::string_view suffix;
    uint64_t bytes;
};
// Largest first, so FormatSize picks the biggest exact unit.
constexpr Unit kUnits[] = {
    {"PiB", 1ull << 50}, {"TiB", 1ull << 40}, {"GiB", 1ull << 30},
    {"MiB", 1ull << 20}, {"KiB", 1ull << 10}, {"B", 1},
};

bool EqualsIgnoringCase(std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
               return std::tolower(static_cast<unsigned char>(x)) ==
                      std::tolower(static_cast<unsigned char>(y));
           });
}

std::string Quoted(std::string_view text) {
    return "\"" + std::string(text) + "\"";
}

}  // namespace

std::optional<uint64_t> ParseSize(std::string_view text, std::string *error) {
    const std::string fix =
        "; write a number of bytes (4096) or a whole number with KiB, MiB, GiB or TiB "
        "(\"64MiB\")";
    auto fail = [&](std::string why) -> std::optional<uint64_t> {
        *error = std::move(why);
        return std::nullopt;
    };
    uint64_t number = 0;
    auto [end, problem] = std::from_chars(text.data(), text.data() + text.size(), number);
    if (end == text.data())
        return fail(Quoted(text) + " is not a size" + fix);
    if (problem == std::errc::result_out_of_range)
        return fail(Quoted(text) + " is too large for 64 bits" + fix);
    std::string_view suffix = text.substr(end - text.data());
    while (suffix.starts_with(' '))
        suffix.remove_prefix(1);
    if (suffix.empty())
        return number;
    for (const Unit &unit : kUnits) {
        if (EqualsIgnoringCase(suffix, unit.suffix)) {
            if (number > UINT64_MAX / unit.bytes)
                return fail(Quoted(text) + " is too large for 64 bits" + fix);
            return number * unit.bytes;
        }
    }
    static constexpr std::string_view kDecimal[] = {"K",  "KB", "M",  "MB", "G",
                                                    "GB", "T",  "TB", "P",  "PB"};
    for (std::string_view decimal : kDecimal) {
        if (EqualsIgnoringCase(suffix, decimal)) {
            std::string binary =
                std::to_string(number) + static_cast<char>(std::toupper(suffix[0])) + "iB";
            return fail(Quoted(text) + " is ambiguous (1000 or 1024 based?); write " +
                        Quoted(binary) + " or the number of bytes");
        }
    }
    return fail(Quoted(text) + " has an unknown unit " + Quoted(suffix) + fix);
}

std::string FormatSize(uint64_t bytes) {
    for (const Unit &unit : kUnits) {
        if (unit.bytes > 1 && bytes != 0 && bytes % unit.bytes == 0)
            return std::to_string(bytes / unit.bytes) + std::string(unit.suffix);
    }
    return std::to_string(bytes);
}

std::string FormatSizeRounded(uint64_t bytes) {
    static const char *const kRoundedUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    if (bytes < 1024)
        return std::to_string(bytes) + " B";
    double value = static_cast<double>(bytes) / 1024;
    size_t unit = 0;
    while (value >= 1024 && unit + 1 < std::size(kRoundedUnits)) {
        value /= 1024;
        ++unit;
    }
    char text[32];
    snprintf(text, sizeof(text), "%.1f %s", value, kRoundedUnits[unit]);
    return text;
}

}  // namespace rpma::util
