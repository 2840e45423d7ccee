// Whether bytes are well-formed UTF-8.
#ifndef DAEMON_UTF8_H
#define DAEMON_UTF8_H

#include <string_view>

namespace rpmad {

// Well-formed UTF-8 (no overlong forms, surrogates or code points past
// U+10FFFF). YAML has no way to write other bytes: yaml-cpp reads them but
// writes U+FFFD instead, so RedactedYaml would show another value.
bool IsUtf8(std::string_view text);

}  // namespace rpmad

#endif  // DAEMON_UTF8_H
