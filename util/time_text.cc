#include "util/time_text.h"

#include <ctime>

namespace rpma::util {

std::string FormatUnixTime(int64_t seconds) {
    if (seconds == 0)
        return "-";
    const time_t t = static_cast<time_t>(seconds);
    struct tm utc {};
    gmtime_r(&t, &utc);
    char text[40];
    strftime(text, sizeof(text), "%Y-%m-%d %H:%M:%S UTC", &utc);
    return text;
}

}  // namespace rpma::util
