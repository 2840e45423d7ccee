#include "util/host_port.h"

#include <gtest/gtest.h>

namespace rpma::util {
namespace {

TEST(SplitHostPort, SplitsNamesIpv4AndBracketedIpv6Literals) {
    for (const auto &[text, host, port] : {std::tuple{"127.0.0.1:7300", "127.0.0.1", "7300"},
                                           {"pmem-0.example:7301", "pmem-0.example", "7301"},
                                           {"[::1]:7300", "::1", "7300"},
                                           {"[fe80::1%eth0]:65535", "fe80::1%eth0", "65535"},
                                           {"0.0.0.0:0", "0.0.0.0", "0"}}) {
        std::string error;
        const auto split = SplitHostPort(text, &error);
        ASSERT_TRUE(split.has_value()) << text << ": " << error;
        EXPECT_EQ(split->host, host);
        EXPECT_EQ(split->port, port);
        EXPECT_EQ(JoinHostPort(split->host, split->port), text);
    }
}

TEST(SplitHostPort, RefusesWhatIsNotHostColonPortSayingWhy) {
    for (const auto &[text, why] : {std::pair{"localhost", "has no port"},
                                    {"7300", "has no host"},
                                    {":7300", "has no host"},
                                    {"[]:7300", "has no host"},
                                    {"::1:7300", "is an IPv6 address without brackets"},
                                    {"[::1]7300", "has no :port after the ']'"},
                                    {"[::1:7300", "has no closing ']'"},
                                    {"host:", "has no port number from 0 to 65535"},
                                    {"host:65536", "has no port number from 0 to 65535"},
                                    {"host:-1", "has no port number from 0 to 65535"},
                                    {"host:http", "has no port number from 0 to 65535"}}) {
        std::string error;
        EXPECT_FALSE(SplitHostPort(text, &error).has_value()) << text;
        EXPECT_NE(error.find(why), std::string::npos) << text << ": " << error;
        EXPECT_NE(error.find("write host:port"), std::string::npos) << error;
    }
}

}  // namespace
}  // namespace rpma::util
