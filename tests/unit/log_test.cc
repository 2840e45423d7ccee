#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <string>
#include <vector>

#include "librpma.h"
#include "rpma_core/src/log.h"

namespace {

struct Captured {
    rpma_log_level level;
    std::string file;
    int line;
    std::string function;
    std::string message;
};

std::vector<Captured> captured;

void Capture(enum rpma_log_level level, const char *file, const int line, const char *function,
             const char *format, ...) {
    char message[1024];
    va_list args;
    va_start(args, format);
    vsnprintf(message, sizeof(message), format, args);
    va_end(args);
    captured.push_back({level, file ? file : "", line, function ? function : "", message});
}

// Makes the library log one ERROR: a too-short memory region descriptor.
void TriggerErrorMessage() {
    unsigned char desc[4] = {};
    rpma_mr_remote *mr = nullptr;
    ASSERT_EQ(rpma_mr_remote_from_descriptor(desc, sizeof(desc), &mr), RPMA_E_INVAL);
}

class Log : public ::testing::Test {
  protected:
    void SetUp() override { captured.clear(); }
    void TearDown() override {
        EXPECT_EQ(rpma_log_set_function(RPMA_LOG_USE_DEFAULT_FUNCTION), 0);
        EXPECT_EQ(rpma_log_set_threshold(RPMA_LOG_THRESHOLD, RPMA_LOG_LEVEL_WARNING), 0);
        EXPECT_EQ(rpma_log_set_threshold(RPMA_LOG_THRESHOLD_AUX, RPMA_LOG_DISABLED), 0);
    }
};

TEST_F(Log, DefaultThresholdsAreWarningAndDisabled) {
    rpma_log_level level;
    ASSERT_EQ(rpma_log_get_threshold(RPMA_LOG_THRESHOLD, &level), 0);
    EXPECT_EQ(level, RPMA_LOG_LEVEL_WARNING);
    ASSERT_EQ(rpma_log_get_threshold(RPMA_LOG_THRESHOLD_AUX, &level), 0);
    EXPECT_EQ(level, RPMA_LOG_DISABLED);
}

TEST_F(Log, ThresholdsRoundTripForEveryLevel) {
    for (rpma_log_threshold threshold : {RPMA_LOG_THRESHOLD, RPMA_LOG_THRESHOLD_AUX}) {
        for (int l = RPMA_LOG_DISABLED; l <= RPMA_LOG_LEVEL_DEBUG; ++l) {
            rpma_log_level level = static_cast<rpma_log_level>(l);
            ASSERT_EQ(rpma_log_set_threshold(threshold, level), 0);
            rpma_log_level read;
            ASSERT_EQ(rpma_log_get_threshold(threshold, &read), 0);
            EXPECT_EQ(read, level);
        }
    }
}

TEST_F(Log, InvalidThresholdOrLevelIsRejectedAndChangesNothing) {
    ASSERT_EQ(rpma_log_set_threshold(RPMA_LOG_THRESHOLD, RPMA_LOG_LEVEL_NOTICE), 0);
    EXPECT_EQ(rpma_log_set_threshold(RPMA_LOG_THRESHOLD_MAX, RPMA_LOG_LEVEL_ERROR), RPMA_E_INVAL);
    EXPECT_EQ(rpma_log_set_threshold(static_cast<rpma_log_threshold>(-1), RPMA_LOG_LEVEL_ERROR),
              RPMA_E_INVAL);
    EXPECT_EQ(rpma_log_set_threshold(RPMA_LOG_THRESHOLD, static_cast<rpma_log_level>(6)),
              RPMA_E_INVAL);
    EXPECT_EQ(rpma_log_set_threshold(RPMA_LOG_THRESHOLD, static_cast<rpma_log_level>(-2)),
              RPMA_E_INVAL);
    rpma_log_level level;
    EXPECT_EQ(rpma_log_get_threshold(RPMA_LOG_THRESHOLD_MAX, &level), RPMA_E_INVAL);
    EXPECT_EQ(rpma_log_get_threshold(RPMA_LOG_THRESHOLD, nullptr), RPMA_E_INVAL);
    ASSERT_EQ(rpma_log_get_threshold(RPMA_LOG_THRESHOLD, &level), 0);
    EXPECT_EQ(level, RPMA_LOG_LEVEL_NOTICE);
}

TEST_F(Log, CustomFunctionGetsLevelOriginAndFormattedMessage) {
    ASSERT_EQ(rpma_log_set_function(Capture), 0);
    TriggerErrorMessage();
    ASSERT_EQ(captured.size(), 1u);
    EXPECT_EQ(captured[0].level, RPMA_LOG_LEVEL_ERROR);
    EXPECT_NE(captured[0].file.find("mr_remote.cc"), std::string::npos) << captured[0].file;
    EXPECT_GT(captured[0].line, 0);
    EXPECT_EQ(captured[0].function, "rpma_mr_remote_from_descriptor");
    EXPECT_EQ(captured[0].message, "memory region descriptor too short: 4 bytes (needs 21)");
}

TEST_F(Log, MessagesAbovethePrimaryThresholdAreNotDelivered) {
    ASSERT_EQ(rpma_log_set_function(Capture), 0);
    ASSERT_EQ(rpma_log_set_threshold(RPMA_LOG_THRESHOLD, RPMA_LOG_LEVEL_FATAL), 0);
    TriggerErrorMessage();
    EXPECT_TRUE(captured.empty());
    ASSERT_EQ(rpma_log_set_threshold(RPMA_LOG_THRESHOLD, RPMA_LOG_DISABLED), 0);
    TriggerErrorMessage();
    EXPECT_TRUE(captured.empty());
}

TEST_F(Log, SettingTheDefaultFunctionStopsTheCustomOne) {
    ASSERT_EQ(rpma_log_set_function(Capture), 0);
    ASSERT_EQ(rpma_log_set_function(RPMA_LOG_USE_DEFAULT_FUNCTION), 0);
    TriggerErrorMessage();
    EXPECT_TRUE(captured.empty());
}

// The default function writes to stderr when the level passes the auxiliary
// threshold, with file:line function() before the message.
TEST_F(Log, DefaultFunctionWritesToStderrWithinTheAuxThreshold) {
    FILE *sink = tmpfile();
    ASSERT_NE(sink, nullptr);
    fflush(stderr);
    int saved = dup(STDERR_FILENO);
    ASSERT_GE(dup2(fileno(sink), STDERR_FILENO), 0);

    ASSERT_EQ(rpma_log_set_threshold(RPMA_LOG_THRESHOLD_AUX, RPMA_LOG_DISABLED), 0);
    TriggerErrorMessage();
    fflush(stderr);
    long quiet_size = ftell(sink);
    ASSERT_EQ(rpma_log_set_threshold(RPMA_LOG_THRESHOLD_AUX, RPMA_LOG_LEVEL_ERROR), 0);
    TriggerErrorMessage();
    fflush(stderr);

    dup2(saved, STDERR_FILENO);
    close(saved);
    std::string written(4096, '\0');
    rewind(sink);
    written.resize(fread(written.data(), 1, written.size(), sink));
    fclose(sink);

    EXPECT_EQ(quiet_size, 0) << "stderr is off while the aux threshold is DISABLED";
    EXPECT_NE(written.find("mr_remote.cc:"), std::string::npos) << written;
    EXPECT_NE(written.find("rpma_mr_remote_from_descriptor(): *ERROR*: memory region descriptor "
                           "too short: 4 bytes (needs 21)"),
              std::string::npos)
        << written;
}

// A peer can provoke some messages at will (one per connection it opens):
// their call sites write a burst, then one line per interval saying how many
// they withheld, so a flood cannot flood the log.
using rpma::log::RateLimit;

TEST(LogRateLimit, AdmitsABurstPerIntervalThenCountsWhatItWithholds) {
    RateLimit limit;
    const RateLimit::Clock::time_point start{std::chrono::hours(1)};
    uint64_t suppressed = 99;
    for (int i = 0; i < RateLimit::kBurst; ++i) {
        ASSERT_TRUE(limit.Admit(start + std::chrono::milliseconds(i), &suppressed)) << i;
        EXPECT_EQ(suppressed, 0u);
    }
    for (int i = 0; i < 6; ++i)
        EXPECT_FALSE(limit.Admit(start + std::chrono::milliseconds(100), &suppressed));
    EXPECT_FALSE(
        limit.Admit(start + RateLimit::kInterval - std::chrono::nanoseconds(1), &suppressed));
    // A new interval: its first line carries the count of the withheld.
    ASSERT_TRUE(limit.Admit(start + RateLimit::kInterval, &suppressed));
    EXPECT_EQ(suppressed, 7u);
    for (int i = 1; i < RateLimit::kBurst; ++i) {
        ASSERT_TRUE(limit.Admit(start + RateLimit::kInterval, &suppressed)) << i;
        EXPECT_EQ(suppressed, 0u);
    }
    EXPECT_FALSE(limit.Admit(start + RateLimit::kInterval, &suppressed));
}

TEST_F(Log, RateLimitedCallSiteWritesABurstAndOtherSitesTheirOwn) {
    ASSERT_EQ(rpma_log_set_function(Capture), 0);
    for (int i = 0; i < 100; ++i) {
        RPMA_LOG_ERROR_RATELIMITED("peer %d misbehaved", i);
        RPMA_LOG_ERROR_RATELIMITED("peer %d misbehaved elsewhere", i);
    }
    ASSERT_EQ(captured.size(), 2u * RateLimit::kBurst);
    for (int i = 0; i < RateLimit::kBurst; ++i) {
        EXPECT_EQ(captured[2 * i].message, "peer " + std::to_string(i) + " misbehaved");
        EXPECT_EQ(captured[2 * i + 1].message,
                  "peer " + std::to_string(i) + " misbehaved elsewhere");
        EXPECT_NE(captured[2 * i].line, captured[2 * i + 1].line);
    }
    EXPECT_EQ(captured[0].level, RPMA_LOG_LEVEL_ERROR);
    EXPECT_NE(captured[0].file.find("log_test.cc"), std::string::npos) << captured[0].file;
}

TEST_F(Log, RateLimitedSiteReportsTheSuppressedCountBeforeItsNextLine) {
    ASSERT_EQ(rpma_log_set_function(Capture), 0);
    RateLimit limit;
    const RateLimit::Clock::time_point start{std::chrono::hours(1)};
    for (int i = 0; i < RateLimit::kBurst + 3; ++i)
        rpma::log::WriteLimited(limit, start, RPMA_LOG_LEVEL_WARNING, "peer.cc", 7, "Read",
                                "peer %d", i);
    ASSERT_EQ(captured.size(), static_cast<size_t>(RateLimit::kBurst));
    captured.clear();
    rpma::log::WriteLimited(limit, start + RateLimit::kInterval, RPMA_LOG_LEVEL_WARNING, "peer.cc",
                            7, "Read", "peer %d", 99);
    ASSERT_EQ(captured.size(), 2u);
    EXPECT_EQ(captured[0].message, "suppressed 3 similar messages");
    EXPECT_EQ(captured[0].level, RPMA_LOG_LEVEL_WARNING);
    EXPECT_EQ(captured[0].file, "peer.cc");
    EXPECT_EQ(captured[0].line, 7);
    EXPECT_EQ(captured[1].message, "peer 99");
}

// A level the threshold turns off costs nothing of the burst.
TEST_F(Log, RateLimitedSiteBelowTheThresholdUsesNoneOfItsBurst) {
    ASSERT_EQ(rpma_log_set_function(Capture), 0);
    ASSERT_EQ(rpma_log_set_threshold(RPMA_LOG_THRESHOLD, RPMA_LOG_LEVEL_ERROR), 0);
    for (int i = 0; i < 40; ++i) {
        if (i == 20) {
            ASSERT_EQ(rpma_log_set_threshold(RPMA_LOG_THRESHOLD, RPMA_LOG_LEVEL_WARNING), 0);
        }
        RPMA_LOG_WARNING_RATELIMITED("peer %d", i);
    }
    ASSERT_EQ(captured.size(), static_cast<size_t>(RateLimit::kBurst));
    EXPECT_EQ(captured[0].message, "peer 20");
}

}  // namespace
