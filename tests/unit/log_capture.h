// Collects what the library logs while a test runs (any provider).
#ifndef TESTS_UNIT_LOG_CAPTURE_H
#define TESTS_UNIT_LOG_CAPTURE_H

#include <cstdarg>
#include <cstdio>
#include <string>
#include <vector>

#include "librpma.h"

namespace rpma_test {

// While alive, every message of every level is recorded instead of logged.
class LogCapture {
  public:
    LogCapture() {
        Messages().clear();
        rpma_log_set_threshold(RPMA_LOG_THRESHOLD, RPMA_LOG_LEVEL_DEBUG);
        rpma_log_set_function(&Record);
    }
    ~LogCapture() {
        rpma_log_set_function(RPMA_LOG_USE_DEFAULT_FUNCTION);
        rpma_log_set_threshold(RPMA_LOG_THRESHOLD, RPMA_LOG_LEVEL_WARNING);
    }
    LogCapture(const LogCapture &) = delete;
    LogCapture &operator=(const LogCapture &) = delete;

    // Whether a recorded message contains `part`.
    bool Contains(const std::string &part) const {
        for (const std::string &message : Messages())
            if (message.find(part) != std::string::npos)
                return true;
        return false;
    }

    // Everything recorded, one message per line.
    std::string Text() const {
        std::string text;
        for (const std::string &message : Messages())
            text += message + "\n";
        return text;
    }

  private:
    static std::vector<std::string> &Messages() {
        static std::vector<std::string> messages;
        return messages;
    }
    static void Record(enum rpma_log_level, const char *, const int, const char *,
                       const char *format, ...) {
        char message[1024];
        va_list args;
        va_start(args, format);
        vsnprintf(message, sizeof(message), format, args);
        va_end(args);
        Messages().push_back(message);
    }
};

}  // namespace rpma_test

#endif  // TESTS_UNIT_LOG_CAPTURE_H
