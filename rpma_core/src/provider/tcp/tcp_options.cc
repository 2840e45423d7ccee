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

// A knob read from the environment: its variable, unit, range and default.
struct Spec {
    const char *variable;
    const char *unit;
    int min;
    int max;
    int fallback;
};

// The value of `spec`'s variable when that is set and in range, else its
// default; anything else is ignored with a warning.
int FromEnvironment(const Spec &spec) {
    const char *text = getenv(spec.variable);
    if (text == nullptr)
        return spec.fallback;
    char *end = nullptr;
    errno = 0;
    const long parsed = strtol(text, &end, 10);
    if (end != text && *end == '\0' && errno == 0 && parsed >= spec.min && parsed <= spec.max)
        return static_cast<int>(parsed);
    RPMA_LOG_WARNING("ignoring %s=%s (%s, %d to %d)", spec.variable, text, spec.unit, spec.min,
                     spec.max);
    return spec.fallback;
}

// One process-wide value per Spec, from the environment at first use.
template <const Spec &kSpec>
Knob Define() {
    static std::atomic<int> value{FromEnvironment(kSpec)};
    return {kSpec.variable, kSpec.unit, kSpec.min, kSpec.max, false, value};
}

constexpr int kMaxLimit = static_cast<int>(ListenerLimits::kMaxLimit);
constexpr Spec kInlineLinger{"RPMA_TCP_INLINE_LINGER_US", "microseconds", 0, 10000000,
                             static_cast<int>(Device::kDefaultInlineLinger.count())};
constexpr Spec kMaxPending{"RPMA_TCP_MAX_PENDING", "connection requests", 1, kMaxLimit,
                           static_cast<int>(ListenerLimits::kDefaultMaxPending)};
constexpr Spec kMaxHandshaking{"RPMA_TCP_MAX_HANDSHAKING", "connections", 1, kMaxLimit,
                               static_cast<int>(ListenerLimits::kDefaultMaxHandshaking)};
constexpr Spec kPersistThreads{"RPMA_TCP_PERSIST_THREADS", "threads", 1,
                               PersistWorkers::kMaxThreads, PersistWorkers::kDefaultThreads};

}  // namespace

Knob InlineLingerKnob() {
    return Define<kInlineLinger>();
}

Knob MaxPendingKnob() {
    return Define<kMaxPending>();
}

Knob MaxHandshakingKnob() {
    return Define<kMaxHandshaking>();
}

Knob PersistThreadsKnob() {
    return Define<kPersistThreads>();
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
