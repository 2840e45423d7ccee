// What the harnesses here share: a check that crashes loudly, so that
// libFuzzer saves the input, and logging that formats every message (the
// formatting runs under the sanitizers too) but prints none.
#ifndef TESTS_FUZZ_FUZZ_SUPPORT_H
#define TESTS_FUZZ_FUZZ_SUPPORT_H

#include <cstdarg>
#include <cstdio>
#include <cstdlib>

#include "librpma.h"

#define FUZZ_CHECK(condition)                                                                   \
    do {                                                                                        \
        if (!(condition)) {                                                                     \
            fprintf(stderr, "%s:%d: invariant violated: %s\n", __FILE__, __LINE__, #condition); \
            abort();                                                                            \
        }                                                                                       \
    } while (0)

namespace rpma_fuzz {

inline void DiscardLogMessage(enum rpma_log_level, const char *, const int, const char *,
                              const char *format, ...) {
    char message[1024];
    va_list args;
    va_start(args, format);
    vsnprintf(message, sizeof(message), format, args);
    va_end(args);
}

// Every level reaches the no-op function, so every log statement runs.
inline void RouteLoggingToNowhere() {
    FUZZ_CHECK(rpma_log_set_function(DiscardLogMessage) == 0);
    FUZZ_CHECK(rpma_log_set_threshold(RPMA_LOG_THRESHOLD, RPMA_LOG_LEVEL_DEBUG) == 0);
}

}  // namespace rpma_fuzz

#endif  // TESTS_FUZZ_FUZZ_SUPPORT_H
