// ThreadSanitizer's view of one-sided operations. A WRITE's bytes land in the
// target's region on the target's progress thread and the initiator learns of
// it from the ACK, through the socket: a happens-before that ThreadSanitizer
// cannot see (nor for a READ, whose bytes the target reads after the
// initiator's application wrote them). When both ends are in one process
// (tests), that order is made visible: the initiator publishes at post and
// observes at completion, the target observes a request before applying it
// and publishes once applied, all on one clock per rkey. Without
// ThreadSanitizer these are empty.
#ifndef RPMA_CORE_SRC_PROVIDER_TCP_TCP_TSAN_H
#define RPMA_CORE_SRC_PROVIDER_TCP_TCP_TSAN_H

#include <cstdint>

#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
#endif

namespace rpma::provider::tcp::tsan {

#if defined(__SANITIZE_THREAD__)
// The clock of the regions with this rkey (of any process-local device: two
// rkeys sharing a slot only order more than needed, which hides nothing the
// tests look for).
inline void *RegionClock(uint32_t rkey) {
    static char clocks[4096];
    return &clocks[rkey % sizeof(clocks)];
}
// rkey 0 is no region's (a SEND's header): nothing to order.
inline void Publish(uint32_t rkey) {
    if (rkey != 0)
        __tsan_release(RegionClock(rkey));
}
inline void Observe(uint32_t rkey) {
    if (rkey != 0)
        __tsan_acquire(RegionClock(rkey));
}
#else
inline void Publish(uint32_t) {}
inline void Observe(uint32_t) {}
#endif

}  // namespace rpma::provider::tcp::tsan

#endif  // RPMA_CORE_SRC_PROVIDER_TCP_TCP_TSAN_H
