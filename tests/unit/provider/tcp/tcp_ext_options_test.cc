// rpma_ext_tcp_set_options / rpma_ext_tcp_get_options: the tcp provider's
// knobs for a program. The BUILD file sets RPMA_TCP_MAX_PENDING=5 and an
// invalid RPMA_TCP_PERSIST_THREADS for the whole binary.
#include <gtest/gtest.h>

#include <chrono>
#include <cstddef>

#include "rpma_core/src/provider/tcp/tcp_device.h"
#include "rpma_core/src/provider/tcp/tcp_liveness.h"
#include "rpma_core/src/provider/tcp/tcp_persist_workers.h"
#include "rpma_ext.h"

namespace rpma::provider::tcp {
namespace {

rpma_ext_tcp_options Unchanged() {
    rpma_ext_tcp_options opts;
    opts.size = sizeof(opts);
    opts.timeout_ms = -1;
    opts.max_handshaking = -1;
    opts.max_pending = -1;
    opts.persist_threads = -1;
    opts.inline_linger_us = -1;
    return opts;
}

rpma_ext_tcp_options Current() {
    rpma_ext_tcp_options opts{};
    opts.size = sizeof(opts);
    EXPECT_EQ(rpma_ext_tcp_get_options(&opts), 0);
    return opts;
}

bool Same(const rpma_ext_tcp_options &a, const rpma_ext_tcp_options &b) {
    return a.timeout_ms == b.timeout_ms && a.max_handshaking == b.max_handshaking &&
           a.max_pending == b.max_pending && a.persist_threads == b.persist_threads &&
           a.inline_linger_us == b.inline_linger_us;
}

// First in the binary (gtest runs tests in order of definition): nothing
// has set a knob yet.
TEST(TcpOptions, StartFromTheEnvironmentOrTheDefaults) {
    const rpma_ext_tcp_options now = Current();
    EXPECT_EQ(now.max_pending, 5) << "RPMA_TCP_MAX_PENDING=5";
    EXPECT_EQ(now.persist_threads, PersistWorkers::kDefaultThreads) << "invalid: ignored";
    EXPECT_EQ(now.max_handshaking, 128);
    EXPECT_EQ(now.timeout_ms, 4000);
    EXPECT_EQ(now.inline_linger_us, 1000);
}

TEST(TcpOptions, ASetWinsOverTheEnvironmentAndReachesWhatReadsIt) {
    rpma_ext_tcp_options opts = Unchanged();
    opts.max_pending = 7;
    opts.timeout_ms = 0;
    opts.inline_linger_us = 250;
    ASSERT_EQ(rpma_ext_tcp_set_options(&opts), 0);
    const rpma_ext_tcp_options now = Current();
    EXPECT_EQ(now.max_pending, 7);
    EXPECT_EQ(now.timeout_ms, 0);
    EXPECT_EQ(now.inline_linger_us, 250);
    EXPECT_EQ(RequestTimeoutMs().load(), 0);
    EXPECT_EQ(GetDevice().InlineLinger(), std::chrono::microseconds(250));
    // ... and the other way: the provider's own setter shows in get.
    GetDevice().SetInlineLinger(std::chrono::microseconds(1000));
    EXPECT_EQ(Current().inline_linger_us, 1000);
}

TEST(TcpOptions, MinusOneLeavesAKnobAsItIs) {
    const rpma_ext_tcp_options before = Current();
    const rpma_ext_tcp_options opts = Unchanged();
    ASSERT_EQ(rpma_ext_tcp_set_options(&opts), 0);
    EXPECT_TRUE(Same(Current(), before));
}

TEST(TcpOptions, OneValueOutOfRangeChangesNothing) {
    const rpma_ext_tcp_options before = Current();
    const struct {
        int rpma_ext_tcp_options::*field;
        int value;
    } bad[] = {
        {&rpma_ext_tcp_options::timeout_ms, 9},
        {&rpma_ext_tcp_options::timeout_ms, 3600001},
        {&rpma_ext_tcp_options::max_handshaking, 0},
        {&rpma_ext_tcp_options::max_pending, 65537},
        {&rpma_ext_tcp_options::persist_threads, 65},
        {&rpma_ext_tcp_options::inline_linger_us, -2},
        {&rpma_ext_tcp_options::inline_linger_us, 10000001},
    };
    for (const auto &[field, value] : bad) {
        rpma_ext_tcp_options opts = Unchanged();
        opts.max_pending = 9;  // valid, and must not be set either
        opts.*field = value;
        EXPECT_EQ(rpma_ext_tcp_set_options(&opts), RPMA_E_INVAL) << value;
        EXPECT_TRUE(Same(Current(), before)) << value;
    }
}

TEST(TcpOptions, FieldsBeyondSizeAreLeftAlone) {
    const rpma_ext_tcp_options before = Current();
    rpma_ext_tcp_options opts = Unchanged();
    opts.size = offsetof(rpma_ext_tcp_options, max_handshaking);
    opts.timeout_ms = 20;
    opts.max_pending = 0;  // beyond size: neither checked nor set
    ASSERT_EQ(rpma_ext_tcp_set_options(&opts), 0);
    EXPECT_EQ(Current().timeout_ms, 20);
    EXPECT_EQ(Current().max_pending, before.max_pending);

    rpma_ext_tcp_options got = Unchanged();
    got.size = offsetof(rpma_ext_tcp_options, max_handshaking);
    ASSERT_EQ(rpma_ext_tcp_get_options(&got), 0);
    EXPECT_EQ(got.timeout_ms, 20);
    EXPECT_EQ(got.max_handshaking, -1) << "not written";

    opts = Unchanged();
    opts.timeout_ms = before.timeout_ms;
    ASSERT_EQ(rpma_ext_tcp_set_options(&opts), 0);
}

TEST(TcpOptions, BadArgumentsAreInvalid) {
    EXPECT_EQ(rpma_ext_tcp_set_options(nullptr), RPMA_E_INVAL);
    EXPECT_EQ(rpma_ext_tcp_get_options(nullptr), RPMA_E_INVAL);
    rpma_ext_tcp_options opts = Unchanged();
    opts.size = offsetof(rpma_ext_tcp_options, timeout_ms);
    EXPECT_EQ(rpma_ext_tcp_set_options(&opts), RPMA_E_INVAL);
    EXPECT_EQ(rpma_ext_tcp_get_options(&opts), RPMA_E_INVAL);
}

// The pool takes its size when it starts and keeps it.
TEST(TcpOptions, PersistThreadsApplyUntilThePoolStarts) {
    std::atomic<int> threads{3};
    PersistWorkers workers(threads);
    EXPECT_EQ(workers.Threads(), 3);
    threads.store(4);
    EXPECT_EQ(workers.Threads(), 4);
    std::atomic<bool> ran{false};
    workers.Submit([&ran] { ran.store(true); });
    threads.store(1);
    EXPECT_EQ(workers.Threads(), 4);
}

}  // namespace
}  // namespace rpma::provider::tcp
