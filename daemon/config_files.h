// The files a config names by path: read whole, with errors that name the
// key and the file. Private to the config target.
#ifndef DAEMON_CONFIG_FILES_H
#define DAEMON_CONFIG_FILES_H

#include <string>
#include <string_view>

#include "daemon/status.h"

namespace rpmad::config_text {

// The whole file, or a status whose message says which file (and for which
// key, when `key` is not empty) and why, with the system's words for it.
StatusOr<std::string> ReadWholeFile(const std::string &path, std::string_view key);
// The first line of the admin token file with surrounding whitespace removed.
StatusOr<std::string> ReadAdminTokenFile(const std::string &path);

}  // namespace rpmad::config_text

#endif  // DAEMON_CONFIG_FILES_H
