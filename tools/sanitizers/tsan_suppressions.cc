// ThreadSanitizer asks every binary for default suppressions through this
// function. Each entry is a report that is not a race in our code, with why.
#if defined(__SANITIZE_THREAD__)

extern "C" const char *__tsan_default_suppressions();

extern "C" const char *__tsan_default_suppressions() {
    // gRPC (with gpr and address_sorting), absl, upb and protobuf are
    // Debian's builds, not instrumented: ThreadSanitizer sees none of their
    // own synchronization (absl::Mutex waits on futexes, gRPC hands fds and
    // buffers between its threads through its own queues), only the libc
    // calls they make, whose accesses it then reports as races between
    // their threads (seen: epoll_wait in gRPC's event engine on the epoll fd
    // its main thread created; memmove in absl's deadlock-detection graph,
    // under absl's own lock). called_from_lib ignores the accesses of the
    // libc functions these libraries call; their calls into our code
    // (service handlers, callbacks) stay checked.
    return "called_from_lib:libgrpc\n"
           "called_from_lib:libgpr\n"
           "called_from_lib:libaddress_sorting\n"
           "called_from_lib:libabsl_\n"
           "called_from_lib:libupb\n"
           "called_from_lib:libprotobuf\n";
}

#endif
