// rpmad's data plane: one rpma endpoint that admits a connection only with
// a valid session token, and puts it into the protection domain of the one
// region its session names.
//
// Isolation: every exposed region gets its own rpma peer (its own
// protection domain) and is registered only there. An incoming request is
// created in the listening peer's domain; once its token is redeemed it is
// moved into its region's peer (rpma_ext_conn_req_move_to_peer) before it is
// accepted, so its queue pair can reach that region and nothing else: on
// verbs an rkey is valid only in its protection domain, and the tcp
// provider checks the domain of every remote access the same way. A client
// that learns another region's descriptor still cannot touch it.
//
// One thread runs the data plane: it accepts, watches every connection's
// events and, for GPSPM, serves flush requests. Nothing on it blocks on a
// client, and it persists only small ranges itself (a few pages; larger ones
// run on PersistWorkers), so a slow or vanished client, or a GiB to write
// back, delays no other session.
#ifndef DAEMON_DATA_PLANE_H
#define DAEMON_DATA_PLANE_H

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "daemon/config.h"
#include "daemon/counters.h"
#include "daemon/event_loop.h"
#include "daemon/log.h"
#include "daemon/peer_log_limit.h"
#include "daemon/persist_workers.h"
#include "daemon/region.h"
#include "daemon/session_table.h"
#include "daemon/status.h"
#include "proto/rpmad/v1/data_plane_wire.h"
#include "rpma/rpma.hpp"

namespace rpmad {

// What a client needs to reach an exposed region.
struct RegionAccess {
    std::vector<std::byte> region_descriptor;
    std::vector<std::byte> peer_cfg_descriptor;
    Persistence persistence = Persistence::kApm;  // kApm or kGpspm, never kAuto
};

class DataPlane {
  public:
    // Listens on address:port; `persistence` is the configured method
    // (kAuto: APM where a persistent flush reaches the persistence domain by
    // itself, GPSPM otherwise).
    static StatusOr<std::unique_ptr<DataPlane>> Start(const HostPort &listen,
                                                      Persistence persistence,
                                                      SessionTable &sessions, Counters &counters);
    // Stops accepting, disconnects every client and joins the thread.
    ~DataPlane();
    DataPlane(const DataPlane &) = delete;
    DataPlane &operator=(const DataPlane &) = delete;

    // The provider serving the endpoint ("tcp" or "verbs").
    const std::string &provider() const { return provider_; }
    const std::string &address() const { return address_; }
    const std::string &port() const { return port_; }

    // Registers `region` in a protection domain of its own. Connections for
    // it are accepted from then on. Its clients persist as
    // ChoosePersistence says (FAILED_PRECONDITION where it refuses).
    StatusOr<RegionAccess> Expose(std::shared_ptr<Region> region);
    // The access of an exposed region; NOT_FOUND otherwise.
    StatusOr<RegionAccess> Access(const std::string &region_name) const;
    // Disconnects the region's connections and deregisters it; returns once
    // nothing of the data plane uses the region any more.
    void Withdraw(const std::string &region_name);
    // Whether the data-plane thread runs a command within `timeout`: what
    // the watchdog pings vouch for.
    bool Responsive(std::chrono::milliseconds timeout) { return loop_->Responsive(timeout); }
    // A session was opened: its token's expiry may be the next one.
    void Wake() {
        loop_->Post([] {});
    }
    // Closes a session, NOT_FOUND when there is none. Returns once nothing
    // its client sends can land in the region any more: its connection, if
    // any, is down before the session leaves the table (so ListSessions is a
    // barrier), and no connection of it is accepted meanwhile (this runs on
    // the data-plane thread, which redeems tokens).
    Status CloseSession(uint64_t session_id);
    // Refuses new connections; disconnects every client and waits up to
    // `grace` for them to go.
    void Drain(std::chrono::milliseconds grace);

    size_t connections() const { return connections_.load(); }

