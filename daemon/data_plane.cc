// The data plane's life: start, the thread's loop, closing sessions'
// connections, drain and stop. Admission (data_plane_admission.cc), exposure
// (data_plane_exposure.cc) and the GPSPM flush server (gpspm_flush_server.cc)
// are the other parts of DataPlane.
#include "daemon/data_plane.h"

#include <algorithm>
#include <cstring>

#include "daemon/data_plane_state.h"
#include "daemon/log.h"
#include "proto/rpmad/v1/data_plane_wire.h"
#include "rpma_ext.h"

namespace rpmad {
namespace {

// Send queue: one response per request slot, twice over, so that responses
// whose completions are not yet collected never fill it.
constexpr uint32_t kSendQueueSize = 2 * wire::kMaxFlushesInFlight;
constexpr uint32_t kCompletionQueueSize = kSendQueueSize + wire::kMaxFlushesInFlight;

}  // namespace

DataPlane::DataPlane(SessionTable &sessions, Counters &counters)
    : sessions_(sessions), counters_(counters) {}

StatusOr<std::unique_ptr<DataPlane>> DataPlane::Start(const HostPort &listen,
                                                      Persistence persistence,
                                                      SessionTable &sessions, Counters &counters) {
    std::unique_ptr<DataPlane> plane(new DataPlane(sessions, counters));
    plane->address_ = listen.host;
    plane->port_ = listen.port;
    auto peer = rpma::Peer::ForAddress(listen.host, RPMA_UTIL_IBV_CONTEXT_LOCAL);
    if (!peer.ok())
        return Status(StatusCode::kUnavailable,
                      "no rpma device serves the data-plane address " + listen.host + " (" +
                          peer.error().message() +
                          "): set data.listen to an address of this host, or data.provider "
                          "to tcp");
    // What the device can do, from rpma_core rather than from its name.
    rpma_ext_device_info device{};
    device.size = sizeof(device);
    if (int ret = rpma_ext_device_query(peer->context(), &device); ret != 0)
        return Status(StatusCode::kInternal, "querying the data plane's rpma device failed: " +
                                                 std::string(rpma_err_2str(ret)));
    plane->provider_ = device.provider;
    plane->flush_persists_ = device.flush_persists != 0;
    plane->pins_fsdax_pages_ = device.pins_fsdax_pages != 0;
    // kAuto is decided per region, by Expose.
    plane->persistence_ = persistence;
    plane->counts_traffic_ = ProviderCountsTraffic(*peer);
    plane->peer_.emplace(std::move(*peer));

    auto cfg = rpma::ConnCfg::New();
    if (!cfg.ok())
        return FromRpma(cfg.error());
    for (auto result : {cfg->SetSqSize(kSendQueueSize), cfg->SetRqSize(wire::kMaxFlushesInFlight),
                        cfg->SetCqSize(kCompletionQueueSize)})
        if (!result.ok())
            return FromRpma(result.error());
    plane->conn_cfg_.emplace(std::move(*cfg));

    auto endpoint = rpma::Endpoint::Listen(*plane->peer_, listen.host, listen.port);
    if (!endpoint.ok())
        return Status(StatusCode::kUnavailable,
                      "cannot listen on the data-plane address " + listen.host + ":" + listen.port +
                          " (" + endpoint.error().message() +
                          "): is another rpmad running, or the port taken? Set data.listen "
                          "or --data-listen");
    plane->endpoint_.emplace(std::move(*endpoint));

    auto loop = EventLoop::New();
    if (!loop.ok())
        return Status(loop.status().code(), "data plane: " + loop.status().message());
    plane->loop_ = std::move(*loop);
    if (Status s = SetNonBlocking(plane->endpoint_->fd()); !s.ok())
        return Status(s.code(), "data plane: the endpoint: " + s.message());
    plane->loop_->Watch(plane->endpoint_->fd(), kEndpointTag);
    plane->persist_workers_ = std::make_unique<PersistWorkers>();
    plane->thread_ = std::thread([p = plane.get()] { p->Run(); });
    return plane;
}

DataPlane::~DataPlane() {
    if (thread_.joinable()) {
        Drain(std::chrono::milliseconds(2000));
        stopping_ = true;
        loop_->Post([] {});
        thread_.join();
    }
    // Its jobs' answers are posted to loop_: it goes first.
    persist_workers_.reset();
    links_.clear();
    endpoint_.reset();
}

Status DataPlane::CloseSession(uint64_t session_id) {
    Status closed;
    loop_->Call([&] {
        if (links_.count(session_id) != 0)
            Close(session_id, false);  // the session too
        else if (auto was = sessions_.Close(session_id); !was.ok())
            closed = was.status();
    });
    return closed;
}

void DataPlane::Drain(std::chrono::milliseconds grace) {
    loop_->Call([this] {
        if (endpoint_) {
            loop_->Unwatch(endpoint_->fd());
            endpoint_.reset();
        }
        for (auto &[id, link] : links_)
            if (auto done = link->conn->Disconnect(); !done.ok())
                Log().debug("session {}: disconnect: {}", wire::SessionIdString(id),
                            done.error().message());
    });
    // Clients answer a disconnect with their own; their CLOSED events then
    // remove the links. Those that do not answer in time are cut below.
    {
        std::unique_lock lock(drained_mu_);
        drained_.wait_for(lock, grace, [this] { return connections_.load() == 0; });
    }
    loop_->Call([this] {
        while (!links_.empty())
            Close(links_.begin()->first, false);
    });
}

void DataPlane::Run() {
    while (!stopping_) {
        // Pending tokens expire by themselves: wake for the next one only.
        int timeout_ms = -1;
        if (auto next = sessions_.NextExpiry()) {
            const auto left = std::chrono::ceil<std::chrono::milliseconds>(
                *next - std::chrono::steady_clock::now());
            timeout_ms = static_cast<int>(std::max<int64_t>(0, left.count()));
        }
        if (Status waited = loop_->Wait(timeout_ms); !waited.ok()) {
            Log().critical("data plane: {}", waited.message());
            return;
        }
        for (uint64_t id : sessions_.ExpirePending())
            Log().info("session {}: token expired unused", wire::SessionIdString(id));
        loop_->Dispatch([this](uint64_t tag) {
            if (tag == kEndpointTag)
                return AcceptAll();
            // A link closed while handling an earlier event of this batch
            // has no token any more: its events are stale.
            auto token = link_tokens_.find(tag >> 1);
            if (token == link_tokens_.end())
                return;
            Link &link = *links_.at(token->second);
            if (tag & kCompletionsBit)
                OnCompletions(link);
            else
                OnConnectionEvent(link);
        });
    }
}

void DataPlane::Close(uint64_t session_id, bool lost) {
    auto it = links_.find(session_id);
    if (it == links_.end())
        return;
    std::unique_ptr<Link> link = std::move(it->second);
    links_.erase(it);
    link_tokens_.erase(link->token);
    {
        std::lock_guard lock(drained_mu_);
        connections_--;
    }
    drained_.notify_all();
    if (lost)
        counters_.errors++;
    if (auto fd = link->conn->EventFd(); fd.ok())
        loop_->Unwatch(*fd);
    if (auto fd = link->conn->Cq().fd(); fd.ok())
        loop_->Unwatch(*fd);
    // ~Link disconnects and deletes the connection (its queue pair applies
    // nothing of the client from then on), then deregisters; only then does
    // the session leave the table, so that ListSessions not showing it means
    // that nothing of it lands any more.
    link.reset();
    (void)sessions_.Close(session_id);
}

}  // namespace rpmad
