// The syntax of rpmad.yaml's values: host:port addresses, sizes with binary
// units, persistence names, and where the pool directory is by default.
#include <pwd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>

#include "daemon/config.h"
#include "daemon/config_text.h"
#include "util/host_port.h"
#include "util/sizes.h"

namespace rpmad {

using config_text::AllDigits;
using config_text::Invalid;
using config_text::Quoted;

StatusOr<HostPort> SplitHostPort(std::string_view text, std::string_view key) {
    std::string error;
    std::optional<HostPort> split = rpma::util::SplitHostPort(text, &error);
    if (!split)
        return Invalid(std::string(key) + ": " + error);
    return *split;
}

StatusOr<uint64_t> ParseSize(std::string_view text) {
    std::string error;
    std::optional<uint64_t> bytes = rpma::util::ParseSize(text, &error);
    if (!bytes)
        return Invalid(error);
    return *bytes;
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
