// The syntax of rpmad.yaml's values: host:port addresses, sizes with binary
// units, persistence names, and where the pool directory is by default.
#include <pwd.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

#include "daemon/config.h"
#include "daemon/config_text.h"

namespace rpmad {

using config_text::AllDigits;
using config_text::Invalid;
using config_text::Quoted;

StatusOr<HostPort> SplitHostPort(std::string_view text, std::string_view key) {
    auto bad = [&](std::string_view why) {
        return Invalid(std::string(key) + ": " + Quoted(text) + " " + std::string(why) +
                       "; write host:port, for example \"127.0.0.1:7300\", \"[::1]:7300\" or "
                       "\"0.0.0.0:7300\" for all interfaces");
    };
    HostPort result;
    std::string_view port;
    if (text.starts_with('[')) {
        size_t close = text.find(']');
        if (close == std::string_view::npos)
            return bad("has no closing ']'");
        result.host = std::string(text.substr(1, close - 1));
        std::string_view rest = text.substr(close + 1);
        if (!rest.starts_with(':'))
            return bad("has no :port after the ']'");
        port = rest.substr(1);
    } else {
        size_t colon = text.rfind(':');
        if (colon == std::string_view::npos)
            return bad(AllDigits(text) ? "has no host" : "has no port");
        result.host = std::string(text.substr(0, colon));
        if (result.host.find(':') != std::string::npos) {
            return bad("is an IPv6 address without brackets");
        }
        port = text.substr(colon + 1);
    }
    if (result.host.empty())
        return bad("has no host");
    unsigned number = 0;
    auto [end, error] = std::from_chars(port.data(), port.data() + port.size(), number);
    if (!AllDigits(port) || error != std::errc() || end != port.data() + port.size() ||
        number > 65535) {
        return bad("has no port number from 0 to 65535");
    }
    result.port = std::string(port);
    return result;
}

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
}  // namespace

StatusOr<uint64_t> ParseSize(std::string_view text) {
    const std::string fix =
        "; write a number of bytes (4096) or a whole number with KiB, MiB, GiB or TiB "
        "(\"64MiB\")";
    uint64_t number = 0;
    auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), number);
    if (end == text.data())
        return Invalid(Quoted(text) + " is not a size" + fix);
    if (error == std::errc::result_out_of_range) {
        return Invalid(Quoted(text) + " is too large for 64 bits" + fix);
    }
    std::string_view suffix = text.substr(end - text.data());
    while (suffix.starts_with(' '))
        suffix.remove_prefix(1);
    if (suffix.empty())
        return number;
    for (const Unit &unit : kUnits) {
        if (EqualsIgnoringCase(suffix, unit.suffix)) {
            if (number > UINT64_MAX / unit.bytes) {
                return Invalid(Quoted(text) + " is too large for 64 bits" + fix);
            }
            return number * unit.bytes;
        }
    }
    static constexpr std::string_view kDecimal[] = {"K", "KB", "M", "MB", "G", "GB", "T", "TB"};
    for (std::string_view decimal : kDecimal) {
        if (EqualsIgnoringCase(suffix, decimal)) {
            std::string binary =
                std::to_string(number) + static_cast<char>(std::toupper(suffix[0])) + "iB";
            return Invalid(Quoted(text) + " is ambiguous (1000 or 1024 based?); write " +
                           Quoted(binary) + " or the number of bytes");
        }
    }
    return Invalid(Quoted(text) + " has an unknown unit " + Quoted(suffix) + fix);
}

std::string FormatSize(uint64_t bytes) {
    for (const Unit &unit : kUnits) {
        if (unit.bytes > 1 && bytes != 0 && bytes % unit.bytes == 0) {
            return std::to_string(bytes / unit.bytes) + std::string(unit.suffix);
        }
    }
    return std::to_string(bytes);
}

std::string DefaultPoolDirFor(uid_t euid, const char *xdg_data_home, const char *home) {
    namespace fs = std::filesystem;
    if (euid == 0)
        return "/var/lib/rpmad";
    // The XDG spec says a relative XDG_DATA_HOME is to be ignored.
    if (xdg_data_home != nullptr && xdg_data_home[0] == '/') {
        return (fs::path(xdg_data_home) / "rpmad").lexically_normal().string();
    }
    std::string home_dir = home != nullptr && home[0] == '/' ? home : "";
    if (home_dir.empty()) {
        struct passwd entry, *found = nullptr;
        char buffer[4096];
        if (getpwuid_r(euid, &entry, buffer, sizeof(buffer), &found) == 0 && found != nullptr &&
            found->pw_dir != nullptr && found->pw_dir[0] == '/') {
            home_dir = found->pw_dir;
        }
    }
    if (home_dir.empty())
        return "/var/lib/rpmad";
    return (fs::path(home_dir) / ".local/share/rpmad").lexically_normal().string();
}

std::string DefaultPoolDir() {
    return DefaultPoolDirFor(geteuid(), std::getenv("XDG_DATA_HOME"), std::getenv("HOME"));
}

StatusOr<std::string> ResolvePoolDir(std::string_view text) {
    namespace fs = std::filesystem;
    if (text.empty())
        return DefaultPoolDir();
    std::error_code error;
    fs::path path = fs::absolute(fs::path(text), error);
    if (error) {
        return Status(StatusCode::kFailedPrecondition,
                      "storage.pool_dir: cannot make " + Quoted(text) +
                          " absolute: " + error.message() + "; give an absolute path");
    }
    std::string resolved = path.lexically_normal().string();
    if (resolved.size() > 1 && resolved.back() == '/')
        resolved.pop_back();
    return resolved;
}

std::string_view PersistenceName(Persistence persistence) {
    return kPersistenceNames[static_cast<size_t>(persistence)];
}

Config DefaultConfig() {
    Config config;
    config.pool_dir = DefaultPoolDir();
    return config;
}

}  // namespace rpmad
