// Internal logging: every message goes through the function chosen with
// rpma_log_set_function(), but only when its level passes the primary
// threshold, so a disabled level costs one relaxed atomic load.
#ifndef RPMA_CORE_SRC_LOG_H
#define RPMA_CORE_SRC_LOG_H

#include "librpma.h"

namespace rpma::log {

// Cold: logging is for errors and rare events, so the compiler lays out
// the branches that log out of the way of the data path's code.
__attribute__((cold)) bool Enabled(enum rpma_log_level level);

// printf-style; file may be nullptr (then line and function are ignored).
__attribute__((cold)) void Write(enum rpma_log_level level, const char *file, int line,
                                 const char *function, const char *format, ...)
    __attribute__((format(printf, 5, 6)));

}  // namespace rpma::log

#define RPMA_LOG_AT(level, ...)                                                 \
    do {                                                                        \
        if (rpma::log::Enabled(level))                                          \
            rpma::log::Write(level, __FILE__, __LINE__, __func__, __VA_ARGS__); \
    } while (0)

#define RPMA_LOG_FATAL(...) RPMA_LOG_AT(RPMA_LOG_LEVEL_FATAL, __VA_ARGS__)
#define RPMA_LOG_ERROR(...) RPMA_LOG_AT(RPMA_LOG_LEVEL_ERROR, __VA_ARGS__)
#define RPMA_LOG_WARNING(...) RPMA_LOG_AT(RPMA_LOG_LEVEL_WARNING, __VA_ARGS__)
#define RPMA_LOG_NOTICE(...) RPMA_LOG_AT(RPMA_LOG_LEVEL_NOTICE, __VA_ARGS__)
#define RPMA_LOG_INFO(...) RPMA_LOG_AT(RPMA_LOG_LEVEL_INFO, __VA_ARGS__)
#define RPMA_LOG_DEBUG(...) RPMA_LOG_AT(RPMA_LOG_LEVEL_DEBUG, __VA_ARGS__)

#endif  // RPMA_CORE_SRC_LOG_H
