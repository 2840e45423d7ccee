// What the data plane's files share: a region exposed in a protection
// domain of its own, and an accepted connection (a link). Private to the
// data_plane target.
#ifndef DAEMON_DATA_PLANE_STATE_H
#define DAEMON_DATA_PLANE_STATE_H

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>

#include "daemon/data_plane.h"
#include "daemon/status.h"
#include "proto/rpmad/v1/data_plane_wire.h"
#include "rpma/rpma.hpp"

namespace rpmad {

inline Status FromRpma(const rpma::Error &error, StatusCode code = StatusCode::kInternal) {
    return Status(code, error.message());
}

// Whether rpma_core counts the peers' operations on memory of `peer`
// (rpma_ext_mr_get_remote_stats); see DataPlane::counts_traffic().
bool ProviderCountsTraffic(rpma::Peer &peer);

// A region registered in a protection domain of its own.
struct DataPlane::ExposedRegion {
    std::shared_ptr<Region> region;
    rpma::Peer peer;
    rpma::MemoryRegion mr;
    RegionAccess access;
};

// One accepted connection. Members are destroyed last to first: the
// connection before the message buffers it may still read, both before the
// region whose peer they belong to.
struct DataPlane::Link {
    uint64_t session_id = 0;
    std::string peer;
    std::shared_ptr<ExposedRegion> region;
    // GPSPM: kMaxFlushesInFlight request slots, then as many response slots.
    std::unique_ptr<std::byte[]> messages;
    std::optional<rpma::MemoryRegion> messages_mr;
    std::optional<rpma::Connection> conn;
    // Names the link in the event loop's tags (see kCompletionsBit); never reused.
    uint64_t token = 0;
    bool established = false;
    // GPSPM requests received and not yet answered, in order; while the
    // first one's persist runs on a worker (persisting), the rest wait.
    std::deque<WaitingFlush> waiting;
    bool persisting = false;
};

}  // namespace rpmad

#endif  // DAEMON_DATA_PLANE_STATE_H
