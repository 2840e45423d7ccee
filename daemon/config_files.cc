#include "daemon/config_files.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>

#include "daemon/config.h"
#include "daemon/config_text.h"

namespace rpmad {
namespace config_text {

namespace {

StatusCode CodeForErrno(int error) {
    switch (error) {
        case ENOENT:
        case ENOTDIR:
            return StatusCode::kNotFound;
        case EACCES:
        case EPERM:
            return StatusCode::kPermissionDenied;
        default:
            return StatusCode::kFailedPrecondition;
    }
}

}  // namespace

StatusOr<std::string> ReadWholeFile(const std::string &path, std::string_view key) {
    auto failure = [&](int error) {
        std::string who = key.empty() ? "cannot read " : std::string(key) + ": cannot read ";
        return Status(CodeForErrno(error),
                      who + Quoted(path) + ": " + std::strerror(error) +
                          "; check the path and that rpmad's user may read it");
    };
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return failure(errno);
    std::string text;
    char buffer[4096];
    for (;;) {
        ssize_t n = ::read(fd, buffer, sizeof(buffer));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int error = errno;
            ::close(fd);
            return failure(error);
        }
        if (n == 0)
            break;
        text.append(buffer, static_cast<size_t>(n));
    }
    ::close(fd);
    return text;
}

StatusOr<std::string> ReadAdminTokenFile(const std::string &path) {
    constexpr std::string_view kKey = "control.admin_token_file";
    StatusOr<std::string> text = ReadWholeFile(path, kKey);
    if (!text.ok())
        return text.status();
    std::string_view line = *text;
    line = line.substr(0, line.find('\n'));
    constexpr std::string_view kSpace = " \t\r\f\v";
    size_t begin = line.find_first_not_of(kSpace);
    if (begin == std::string_view::npos) {
        return Invalid(std::string(kKey) + ": " + Quoted(path) +
                       " holds no token on its first line; write the token there (an empty "
                       "token would switch authentication off)");
    }
    line = line.substr(begin, line.find_last_not_of(kSpace) - begin + 1);
    return std::string(line);
}

}  // namespace config_text

using config_text::Invalid;
using config_text::Quoted;
using config_text::ReadAdminTokenFile;
using config_text::ReadWholeFile;

Status ResolveAdminToken(Config *config) {
    if (config->admin_token_file.empty())
        return Status();
    if (!config->admin_token.empty()) {
        return Invalid(
            "control.admin_token_file: set together with control.admin_token; give the token "
            "in one of them and leave the other empty");
    }
    StatusOr<std::string> token = ReadAdminTokenFile(config->admin_token_file);
    if (!token.ok())
        return token.status();
    config->admin_token = *token;
    return Status();
}

Status ResolveClientTokens(Config *config) {
    constexpr std::string_view kKey = "sessions.client_tokens_file";
    config->client_tokens.clear();
    if (config->client_tokens_file.empty())
        return Status();
    const std::string &path = config->client_tokens_file;
    StatusOr<std::string> text = ReadWholeFile(path, kKey);
    if (!text.ok())
        return text.status();
    std::istringstream lines(*text);
    int number = 0;
    for (std::string line; std::getline(lines, line);) {
        ++number;
        std::istringstream words(line);
        std::string name, token, extra;
        words >> name >> token >> extra;
        if (name.empty() || name[0] == '#')
            continue;
        const std::string at =
            std::string(kKey) + ": " + Quoted(path) + " line " + std::to_string(number) + ": ";
        if (token.empty() || !extra.empty())
            return Invalid(at + "expected NAME TOKEN (two words); write one client per line");
        for (const ClientToken &earlier : config->client_tokens) {
            if (earlier.name == name)
                return Invalid(at + "the name " + Quoted(name) +
                               " is given twice; give each client its own");
            if (earlier.token == token)
                return Invalid(at + "the token of " + Quoted(name) + " is also " +
                               Quoted(earlier.name) + "'s; give each client its own");
        }
        config->client_tokens.push_back({name, token});
    }
    if (config->client_tokens.empty())
        return Invalid(std::string(kKey) + ": " + Quoted(path) +
                       " holds no token; write one NAME TOKEN line per client (an empty file "
                       "would let no client open sessions)");
    return Status();
}

}  // namespace rpmad
