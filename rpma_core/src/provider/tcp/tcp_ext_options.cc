// SetOptions and GetOptions (tcp_ops.h): the knobs of tcp_options.h as
// rpma_ext_tcp_options carries them.
#include <cerrno>
#include <cstddef>

#include "rpma_core/src/log.h"
#include "rpma_core/src/provider/tcp/tcp_ops.h"
#include "rpma_core/src/provider/tcp/tcp_options.h"

namespace rpma::provider::tcp {
namespace {

// A field of rpma_ext_tcp_options and the knob it stands for.
struct Field {
    size_t offset;
    Knob (*knob)();
};

constexpr Field kFields[] = {
    {offsetof(rpma_ext_tcp_options, timeout_ms), RequestTimeoutKnob},
    {offsetof(rpma_ext_tcp_options, max_handshaking), MaxHandshakingKnob},
    {offsetof(rpma_ext_tcp_options, max_pending), MaxPendingKnob},
    {offsetof(rpma_ext_tcp_options, persist_threads), PersistThreadsKnob},
    {offsetof(rpma_ext_tcp_options, inline_linger_us), InlineLingerKnob},
};

constexpr size_t kMinSize = offsetof(rpma_ext_tcp_options, timeout_ms) + sizeof(int);

// Whether the caller's struct, of `size` bytes, holds the field.
bool Holds(size_t size, const Field &field) {
    return field.offset + sizeof(int) <= size;
}

int *At(rpma_ext_tcp_options *opts, const Field &field) {
    return reinterpret_cast<int *>(reinterpret_cast<char *>(opts) + field.offset);
}

const int *At(const rpma_ext_tcp_options *opts, const Field &field) {
    return reinterpret_cast<const int *>(reinterpret_cast<const char *>(opts) + field.offset);
}

bool ValidSize(const void *opts, size_t size) {
    if (opts != nullptr && size >= kMinSize)
        return true;
    RPMA_LOG_ERROR(
        "the tcp options are NULL or their size (%zu) is too small; set size to "
        "sizeof(struct rpma_ext_tcp_options)",
        opts != nullptr ? size : 0);
    return false;
}

}  // namespace

int SetOptions(const rpma_ext_tcp_options *opts) {
    if (!ValidSize(opts, opts != nullptr ? opts->size : 0))
        return EINVAL;
    // Every value is checked before any is set: a bad one changes nothing.
    for (const Field &field : kFields) {
        if (!Holds(opts->size, field))
            continue;
        const int value = *At(opts, field);
        const Knob knob = field.knob();
        if (value != -1 && !knob.InRange(value)) {
            RPMA_LOG_ERROR(
                "the tcp option of %s cannot be %d: it takes %s%s, %d to %d, or -1 "
                "to leave it unchanged; nothing was changed",
                knob.variable, value, knob.zero_means_off ? "0 (off) or " : "", knob.unit, knob.min,
                knob.max);
            return EINVAL;
        }
    }
    for (const Field &field : kFields) {
        if (Holds(opts->size, field) && *At(opts, field) != -1)
            field.knob().value.store(*At(opts, field));
    }
    return 0;
}

int GetOptions(rpma_ext_tcp_options *opts) {
    if (!ValidSize(opts, opts != nullptr ? opts->size : 0))
        return EINVAL;
    for (const Field &field : kFields) {
        if (Holds(opts->size, field))
            *At(opts, field) = field.knob().value.load();
    }
    return 0;
}

}  // namespace rpma::provider::tcp
