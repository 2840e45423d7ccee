// Comparing secrets without telling, by the time taken, where they differ.
#ifndef UTIL_CONSTANT_TIME_H
#define UTIL_CONSTANT_TIME_H

#include <algorithm>
#include <cstddef>
#include <string_view>

namespace rpma::util {

// Whether `a` and `b` are equal, in a time that depends on their lengths
// only (volatile: the compiler may not stop at the first difference).
inline bool ConstantTimeEquals(std::string_view a, std::string_view b) {
    volatile unsigned char diff = a.size() == b.size() ? 0 : 1;
    const size_t n = std::max(a.size(), b.size());
    for (size_t i = 0; i < n; ++i) {
        const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
        const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
        diff = static_cast<unsigned char>(diff | (x ^ y));
    }
    return diff == 0;
}

}  // namespace rpma::util

#endif  // UTIL_CONSTANT_TIME_H
