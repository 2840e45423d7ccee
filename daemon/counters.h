// What rpmad counts for DaemonService.GetStats and the metrics: monotonic
// counters and latency histograms updated by the control and data planes,
// read without stopping them.
#ifndef DAEMON_COUNTERS_H
#define DAEMON_COUNTERS_H

#include <array>
#include <atomic>
#include <cstdint>
#include <string_view>

#include "daemon/latency_histogram.h"

namespace rpmad {

// Why the data plane refused a connection (the label `reason` of
// rpmad_connections_rejected_total): a short, fixed list, so that what a
// peer sends cannot grow the metrics.
enum class Rejection {
    kMalformed,       // no or malformed private data (not an rpmad client, or another version)
    kUnknownSession,  // closed, expired and forgotten, or never opened
    kWrongToken,      // the session exists, the secret is not its
    kTokenReused,     // a token admits one connection
    kTokenExpired,    // not connected within sessions.token_ttl_seconds
    kRegionDeleted,   // the session's region went meanwhile
    kFailed,          // rpmad could not set the connection up
};
inline constexpr size_t kRejectionCount = 7;

// The label value: snake_case, as Prometheus labels are.
constexpr std::string_view RejectionName(Rejection rejection) {
    switch (rejection) {
        case Rejection::kMalformed:
            return "malformed";
        case Rejection::kUnknownSession:
            return "unknown_session";
        case Rejection::kWrongToken:
            return "wrong_token";
        case Rejection::kTokenReused:
            return "token_reused";
        case Rejection::kTokenExpired:
            return "token_expired";
        case Rejection::kRegionDeleted:
            return "region_deleted";
        case Rejection::kFailed:
            break;
    }
    return "failed";
}

struct Counters {
    std::atomic<uint64_t> sessions_opened{0};
    std::atomic<uint64_t> connections_accepted{0};
    std::atomic<uint64_t> connections_rejected{0};
    std::array<std::atomic<uint64_t>, kRejectionCount> rejected_by_reason{};
    std::atomic<uint64_t> flushes{0};
    std::atomic<uint64_t> bytes_flushed{0};
    std::atomic<uint64_t> flushes_rejected{0};
    std::atomic<uint64_t> errors{0};

    // From a GPSPM request's arrival to its answer: its wait behind the
    // session's earlier requests and its persist.
    LatencyHistogram gpspm_flush_time;
    // OpenSession as the daemon serves it (checks, the table, the wake-up).
    LatencyHistogram open_session_time;

    void Rejected(Rejection why) {
        connections_rejected++;
        rejected_by_reason[static_cast<size_t>(why)]++;
    }
};

// What clients did to regions through one-sided operations, as rpma_core
// counts them where it applies them (rpma_ext_mr_get_remote_stats): only the
// tcp provider can; on verbs the NIC applies them unseen. Counted from each
// region's registration, so from rpmad's start (or the region's creation).
struct RegionTraffic {
    uint64_t bytes_written = 0;  // WRITE, WRITE_WITH_IMM payloads, ATOMIC_WRITE
    uint64_t bytes_read = 0;
    uint64_t persistent_flushes = 0;  // APM: what GPSPM counts is Counters::flushes
    uint64_t bytes_persisted = 0;

    RegionTraffic &operator+=(const RegionTraffic &other) {
        bytes_written += other.bytes_written;
        bytes_read += other.bytes_read;
        persistent_flushes += other.persistent_flushes;
        bytes_persisted += other.bytes_persisted;
        return *this;
    }
};

}  // namespace rpmad

#endif  // DAEMON_COUNTERS_H
