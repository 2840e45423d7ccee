// The domain of one rpmad: its regions (RegionStore), its sessions
// (SessionTable) and the data plane that serves them. The control plane's
// handlers call these methods and translate their Status to gRPC; nothing
// here knows about gRPC.
//
// A region is created in the store and exposed on the data plane in one
// step, and deleted in the reverse order: its connections are cut and its
// registration dropped before its file goes.
#ifndef DAEMON_DAEMON_H
#define DAEMON_DAEMON_H

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "daemon/config.h"
#include "daemon/counters.h"
#include "daemon/data_plane.h"
#include "daemon/region_store.h"
#include "daemon/session_table.h"
#include "daemon/status.h"

namespace rpmad {

struct RegionView {
    RegionInfo info;
    size_t open_sessions = 0;
    Persistence persistence = Persistence::kAuto;  // of the data plane; kAuto while unhealthy
    // Clients' one-sided operations on it; all 0 when !traffic_counted.
    RegionTraffic traffic;
    bool traffic_counted = false;
};

struct SessionOffer {
    SessionGrant grant;
    RegionAccess access;
    uint64_t region_size = 0;
    std::string data_address;
    std::string data_port;
};

struct StatsView {
    std::string provider;
    std::chrono::seconds uptime{0};
    size_t regions = 0;
    size_t unhealthy_regions = 0;
    uint64_t pool_used_bytes = 0;
    uint64_t pool_capacity_bytes = 0;
    size_t sessions = 0;
    size_t connections = 0;
    const Counters *counters = nullptr;
    // Clients' one-sided operations on every region; all 0 when
    // !traffic_counted.
    RegionTraffic traffic;
    bool traffic_counted = false;
};

class Daemon {
  public:
    // Opens the region store, starts the data plane and exposes every
    // healthy region. Damaged regions are logged and listed, not fatal.
    static StatusOr<std::unique_ptr<Daemon>> Start(const Config &config);
    ~Daemon();

    StatusOr<RegionView> CreateRegion(const std::string &name, uint64_t size);
    StatusOr<RegionView> GetRegion(const std::string &name) const;
    std::vector<RegionView> ListRegions() const;
    // FAILED_PRECONDITION while sessions are open, unless `force`: then they
    // are closed first. Returns how many were closed.
    StatusOr<size_t> DeleteRegion(const std::string &name, bool force);

    // `who` as the control plane authenticated it, for the session quotas.
    StatusOr<SessionOffer> OpenSession(const std::string &region, const Requester &who);
    Status CloseSession(const std::string &session_id);
    StatusOr<std::vector<SessionInfo>> ListSessions(const std::string &region) const;

    StatsView Stats() const;
    const Config &config() const { return config_; }
    const DataPlane &data_plane() const { return *data_plane_; }

    // Whether the data plane still serves (its thread answers within
    // `timeout`).
    bool Responsive(std::chrono::milliseconds timeout) { return data_plane_->Responsive(timeout); }

    // Graceful stop: no new sessions or connections; clients disconnected.
    void Drain();

  private:
    explicit Daemon(const Config &config);
    RegionView ViewOf(const RegionInfo &info) const;

    Config config_;
    const std::chrono::steady_clock::time_point started_;
    Counters counters_;
    std::unique_ptr<RegionStore> store_;
    SessionTable sessions_;
    std::unique_ptr<DataPlane> data_plane_;
    // Serializes region creation and deletion with session opening, so that
    // no session is opened on a region being deleted.
    mutable std::mutex regions_mu_;
    bool draining_ = false;
};

}  // namespace rpmad

#endif  // DAEMON_DAEMON_H
