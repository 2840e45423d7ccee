// rpma_log_*: thresholds and the pluggable log function.
#include "rpma_core/src/log.h"

#include <syslog.h>
#include <time.h>

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <utility>

namespace {

// librpma's defaults: warnings and worse go to syslog, nothing to stderr.
std::atomic<int> thresholds[RPMA_LOG_THRESHOLD_MAX] = {RPMA_LOG_LEVEL_WARNING, RPMA_LOG_DISABLED};
std::atomic<rpma_log_function *> custom_function{nullptr};

constexpr const char *kLevelNames[] = {"FATAL", "ERROR", "WARNING", "NOTICE", "INFO", "DEBUG"};
constexpr int kSyslogSeverity[] = {LOG_CRIT, LOG_ERR, LOG_WARNING, LOG_NOTICE, LOG_INFO, LOG_DEBUG};

bool IsValidThreshold(enum rpma_log_threshold threshold) {
    return threshold == RPMA_LOG_THRESHOLD || threshold == RPMA_LOG_THRESHOLD_AUX;
}

bool IsValidLevel(enum rpma_log_level level) {
    return level >= RPMA_LOG_DISABLED && level <= RPMA_LOG_LEVEL_DEBUG;
}

// "2026-12-02 13:17:43.123456"
void FormatTimestamp(char *buf, size_t size) {
    timespec ts{};
    tm local{};
    if (clock_gettime(CLOCK_REALTIME, &ts) != 0 || localtime_r(&ts.tv_sec, &local) == nullptr ||
        strftime(buf, size, "%F %T", &local) == 0) {
        snprintf(buf, size, "unknown time");
        return;
    }
    size_t used = strlen(buf);
    snprintf(buf + used, size - used, ".%06ld", ts.tv_nsec / 1000);
}

// The default destination: syslog (the caller already checked the primary
// threshold) and, for levels within the auxiliary threshold, stderr.
void DefaultFunction(enum rpma_log_level level, const char *file, int line, const char *function,
                     const char *format, va_list args) {
    char message[1024];
    if (vsnprintf(message, sizeof(message), format, args) < 0)
        return;

    char origin[256] = "";
    if (file != nullptr) {
        const char *base = strrchr(file, '/');
        snprintf(origin, sizeof(origin), "%s:%d %s(): ", base ? base + 1 : file, line, function);
    }

    syslog(LOG_LOCAL7 | kSyslogSeverity[level], "%s*%s*: %s", origin, kLevelNames[level], message);
    if (level <= thresholds[RPMA_LOG_THRESHOLD_AUX].load(std::memory_order_relaxed)) {
        char timestamp[64];
        FormatTimestamp(timestamp, sizeof(timestamp));
        fprintf(stderr, "[%s] %s*%s*: %s\n", timestamp, origin, kLevelNames[level], message);
    }
}

void WriteV(enum rpma_log_level level, const char *file, int line, const char *function,
            const char *format, va_list args) {
    if (level < RPMA_LOG_LEVEL_FATAL || level > RPMA_LOG_LEVEL_DEBUG || format == nullptr)
        return;
    rpma_log_function *custom = custom_function.load(std::memory_order_acquire);
    if (custom == nullptr) {
        DefaultFunction(level, file, line, function, format, args);
    } else {
        // rpma_log_function is variadic, so the message is formatted here
        // and handed over as a plain "%s" argument.
        char message[1024];
        if (vsnprintf(message, sizeof(message), format, args) >= 0)
            custom(level, file, line, function, "%s", message);
    }
}

}  // namespace

namespace rpma::log {

bool Enabled(enum rpma_log_level level) {
    return level <= thresholds[RPMA_LOG_THRESHOLD].load(std::memory_order_relaxed);
}

void Write(enum rpma_log_level level, const char *file, int line, const char *function,
           const char *format, ...) {
    va_list args;
    va_start(args, format);
    WriteV(level, file, line, function, format, args);
    va_end(args);
}

bool RateLimit::Admit(Clock::time_point now, uint64_t *suppressed) {
    std::lock_guard lock(mu_);
    *suppressed = 0;
    if (!started_ || now - interval_start_ >= kInterval) {
        started_ = true;
        interval_start_ = now;
        written_ = 1;
        *suppressed = std::exchange(suppressed_, 0);
        return true;
    }
    if (written_ < kBurst) {
        ++written_;
        return true;
    }
    ++suppressed_;
    return false;
}

void WriteLimited(RateLimit &limit, RateLimit::Clock::time_point now, enum rpma_log_level level,
                  const char *file, int line, const char *function, const char *format, ...) {
    uint64_t suppressed = 0;
    if (!limit.Admit(now, &suppressed))
        return;
    if (suppressed > 0)
        Write(level, file, line, function, "suppressed %llu similar messages",
              static_cast<unsigned long long>(suppressed));
    va_list args;
    va_start(args, format);
    WriteV(level, file, line, function, format, args);
    va_end(args);
}

}  // namespace rpma::log

int rpma_log_set_threshold(enum rpma_log_threshold threshold, enum rpma_log_level level) {
    if (!IsValidThreshold(threshold) || !IsValidLevel(level))
        return RPMA_E_INVAL;
    thresholds[threshold].store(level, std::memory_order_relaxed);
    return 0;
}

int rpma_log_get_threshold(enum rpma_log_threshold threshold, enum rpma_log_level *level) {
    if (!IsValidThreshold(threshold) || level == nullptr)
        return RPMA_E_INVAL;
    *level =
        static_cast<enum rpma_log_level>(thresholds[threshold].load(std::memory_order_relaxed));
    return 0;
}

int rpma_log_set_function(rpma_log_function *log_function) {
    custom_function.store(log_function, std::memory_order_release);
    return 0;
}
