// Reading small files whole: config, token, PEM and catalog files.
#ifndef UTIL_FILES_H
#define UTIL_FILES_H

#include <optional>
#include <string>
#include <string_view>

namespace rpma::util {

// The file's bytes; nullopt with *error set to the errno of the open or
// read that failed.
std::optional<std::string> ReadWholeFile(const std::string &path, int *error);

// The first line of `text` without surrounding blanks (a token file's
// token); empty when there is none.
std::string_view TrimmedFirstLine(std::string_view text);

}  // namespace rpma::util

#endif  // UTIL_FILES_H
