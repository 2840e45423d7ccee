// ThreadSanitizer asks every binary for default suppressions through this
// function. Each entry is a report that is not a race in our code, with why.
#if defined(__SANITIZE_THREAD__)

extern "C" const char *__tsan_default_suppressions();

extern "C" const char *__tsan_default_suppressions() {
    // gRPC (with gpr, address_sorting, c-ares, re2), absl, upb and protobuf are
    // Debian's builds, not instrumented: ThreadSanitizer sees none of their
    // own synchronization (absl::Mutex waits on futexes, gRPC hands fds and
    // buffers between its threads through its own queues), only the libc
    // calls they make, whose accesses it then reports as races between
    // their threads (seen: epoll_wait in gRPC's event engine on the epoll fd
    // its main thread created; memmove in absl's deadlock-detection graph,
    // under absl's own lock). called_from_lib ignores the accesses of the
    // libc functions these libraries call; their calls into our code
    // (service handlers, callbacks) stay checked.
    // One entry per library (an entry matching two is an error); those
    // that rpmad and the client tests load (gRPC's c-ares and re2 too).
    return
        // absl::Mutex's deadlock-detection graph, updated under absl's own
        // spinlock (futex, invisible); its memmove is not caught by
        // called_from_lib (seen with two gRPC threads in every gRPC client).
        "race:synchronization_internal::GraphCycles::\n"
        // gRPC's epoll_wait on the epoll fd its main thread created: the fd
        // is handed to the poller thread through gRPC's own (invisible)
        // synchronization, and called_from_lib does not always catch it.
        "race:grpc_event_engine::posix_engine::Epoll1Poller::DoEpollWait\n"
        // gRPC's call machinery in its headers (CallOpSet: sending and
        // receiving a call's metadata, message and status), compiled into
        // our binaries: gRPC core runs a call's ops on its threads and hands
        // them over through its completion queues, both invisible, and
        // reuses memory it freed (seen: a client's status message copied in
        // CallOpClientRecvStatus::FinishOp, reported against another call's
        // buffer at that address; rpmad's health service, a callback
        // handler, finishing a call on another gRPC thread than started it).
        "race:grpc::internal::CallOpSet\n"
        // Built as C++20, our binaries instantiate std::string's members
        // themselves (libstdc++ declares them extern only up to C++17),
        // instrumented, and export them: the uninstrumented gRPC and absl
        // libraries bind to those copies (LD_DEBUG=bindings shows it), so
        // ThreadSanitizer sees gRPC core copy its own strings between its
        // threads, without the synchronization it does in between, and
        // without the frees it does of that memory before reusing it (seen
        // in rpmactl: _M_assign called from libgrpc.so, racing with an
        // earlier call's string at the same address).
        "race:std::__cxx11::basic_string<char, std::char_traits<char>, "
        "std::allocator<char> >::_M_assign\n"
        // gRPC's own threads (its executor, timer manager, event engine),
        // started by libgpr and not joined when a short-lived program such
        // as rpmactl exits: gRPC shuts them down on its own schedule.
        "thread:libgpr.so\n"
        "called_from_lib:libgrpc.so\n"
        // gRPC's TLS (rpmad_tls_test, rpmactl_test): OpenSSL, Debian's build.
        "called_from_lib:libssl.so\n"
        "called_from_lib:libcrypto.so\n"
        "called_from_lib:libgrpc++.so\n"
        "called_from_lib:libgrpc++_reflection.so\n"
        "called_from_lib:libgpr.so\n"
        "called_from_lib:libaddress_sorting.so\n"
        "called_from_lib:libcares.so\n"
        "called_from_lib:libre2.so\n"
        "called_from_lib:libupb.so\n"
        "called_from_lib:libprotobuf.so\n"
        "called_from_lib:libabsl_bad_optional_access.so\n"
        "called_from_lib:libabsl_bad_variant_access.so\n"
        "called_from_lib:libabsl_base.so\n"
        "called_from_lib:libabsl_city.so\n"
        "called_from_lib:libabsl_civil_time.so\n"
        "called_from_lib:libabsl_cord.so\n"
        "called_from_lib:libabsl_cord_internal.so\n"
        "called_from_lib:libabsl_cordz_functions.so\n"
        "called_from_lib:libabsl_cordz_handle.so\n"
        "called_from_lib:libabsl_cordz_info.so\n"
        "called_from_lib:libabsl_debugging_internal.so\n"
        "called_from_lib:libabsl_demangle_internal.so\n"
        "called_from_lib:libabsl_exponential_biased.so\n"
        "called_from_lib:libabsl_graphcycles_internal.so\n"
        "called_from_lib:libabsl_hash.so\n"
        "called_from_lib:libabsl_hashtablez_sampler.so\n"
        "called_from_lib:libabsl_int128.so\n"
        "called_from_lib:libabsl_log_severity.so\n"
        "called_from_lib:libabsl_low_level_hash.so\n"
        "called_from_lib:libabsl_malloc_internal.so\n"
        "called_from_lib:libabsl_random_distributions.so\n"
        "called_from_lib:libabsl_random_internal_platform.so\n"
        "called_from_lib:libabsl_random_internal_pool_urbg.so\n"
        "called_from_lib:libabsl_random_internal_randen.so\n"
        "called_from_lib:libabsl_random_internal_randen_hwaes.so\n"
        "called_from_lib:libabsl_random_internal_randen_hwaes_impl.so\n"
        "called_from_lib:libabsl_random_internal_randen_slow.so\n"
        "called_from_lib:libabsl_random_internal_seed_material.so\n"
        "called_from_lib:libabsl_random_seed_gen_exception.so\n"
        "called_from_lib:libabsl_random_seed_sequences.so\n"
        "called_from_lib:libabsl_raw_hash_set.so\n"
        "called_from_lib:libabsl_raw_logging_internal.so\n"
        "called_from_lib:libabsl_spinlock_wait.so\n"
        "called_from_lib:libabsl_stacktrace.so\n"
        "called_from_lib:libabsl_status.so\n"
        "called_from_lib:libabsl_statusor.so\n"
        "called_from_lib:libabsl_str_format_internal.so\n"
        "called_from_lib:libabsl_strerror.so\n"
        "called_from_lib:libabsl_strings.so\n"
        "called_from_lib:libabsl_strings_internal.so\n"
        "called_from_lib:libabsl_symbolize.so\n"
        "called_from_lib:libabsl_synchronization.so\n"
        "called_from_lib:libabsl_throw_delegate.so\n"
        "called_from_lib:libabsl_time.so\n"
        "called_from_lib:libabsl_time_zone.so\n";
}

#endif
