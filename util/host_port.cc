#include "util/host_port.h"

#include <algorithm>
#include <charconv>

namespace rpma::util {
namespace {

bool AllDigits(std::string_view text) {
    return !text.empty() &&
           std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

std::optional<HostPort> SplitHostPort(std::string_view text, std::string *error) {
    auto bad = [&](std::string_view why) -> std::optional<HostPort> {
        *error = "\"" + std::string(text) + "\" " + std::string(why) +
                 "; write host:port, for example \"127.0.0.1:7300\", \"[::1]:7300\" or "
                 "\"0.0.0.0:7300\" for all interfaces";
        return std::nullopt;
    };
    HostPort result;
    std::string_view port;
    if (text.starts_with('[')) {
        const size_t close = text.find(']');
        if (close == std::string_view::npos)
            return bad("has no closing ']'");
        result.host = std::string(text.substr(1, close - 1));
        std::string_view rest = text.substr(close + 1);
        if (!rest.starts_with(':'))
            return bad("has no :port after the ']'");
        port = rest.substr(1);
    } else {
        const size_t colon = text.rfind(':');
        if (colon == std::string_view::npos)
            return bad(AllDigits(text) ? "has no host" : "has no port");
        result.host = std::string(text.substr(0, colon));
        if (result.host.find(':') != std::string::npos)
            return bad("is an IPv6 address without brackets");
        port = text.substr(colon + 1);
    }
    if (result.host.empty())
        return bad("has no host");
    unsigned number = 0;
    auto [end, problem] = std::from_chars(port.data(), port.data() + port.size(), number);
    if (!AllDigits(port) || problem != std::errc() || end != port.data() + port.size() ||
        number > 65535)
        return bad("has no port number from 0 to 65535");
    result.port = std::string(port);
    return result;
}

std::string JoinHostPort(std::string_view host, std::string_view port) {
    if (host.find(':') != std::string_view::npos)
        return "[" + std::string(host) + "]:" + std::string(port);
    return std::string(host) + ":" + std::string(port);
}

}  // namespace rpma::util
