// AddressSanitizer's view of what the sockets' system calls read. The
// provider sends with syscall(2) (tcp_socket.h), which ASan does not
// intercept, so a send from freed memory (a buffer freed while a message
// from it was still queued) would reach the peer unreported; under ASan
// each send first checks the bytes it hands the kernel, as ASan's own
// send/sendmsg interceptors do. Nothing at all in other builds.
#ifndef RPMA_CORE_SRC_PROVIDER_TCP_TCP_ASAN_H
#define RPMA_CORE_SRC_PROVIDER_TCP_TCP_ASAN_H

#include <sys/socket.h>

#include <cstddef>

#if defined(__SANITIZE_ADDRESS__)
#define RPMA_TCP_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RPMA_TCP_ASAN 1
#endif
#endif

#ifdef RPMA_TCP_ASAN
#include <sanitizer/asan_interface.h>
#endif

namespace rpma::provider::tcp {

#ifdef RPMA_TCP_ASAN
// Reports (and ends the process, as any ASan report) a read of [data, data +
// length) that touches poisoned memory, with the caller's stack.
[[gnu::noinline]] inline void AsanCheckRead(const void *data, size_t length) {
    if (void *bad = __asan_region_is_poisoned(const_cast<void *>(data), length))
        __asan_report_error(__builtin_return_address(0), __builtin_frame_address(0),
                            __builtin_frame_address(0), bad, /*is_write=*/0, 1);
}
#else
inline void AsanCheckRead(const void *, size_t) {}
#endif

inline void AsanCheckRead(const msghdr *message) {
#ifdef RPMA_TCP_ASAN
    for (size_t i = 0; i < message->msg_iovlen; ++i)
        AsanCheckRead(message->msg_iov[i].iov_base, message->msg_iov[i].iov_len);
#else
    (void)message;
#endif
}

}  // namespace rpma::provider::tcp

#endif  // RPMA_CORE_SRC_PROVIDER_TCP_TCP_ASAN_H
