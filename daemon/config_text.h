// Small text helpers that the configuration's files (reader, validation,
// value syntax) share. Private to the config target.
#ifndef DAEMON_CONFIG_TEXT_H
#define DAEMON_CONFIG_TEXT_H

#include <algorithm>
#include <string>
#include <string_view>

#include "daemon/status.h"

namespace rpmad::config_text {

inline Status Invalid(std::string message) {
    return Status(StatusCode::kInvalidArgument, std::move(message));
}

inline std::string Quoted(std::string_view text) {
    return "\"" + std::string(text) + "\"";
}

inline bool AllDigits(std::string_view text) {
    return !text.empty() &&
           std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace rpmad::config_text

#endif  // DAEMON_CONFIG_TEXT_H
