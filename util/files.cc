#include "util/files.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

namespace rpma::util {

std::optional<std::string> ReadWholeFile(const std::string &path, int *error) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        *error = errno;
        return std::nullopt;
    }
    std::string text;
    char buffer[64 * 1024];
    for (;;) {
        const ssize_t n = ::read(fd, buffer, sizeof(buffer));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            *error = errno;
            ::close(fd);
            return std::nullopt;
        }
        if (n == 0)
            break;
        text.append(buffer, static_cast<size_t>(n));
    }
    ::close(fd);
    return text;
}

std::string_view TrimmedFirstLine(std::string_view text) {
    std::string_view line = text.substr(0, text.find('\n'));
    constexpr std::string_view kSpace = " \t\r\f\v";
    const size_t begin = line.find_first_not_of(kSpace);
    if (begin == std::string_view::npos)
        return {};
    return line.substr(begin, line.find_last_not_of(kSpace) - begin + 1);
}

}  // namespace rpma::util
