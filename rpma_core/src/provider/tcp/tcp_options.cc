#include "rpma_core/src/provider/tcp/tcp_options.h"

#include <cerrno>
#include <cstdlib>

#include "rpma_core/src/log.h"
#include "rpma_core/src/provider/tcp/tcp_device.h"
#include "rpma_core/src/provider/tcp/tcp_listener.h"
#include "rpma_core/src/provider/tcp/tcp_liveness.h"
#include "rpma_core/src/provider/tcp/tcp_persist_workers.h"

namespace rpma::provider::tcp {
namespace {

// `knob` with its value from its variable when that is set and in range,
// else `fallback`; anything else is ignored with a warning.
Knob Initialized(const Knob &knob, int fallback) {
    int value = fallback;
    if (const char *text = getenv(knob.variable); text != nullptr) {
        char *end = nullptr;
        errno = 0;
        const long parsed = strtol(text, &end, 10);
        if (end != text && *end == '\0' && errno == 0 && parsed >= knob.min && parsed <= knob.max)
            value = static_cast<int>(parsed);
        else
            RPMA_LOG_WARNING("ignoring %s=%s (%s, %d to %d)", knob.variable, text, knob.unit,
                             knob.min, knob.max);
    }
    knob.value.store(value);
    return knob;
}

constexpr int kMaxLimit = static_cast<int>(ListenerLimits::kMaxLimit);

}  // namespace

Knob InlineLingerKnob() {
    static std::atomic<int> value;
    static const Knob knob =
        Initialized({"RPMA_TCP_INLINE_LINGER_US", "microseconds", 0, 10000000, false, value},
                    static_cast<int>(Device::kDefaultInlineLinger.count()));
    return knob;
}

Knob MaxPendingKnob() {
    static std::atomic<int> value;
    static const Knob knob =
        Initialized({"RPMA_TCP_MAX_PENDING", "connection requests", 1, kMaxLimit, false, value},
                    static_cast<int>(ListenerLimits::kDefaultMaxPending));
    return knob;
}

Knob MaxHandshakingKnob() {
    static std::atomic<int> value;
    static const Knob knob =
        Initialized({"RPMA_TCP_MAX_HANDSHAKING", "connections", 1, kMaxLimit, false, value},
                    static_cast<int>(ListenerLimits::kDefaultMaxHandshaking));
    return knob;
}

Knob PersistThreadsKnob() {
    static std::atomic<int> value;
    static const Knob knob = Initialized(
        {"RPMA_TCP_PERSIST_THREADS", "threads", 1, PersistWorkers::kMaxThreads, false, value},
        PersistWorkers::kDefaultThreads);
    return knob;
}

// Its variable has its own parser (tcp_liveness.h), which takes 0 (off) too.
Knob RequestTimeoutKnob() {
    return {kRequestTimeoutVariable,
            "milliseconds",
            static_cast<int>(kMinRequestTimeout.count()),
            static_cast<int>(kMaxRequestTimeout.count()),
            true,
            RequestTimeoutMs()};
}

}  // namespace rpma::provider::tcp
