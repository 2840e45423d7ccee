// The tcp provider's process-wide knobs. Each starts, when first read, from
// its environment variable (RPMA_TCP_*; an invalid value is ignored with a
// warning) or its default; a program replaces it with
// rpma_ext_tcp_set_options (tcp_ext_options.cc), which thus wins over the
// environment. Who reads each, and so what a later change affects, is said
// at each.
#ifndef RPMA_CORE_SRC_PROVIDER_TCP_TCP_OPTIONS_H
#define RPMA_CORE_SRC_PROVIDER_TCP_TCP_OPTIONS_H

#include <atomic>

namespace rpma::provider::tcp {

// One knob: its variable, the range a program or the environment may set,
// and its value.
struct Knob {
    const char *variable;
    const char *unit;
    int min;
    int max;
    bool zero_means_off;  // 0 is accepted too, below min
    std::atomic<int> &value;

    bool InRange(int v) const { return (zero_means_off && v == 0) || (v >= min && v <= max); }
};

// RPMA_TCP_INLINE_LINGER_US (Device::SetInlineLinger): read at every inline
// wait, so a change applies from the next one on, on every connection.
Knob InlineLingerKnob();
// RPMA_TCP_MAX_PENDING, RPMA_TCP_MAX_HANDSHAKING (ListenerLimits): read when
// a listener is created.
Knob MaxPendingKnob();
Knob MaxHandshakingKnob();
// RPMA_TCP_PERSIST_THREADS (PersistWorkers): read when the pool starts, at
// the first flush that goes off the progress thread; it keeps its size.
Knob PersistThreadsKnob();
// RPMA_TCP_TIMEOUT_MS (RequestTimeoutMs in tcp_liveness.h): read when a
// connection is established.
Knob RequestTimeoutKnob();

}  // namespace rpma::provider::tcp

#endif  // RPMA_CORE_SRC_PROVIDER_TCP_TCP_OPTIONS_H
