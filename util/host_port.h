// host:port addresses, with IPv6 literals in brackets ("[::1]:7300").
#ifndef UTIL_HOST_PORT_H
#define UTIL_HOST_PORT_H

#include <optional>
#include <string>
#include <string_view>

namespace rpma::util {

struct HostPort {
    std::string host;  // without brackets: "::1", "127.0.0.1", "pmem-0"
    std::string port;  // decimal, 0 to 65535 (0: a listener picks a free port)
};

// "127.0.0.1:7300" -> {"127.0.0.1", "7300"}, "[::1]:7300" -> {"::1", "7300"}.
// nullopt with *error saying what is wrong and how to write it; an IPv6
// address without brackets is refused, since its last colon is not the
// port's.
std::optional<HostPort> SplitHostPort(std::string_view text, std::string *error);

// The inverse: brackets around a host that holds a colon.
std::string JoinHostPort(std::string_view host, std::string_view port);

}  // namespace rpma::util

#endif  // UTIL_HOST_PORT_H
