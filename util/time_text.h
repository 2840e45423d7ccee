// A unix time as people read it in logs, tables and etcd values:
// "2026-12-03 09:27:00 UTC".
#ifndef UTIL_TIME_TEXT_H
#define UTIL_TIME_TEXT_H

#include <cstdint>
#include <string>

namespace rpma::util {

// "2026-12-03 09:27:00 UTC" (0: "-").
std::string FormatUnixTime(int64_t seconds);

}  // namespace rpma::util

#endif  // UTIL_TIME_TEXT_H
