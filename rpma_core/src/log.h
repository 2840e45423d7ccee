// Internal logging: every message goes through the function chosen with
// rpma_log_set_function(), but only when its level passes the primary
// threshold, so a disabled level costs one relaxed atomic load.
//
// Messages a remote peer can provoke at will (one per connection it opens,
// per malformed message it sends) use RPMA_LOG_*_RATELIMITED: each such call
// site writes at most RateLimit::kBurst lines per RateLimit::kInterval and
// counts the rest, which its next line reports ("suppressed K similar
// messages"). A flood of hostile connections then costs the log a few lines.
#ifndef RPMA_CORE_SRC_LOG_H
#define RPMA_CORE_SRC_LOG_H

#include <chrono>
#include <cstdint>
#include <mutex>

#include "librpma.h"

namespace rpma::log {

// Cold: logging is for errors and rare events, so the compiler lays out
// the branches that log out of the way of the data path's code.
__attribute__((cold)) bool Enabled(enum rpma_log_level level);

// printf-style; file may be nullptr (then line and function are ignored).
__attribute__((cold)) void Write(enum rpma_log_level level, const char *file, int line,
                                 const char *function, const char *format, ...)
    __attribute__((format(printf, 5, 6)));

// How often one call site may write (the kernel's printk_ratelimit
// defaults): a burst, then nothing until the interval that began with the
// burst's first line is over. Thread-safe; constant-initialized, so a
// function-local static costs no guard.
class RateLimit {
  public:
    using Clock = std::chrono::steady_clock;
    static constexpr int kBurst = 10;
    static constexpr Clock::duration kInterval = std::chrono::seconds(5);

    // Whether a line may be written at `now`; if so, *suppressed is the
    // number of lines withheld since the last one written.
    bool Admit(Clock::time_point now, uint64_t *suppressed);

  private:
    std::mutex mu_;
    bool started_ = false;
    Clock::time_point interval_start_{};
    int written_ = 0;
    uint64_t suppressed_ = 0;
};

// Write, when `limit` admits a line at `now`, after a "suppressed K similar
// messages" line (same level and origin) if it withheld any.
__attribute__((cold)) void WriteLimited(RateLimit &limit, RateLimit::Clock::time_point now,
                                        enum rpma_log_level level, const char *file, int line,
                                        const char *function, const char *format, ...)
    __attribute__((format(printf, 7, 8)));

}  // namespace rpma::log

#define RPMA_LOG_AT(level, ...)                                                 \
    do {                                                                        \
        if (rpma::log::Enabled(level))                                          \
            rpma::log::Write(level, __FILE__, __LINE__, __func__, __VA_ARGS__); \
    } while (0)

// One RateLimit per expansion, i.e. per call site.
#define RPMA_LOG_AT_RATELIMITED(level, ...)                                                  \
    do {                                                                                     \
        if (rpma::log::Enabled(level)) {                                                     \
            static rpma::log::RateLimit rpma_log_rate_limit;                                 \
            rpma::log::WriteLimited(rpma_log_rate_limit, rpma::log::RateLimit::Clock::now(), \
                                    level, __FILE__, __LINE__, __func__, __VA_ARGS__);       \
        }                                                                                    \
    } while (0)

#define RPMA_LOG_FATAL(...) RPMA_LOG_AT(RPMA_LOG_LEVEL_FATAL, __VA_ARGS__)
#define RPMA_LOG_ERROR(...) RPMA_LOG_AT(RPMA_LOG_LEVEL_ERROR, __VA_ARGS__)
#define RPMA_LOG_WARNING(...) RPMA_LOG_AT(RPMA_LOG_LEVEL_WARNING, __VA_ARGS__)
#define RPMA_LOG_NOTICE(...) RPMA_LOG_AT(RPMA_LOG_LEVEL_NOTICE, __VA_ARGS__)
#define RPMA_LOG_INFO(...) RPMA_LOG_AT(RPMA_LOG_LEVEL_INFO, __VA_ARGS__)
#define RPMA_LOG_DEBUG(...) RPMA_LOG_AT(RPMA_LOG_LEVEL_DEBUG, __VA_ARGS__)

#define RPMA_LOG_ERROR_RATELIMITED(...) RPMA_LOG_AT_RATELIMITED(RPMA_LOG_LEVEL_ERROR, __VA_ARGS__)
#define RPMA_LOG_WARNING_RATELIMITED(...) \
    RPMA_LOG_AT_RATELIMITED(RPMA_LOG_LEVEL_WARNING, __VA_ARGS__)
#define RPMA_LOG_NOTICE_RATELIMITED(...) RPMA_LOG_AT_RATELIMITED(RPMA_LOG_LEVEL_NOTICE, __VA_ARGS__)
#define RPMA_LOG_INFO_RATELIMITED(...) RPMA_LOG_AT_RATELIMITED(RPMA_LOG_LEVEL_INFO, __VA_ARGS__)

#endif  // RPMA_CORE_SRC_LOG_H