    // Whether the provider counts what clients do to a region through
    // one-sided operations (tcp does, verbs cannot): without it Traffic and
    // TotalTraffic say nothing, which is unknown, not 0.
    bool counts_traffic() const { return counts_traffic_; }
    // What clients did to an exposed region since it was registered; zeros
    // for a region not exposed (nothing could reach it) or when the
    // provider cannot count (counts_traffic()).
    RegionTraffic Traffic(const std::string &region_name) const;
    // Summed over every region exposed since the data plane started, those
    // withdrawn since included, so that a total never goes down.
    RegionTraffic TotalTraffic() const;

  private:
    struct ExposedRegion;
    // A GPSPM message received in `slot`; no request when it was malformed.
    struct WaitingFlush {
        uint32_t slot = 0;
        std::optional<wire::FlushRequest> request;
        std::chrono::steady_clock::time_point received;  // for Counters::gpspm_flush_time
    };
    struct Link;

    DataPlane(SessionTable &sessions, Counters &counters);
    void Run();
    void AcceptAll();
    void Accept(rpma::ConnReq request);
    void OnConnectionEvent(Link &link);
    void OnCompletions(Link &link);
    // A GPSPM request: one waiting flush more. `received`: the message's
    // length, from its completion.
    void ServeFlush(Link &link, uint32_t slot, uint32_t received);
    // Serves the session's waiting flushes in order: small ones at once, a
    // large one on a worker (the rest wait for OnPersisted).
    void ServeWaiting(uint64_t session_id);
    void OnPersisted(uint64_t session_id, uint64_t token, const WaitingFlush &flush,
                     const Status &persisted);
    void FinishFlush(Link &link, uint32_t slot, const wire::FlushRequest &request,
                     std::chrono::steady_clock::time_point received, const Status &persisted);
    void Answer(Link &link, uint32_t slot, const wire::FlushResponse &response);
    void Close(uint64_t session_id, bool lost);
    // Event loop tags: the endpoint, and per link its token shifted left by
    // one, the low bit set for its completion fd.
    static constexpr uint64_t kEndpointTag = 0;
    static constexpr uint64_t kCompletionsBit = 1;

    SessionTable &sessions_;
    Counters &counters_;
    // Outlives everything below that posts to it (the thread, the workers).
    std::unique_ptr<EventLoop> loop_;
    // A peer provokes a rejection per connection it opens: its lines are
    // rate-limited, so that a flood of them costs the log a few lines.
    PeerLogLimit rejections_log_{
        [](const std::string &line) { Log().warn("data plane: {}", line); }};
    std::string provider_;
    // rpma_ext_device_query: a persistent flush persists any registered
    // memory; pages of a DAX file system can be registered.
    bool flush_persists_ = false;
    bool pins_fsdax_pages_ = false;
    std::string address_;
    std::string port_;
    // As configured: kAuto is decided per region (ChoosePersistence).
    Persistence persistence_ = Persistence::kAuto;
    // rpma_core answered rpma_ext_mr_get_remote_stats for a probe region.
    bool counts_traffic_ = false;

    // Declared in the order they must be destroyed last to first: links hold
    // regions, regions hold their peers, the endpoint belongs to peer_.
    std::optional<rpma::Peer> peer_;
    std::optional<rpma::ConnCfg> conn_cfg_;
    mutable std::mutex regions_mu_;
    std::map<std::string, std::shared_ptr<ExposedRegion>> regions_;
    // Regions whose connections Withdraw is closing, then the final
    // traffic of those withdrawn (both under regions_mu_).
    std::vector<std::shared_ptr<ExposedRegion>> withdrawing_;
    RegionTraffic withdrawn_traffic_;
    std::optional<rpma::Endpoint> endpoint_;
    // Data-plane thread only: links by session id, and session ids by link
    // token (tokens start at 1, so no link's tags collide with kEndpointTag).
    std::map<uint64_t, std::unique_ptr<Link>> links_;
    std::unordered_map<uint64_t, uint64_t> link_tokens_;
    uint64_t last_token_ = 0;

    std::atomic<bool> stopping_{false};
    std::atomic<size_t> connections_{0};
    std::mutex drained_mu_;
    std::condition_variable drained_;  // connections_ went down
    std::unique_ptr<PersistWorkers> persist_workers_;
    std::thread thread_;
};

}  // namespace rpmad

#endif  // DAEMON_DATA_PLANE_H
