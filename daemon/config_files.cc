#include "daemon/config_files.h"

#include <optional>
#include <sstream>

#include "daemon/config.h"
#include "daemon/config_text.h"
#include "util/files.h"

namespace rpmad {
namespace config_text {

StatusOr<std::string> ReadWholeFile(const std::string &path, std::string_view key) {
    int error = 0;
    std::optional<std::string> text = rpma::util::ReadWholeFile(path, &error);
    if (text)
        return *text;
    const std::string who = key.empty() ? "cannot read " : std::string(key) + ": cannot read ";
    const Status failed = ErrnoStatus(error, who + Quoted(path));
    return Status(failed.code(),
                  failed.message() + "; check the path and that rpmad's user may read it");
}

StatusOr<std::string> ReadAdminTokenFile(const std::string &path) {
    constexpr std::string_view kKey = "control.admin_token_file";
    StatusOr<std::string> text = ReadWholeFile(path, kKey);
    if (!text.ok())
        return text.status();
    const std::string_view token = rpma::util::TrimmedFirstLine(*text);
    if (token.empty()) {
        return Invalid(std::string(kKey) + ": " + Quoted(path) +
                       " holds no token on its first line; write the token there (an empty "
                       "token would switch authentication off)");
    }
    return std::string(token);
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
