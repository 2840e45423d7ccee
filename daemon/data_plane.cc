#include "daemon/data_plane.h"

#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <deque>
#include <future>

#include "daemon/log.h"
#include "daemon/persistence_policy.h"
#include "proto/rpmad/v1/data_plane.h"
#include "rpma_ext.h"

namespace rpmad {
namespace {

// Send queue: one response per request slot, twice over, so that responses
// whose completions are not yet collected never fill it.
constexpr uint32_t kSendQueueSize = 2 * wire::kMaxFlushesInFlight;
constexpr uint32_t kCompletionQueueSize = kSendQueueSize + wire::kMaxFlushesInFlight;

int SetNonBlocking(int fd) {
    const int flags = fcntl(fd, F_GETFL);
    return flags < 0 ? -1 : fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

// The address a connection request came from, for the log.
std::string PeerAddress(const rpma::ConnReq &request) {
    auto address = request.PeerAddress();
    return address.ok() ? *address : "an unknown address";
}

Status FromRpma(const rpma::Error &error, StatusCode code = StatusCode::kInternal) {
    return Status(code, error.message());
}

// Whether rpma_core counts the peers' operations on memory of `peer`: asked
// of a small registration, since only the provider knows (tcp applies them
// in this process; on verbs the NIC applies them unseen: RPMA_E_NOSUPP).
bool ProviderCountsTraffic(rpma::Peer &peer) {
    std::array<std::byte, 64> probe{};
    auto mr = rpma::MemoryRegion::Register(peer, probe, RPMA_MR_USAGE_READ_SRC);
    if (!mr.ok()) {
        Log().warn(
            "data plane: cannot ask whether the provider counts client traffic ({}); "
            "reporting it as unknown",
            mr.error().message());
        return false;
    }
    auto stats = mr->RemoteStats();
    if (!stats.ok() && stats.error().code() != RPMA_E_NOSUPP)
        Log().warn("data plane: {}; reporting client traffic as unknown", stats.error().message());
    return stats.ok();
}

RegionTraffic TrafficOf(const rpma::MemoryRegion &mr) {
    auto stats = mr.RemoteStats();
    if (!stats.ok())
        return {};
    return {stats->bytes_written, stats->bytes_read, stats->flushes, stats->bytes_persisted};
}

Rejection RejectionOf(SessionTable::Refusal refusal) {
    switch (refusal) {
        case SessionTable::Refusal::kUnknownSession:
            return Rejection::kUnknownSession;
        case SessionTable::Refusal::kWrongSecret:
            return Rejection::kWrongToken;
        case SessionTable::Refusal::kUsed:
            return Rejection::kTokenReused;
        case SessionTable::Refusal::kExpired:
            break;
    }
    return Rejection::kTokenExpired;
}

}  // namespace

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
    // Names the link in epoll events (see WatchTag); never reused.
    uint64_t token = 0;
    bool established = false;
    // GPSPM requests received and not yet answered, in order; while the
    // first one's persist runs on a worker (persisting), the rest wait.
    std::deque<WaitingFlush> waiting;
    bool persisting = false;
};

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
    plane->provider_ =
        std::strcmp(ibv_get_device_name(peer->context()->device), "tcp0") == 0 ? "tcp" : "verbs";
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

    plane->epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
    plane->wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (plane->epoll_fd_ < 0 || plane->wake_fd_ < 0 || SetNonBlocking(plane->endpoint_->fd()) != 0)
        return Status(
            StatusCode::kInternal,
            std::string("setting up the data plane's event loop failed: ") + strerror(errno));
    plane->WatchFd(plane->endpoint_->fd(), kEndpointTag);
    plane->WatchFd(plane->wake_fd_, kWakeTag);
    plane->persist_workers_ = std::make_unique<PersistWorkers>();
    plane->thread_ = std::thread([p = plane.get()] { p->Run(); });
    return plane;
}

DataPlane::~DataPlane() {
    if (thread_.joinable()) {
        Drain(std::chrono::milliseconds(2000));
        stopping_ = true;
        Post([] {});
        thread_.join();
    }
    // Its jobs' answers are posted through wake_fd_: it goes first.
    persist_workers_.reset();
    links_.clear();
    endpoint_.reset();
    if (wake_fd_ >= 0)
        close(wake_fd_);
    if (epoll_fd_ >= 0)
        close(epoll_fd_);
}

void DataPlane::WatchFd(int fd, uint64_t tag) {
    epoll_event event{};
    event.events = EPOLLIN;
    event.data.u64 = tag;
    if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &event) != 0)
        Log().error("data plane: watching fd {} failed: {}", fd, strerror(errno));
}

StatusOr<RegionAccess> DataPlane::Expose(std::shared_ptr<Region> region) {
    const auto chosen =
        ChoosePersistence(persistence_, provider_ == "tcp", region->granularity(), region->name());
    if (!chosen.ok())
        return chosen.status();
    const Persistence method = *chosen;
    auto peer = rpma::Peer::New(peer_->context());
    if (!peer.ok())
        return FromRpma(peer.error(), StatusCode::kResourceExhausted);
    int usage =
        RPMA_MR_USAGE_WRITE_DST | RPMA_MR_USAGE_READ_SRC | RPMA_MR_USAGE_FLUSH_TYPE_VISIBILITY;
    if (method == Persistence::kApm)
        usage |= RPMA_MR_USAGE_FLUSH_TYPE_PERSISTENT;
    auto mr = rpma::MemoryRegion::Register(*peer, region->bytes(), usage);
    if (!mr.ok()) {
        // The kernel pins fsdax pages for an RNIC only with on-demand
        // paging (ibv_reg_mr: EOPNOTSUPP, RPMA_E_PROVIDER); device DAX it
        // pins. Out of locked memory is RPMA_E_NOMEM.
        if (mr.error().code() == RPMA_E_PROVIDER && provider_ != "tcp" &&
            region->granularity() != Granularity::kPage)
            return Status(StatusCode::kFailedPrecondition,
                          "registering region '" + region->name() + "' failed (" +
                              mr.error().message() +
                              "): this RDMA device cannot pin pages of a DAX file system; "
                              "serve the PMem as device DAX (storage.devdax_regions) or use a "
                              "device with on-demand paging");
        return Status(StatusCode::kResourceExhausted,
                      "registering region '" + region->name() + "' failed (" +
                          mr.error().message() +
                          "): raise the memlock limit (LimitMEMLOCK=infinity)");
    }
    auto cfg = rpma::PeerCfg::New();
    if (!cfg.ok())
        return FromRpma(cfg.error());
    if (auto set = cfg->SetDirectWriteToPmem(method == Persistence::kApm); !set.ok())
        return FromRpma(set.error());
    auto region_descriptor = mr->Descriptor();
    auto cfg_descriptor = cfg->Descriptor();
    if (!region_descriptor.ok() || !cfg_descriptor.ok())
        return Status(StatusCode::kInternal, "describing region '" + region->name() + "' failed");
    RegionAccess access{std::move(*region_descriptor), std::move(*cfg_descriptor), method};
    auto exposed = std::make_shared<ExposedRegion>(
        ExposedRegion{std::move(region), std::move(*peer), std::move(*mr), access});
    std::lock_guard lock(regions_mu_);
    regions_[exposed->region->name()] = std::move(exposed);
    return access;
}

StatusOr<RegionAccess> DataPlane::Access(const std::string &region_name) const {
    std::lock_guard lock(regions_mu_);
    auto it = regions_.find(region_name);
    if (it == regions_.end())
        return Status(StatusCode::kNotFound, "region '" + region_name + "' is not exposed");
    return it->second->access;
}

void DataPlane::Withdraw(const std::string &region_name) {
    std::shared_ptr<ExposedRegion> withdrawn;
    {
        std::lock_guard lock(regions_mu_);
        if (auto it = regions_.find(region_name); it != regions_.end()) {
            withdrawn = std::move(it->second);
            regions_.erase(it);
            withdrawing_.push_back(withdrawn);
        }
    }
    // The links of the region hold the last references to it but this one.
    Call([this, region_name] {
        std::vector<uint64_t> ids;
        for (const auto &[id, link] : links_)
            if (link->region->region->name() == region_name)
                ids.push_back(id);
        for (uint64_t id : ids)
            Close(id, false);
    });
    // No connection reaches the region any more: its counts are final.
    if (withdrawn != nullptr) {
        std::lock_guard lock(regions_mu_);
        if (counts_traffic_)
            withdrawn_traffic_ += TrafficOf(withdrawn->mr);
        std::erase(withdrawing_, withdrawn);
    }
}

RegionTraffic DataPlane::Traffic(const std::string &region_name) const {
    if (!counts_traffic_)
        return {};
    std::shared_ptr<ExposedRegion> exposed;
    {
        std::lock_guard lock(regions_mu_);
        auto it = regions_.find(region_name);
        if (it == regions_.end())
            return {};
        exposed = it->second;
    }
    return TrafficOf(exposed->mr);
}

RegionTraffic DataPlane::TotalTraffic() const {
    if (!counts_traffic_)
        return {};
    // Under the lock a region is counted exactly once: exposed, being
    // withdrawn, or in withdrawn_traffic_. A few relaxed loads per region.
    std::lock_guard lock(regions_mu_);
    RegionTraffic total = withdrawn_traffic_;
    for (const auto &[name, exposed] : regions_)
        total += TrafficOf(exposed->mr);
    for (const auto &exposed : withdrawing_)
        total += TrafficOf(exposed->mr);
    return total;
}

Status DataPlane::CloseSession(uint64_t session_id) {
    Status closed;
    Call([&] {
        if (links_.count(session_id) != 0)
            Close(session_id, false);  // the session too
        else if (auto was = sessions_.Close(session_id); !was.ok())
            closed = was.status();
    });
    return closed;
}

void DataPlane::Drain(std::chrono::milliseconds grace) {
    Call([this] {
        if (endpoint_) {
            epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, endpoint_->fd(), nullptr);
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
    Call([this] {
        while (!links_.empty())
            Close(links_.begin()->first, false);
    });
}

bool DataPlane::Responsive(std::chrono::milliseconds timeout) {
    // Shared: a late answer must still find its promise.
    auto answered = std::make_shared<std::promise<void>>();
    auto future = answered->get_future();
    Post([answered] { answered->set_value(); });
    return future.wait_for(timeout) == std::future_status::ready;
}

void DataPlane::Post(Command command) {
    {
        std::lock_guard lock(commands_mu_);
        commands_.push_back(std::move(command));
    }
    const uint64_t one = 1;
    if (write(wake_fd_, &one, sizeof(one)) != sizeof(one) && errno != EAGAIN)
        Log().error("data plane: waking the data-plane thread failed: {}", strerror(errno));
}

void DataPlane::Call(Command command) {
    std::promise<void> done;
    auto finished = done.get_future();
    Post([&command, &done] {
        command();
        done.set_value();
    });
    finished.wait();
}

void DataPlane::RunCommands() {
    uint64_t count;
    while (read(wake_fd_, &count, sizeof(count)) == sizeof(count)) {
    }
    std::vector<Command> commands;
    {
        std::lock_guard lock(commands_mu_);
        commands.swap(commands_);
    }
    for (auto &command : commands)
        command();
}

void DataPlane::Run() {
    constexpr int kMaxEvents = 64;
    epoll_event events[kMaxEvents];
    while (!stopping_) {
        // Pending tokens expire by themselves: wake for the next one only.
        int timeout_ms = -1;
        if (auto next = sessions_.NextExpiry()) {
            const auto left = std::chrono::ceil<std::chrono::milliseconds>(
                *next - std::chrono::steady_clock::now());
            timeout_ms = static_cast<int>(std::max<int64_t>(0, left.count()));
        }
        const int n = epoll_wait(epoll_fd_, events, kMaxEvents, timeout_ms);
        if (n < 0 && errno != EINTR) {
            Log().critical("data plane: epoll_wait failed: {}", strerror(errno));
            return;
        }
        for (uint64_t id : sessions_.ExpirePending())
            Log().info("session {}: token expired unused", wire::SessionIdString(id));
        for (int i = 0; i < n; ++i) {
            const uint64_t tag = events[i].data.u64;
            if (tag == kEndpointTag) {
                AcceptAll();
                continue;
            }
            if (tag == kWakeTag) {
                RunCommands();
                continue;
            }
            // A link closed while handling an earlier event of this batch
            // has no token any more: its events are stale.
            auto token = link_tokens_.find(tag >> 1);
            if (token == link_tokens_.end())
                continue;
            Link &link = *links_.at(token->second);
            if (tag & kCompletionsBit)
                OnCompletions(link);
            else
                OnConnectionEvent(link);
        }
    }
}

void DataPlane::AcceptAll() {
    while (endpoint_) {
        auto request = endpoint_->Next(&*conn_cfg_);
        if (!request.ok()) {
            if (request.error().code() != RPMA_E_NO_EVENT) {
                counters_.errors++;
                Log().warn("data plane: taking a connection request failed: {}",
                           request.error().message());
            }
            return;
        }
        Accept(std::move(*request));
    }
}

void DataPlane::Accept(rpma::ConnReq request) {
    const std::string peer = PeerAddress(request);
    auto reject = [&](Rejection reason, const std::string &why) {
        counters_.Rejected(reason);
        rejections_log_.Write(peer, "rejected a connection from " + peer + ": " + why);
        // The request's destructor rejects it.
    };
    auto private_data = request.PrivateData();
    if (!private_data.ok())
        return reject(Rejection::kMalformed, private_data.error().message());
    wire::SessionToken token;
    if (auto problem = wire::DecodeConnectRequest(*private_data, &token);
        problem != wire::RequestProblem::kNone)
        return reject(Rejection::kMalformed, wire::RequestProblemText(problem));
    SessionTable::Refusal refusal{};
    auto grant = sessions_.Redeem(token, peer, &refusal);
    if (!grant.ok())
        return reject(RejectionOf(refusal), grant.status().message());
    const std::string session = wire::SessionIdString(token.session_id);
    std::shared_ptr<ExposedRegion> region;
    {
        std::lock_guard lock(regions_mu_);
        auto it = regions_.find(grant->region);
        if (it != regions_.end() && it->second->region->id() == grant->region_id)
            region = it->second;
    }
    // From here on the token is spent: a failure ends the session too.
    auto fail = [&](const std::string &why, Rejection reason = Rejection::kFailed) {
        (void)sessions_.Close(token.session_id);
        reject(reason, "session " + session + ": " + why);
    };
    if (region == nullptr)
        return fail("region '" + grant->region + "' was deleted", Rejection::kRegionDeleted);
    if (auto moved = request.MoveToPeer(region->peer); !moved.ok())
        return fail(moved.error().message());

    auto link = std::make_unique<Link>();
    link->session_id = token.session_id;
    link->peer = peer;
    link->region = region;
    if (region->access.persistence == Persistence::kGpspm) {
        constexpr size_t kSize =
            wire::kMaxFlushesInFlight * (wire::kFlushRequestSize + wire::kFlushResponseSize);
        link->messages = std::make_unique<std::byte[]>(kSize);
        auto mr = rpma::MemoryRegion::Register(region->peer, std::span(link->messages.get(), kSize),
                                               RPMA_MR_USAGE_RECV | RPMA_MR_USAGE_SEND);
        if (!mr.ok())
            return fail(mr.error().message());
        link->messages_mr.emplace(std::move(*mr));
        for (uint32_t slot = 0; slot < wire::kMaxFlushesInFlight; ++slot) {
            auto posted = request.Recv(*link->messages_mr, slot * wire::kFlushRequestSize,
                                       wire::kFlushRequestSize,
                                       reinterpret_cast<const void *>(uintptr_t{slot}));
            if (!posted.ok())
                return fail("posting a receive failed: " + posted.error().message());
        }
    }
    wire::ConnectAccept accept{
        static_cast<uint8_t>(region->access.persistence == Persistence::kApm ? 1 : 2),
        region->region->size(), region->access.region_descriptor,
        region->access.peer_cfg_descriptor};
    const auto accept_data = wire::EncodeConnectAccept(accept);
    auto conn = request.Connect(accept_data);
    if (!conn.ok())
        return fail(conn.error().message());
    link->conn.emplace(std::move(*conn));

    auto event_fd = link->conn->EventFd();
    auto cq_fd = link->conn->Cq().fd();
    if (!event_fd.ok() || !cq_fd.ok() || SetNonBlocking(*event_fd) != 0 ||
        SetNonBlocking(*cq_fd) != 0) {
        counters_.errors++;
        (void)sessions_.Close(token.session_id);
        Log().error("session {}: setting up the connection's descriptors failed", session);
        return;
    }
    link->token = ++last_token_;
    link_tokens_[link->token] = token.session_id;
    WatchFd(*event_fd, link->token << 1);
    if (link->messages_mr)
        WatchFd(*cq_fd, link->token << 1 | kCompletionsBit);
    counters_.connections_accepted++;
    connections_++;
    Log().info("session {}: accepted a connection from {} for region '{}'", session, peer,
               grant->region);
    links_[token.session_id] = std::move(link);
}

void DataPlane::OnConnectionEvent(Link &link) {
    auto event = link.conn->NextEvent();
    if (!event.ok()) {
        if (event.error().code() == RPMA_E_NO_EVENT)
            return;
        Log().warn("session {}: reading a connection event failed: {}",
                   wire::SessionIdString(link.session_id), event.error().message());
        return Close(link.session_id, true);
    }
    switch (*event) {
        case RPMA_CONN_ESTABLISHED:
            link.established = true;
            return;
        case RPMA_CONN_CLOSED:
            Log().info("session {}: the client disconnected",
                       wire::SessionIdString(link.session_id));
            return Close(link.session_id, false);
        case RPMA_CONN_LOST:
        case RPMA_CONN_REJECTED:
        case RPMA_CONN_UNREACHABLE:
        case RPMA_CONN_UNDEFINED:
            Log().warn("session {}: connection from {} lost ({})",
                       wire::SessionIdString(link.session_id), link.peer,
                       rpma_utils_conn_event_2str(*event));
            return Close(link.session_id, true);
    }
}

void DataPlane::OnCompletions(Link &link) {
    rpma::CompletionQueue cq = link.conn->Cq();
    if (auto waited = cq.Wait(); !waited.ok() && waited.error().code() != RPMA_E_NO_COMPLETION) {
        Log().warn("session {}: waiting for completions failed: {}",
                   wire::SessionIdString(link.session_id), waited.error().message());
        return Close(link.session_id, true);
    }
    ibv_wc completions[16];
    for (;;) {
        auto count = cq.Poll(completions);
        if (!count.ok()) {
            Log().warn("session {}: polling completions failed: {}",
                       wire::SessionIdString(link.session_id), count.error().message());
            return Close(link.session_id, true);
        }
        if (*count == 0)
            return;
        const uint64_t session_id = link.session_id;
        for (int i = 0; i < *count; ++i) {
            const ibv_wc &done = completions[i];
            if (done.status == IBV_WC_WR_FLUSH_ERR) {
                // The queue pair is going down: the connection's own event
                // (closed by the client, or lost) follows, says which, and
                // closes the session.
                return;
            }
            if (done.status != IBV_WC_SUCCESS) {
                // A failed receive or response: the connection is broken.
                Log().warn("session {}: {} failed: {}", wire::SessionIdString(session_id),
                           done.opcode == IBV_WC_RECV ? "a receive" : "a response",
                           ibv_wc_status_str(done.status));
                return Close(session_id, true);
            }
            if (done.opcode == IBV_WC_RECV) {
                ServeFlush(link, static_cast<uint32_t>(done.wr_id), done.byte_len);
                if (!links_.count(session_id))
                    return;
            }
        }
    }
}

void DataPlane::ServeFlush(Link &link, uint32_t slot, uint32_t received) {
    if (slot >= wire::kMaxFlushesInFlight)
        return Close(link.session_id, true);
    // Only the `received` bytes are this message's: the rest of the slot
    // still holds the request it took before.
    std::byte *request_bytes = link.messages.get() + slot * wire::kFlushRequestSize;
    const auto request = wire::DecodeFlushRequest(
        std::span(request_bytes, std::min<size_t>(received, wire::kFlushRequestSize)));
    if (!request) {
        counters_.flushes_rejected++;
        Log().warn("session {}: malformed flush request ({} bytes; a request is {})",
                   wire::SessionIdString(link.session_id), received, wire::kFlushRequestSize);
    }
    link.waiting.push_back({slot, request, std::chrono::steady_clock::now()});
    ServeWaiting(link.session_id);
}

void DataPlane::ServeWaiting(uint64_t session_id) {
    for (;;) {
        auto it = links_.find(session_id);
        if (it == links_.end())
            return;  // answering closed the session
        Link &link = *it->second;
        if (link.persisting || link.waiting.empty())
            return;
        const WaitingFlush next = link.waiting.front();
        link.waiting.pop_front();
        if (!next.request) {
            Answer(link, next.slot, {0, wire::FlushStatus::kMalformed});
            continue;
        }
        const wire::FlushRequest request = *next.request;
        if (request.length <= PersistWorkers::kInlineBytes) {
            FinishFlush(link, next.slot, request, next.received,
                        link.region->region->Persist(request.offset, request.length));
            continue;
        }
        link.persisting = true;
        persist_workers_->Submit({link.region->region, request.offset, request.length,
                                  [this, session_id, token = link.token, next](Status persisted) {
                                      Post([=, this, persisted = std::move(persisted)] {
                                          OnPersisted(session_id, token, next, persisted);
                                      });
                                  }});
    }
}

void DataPlane::OnPersisted(uint64_t session_id, uint64_t token, const WaitingFlush &flush,
                            const Status &persisted) {
    auto it = links_.find(session_id);
    if (it == links_.end() || it->second->token != token)
        return;  // the session ended meanwhile: nobody waits for the answer
    it->second->persisting = false;
    FinishFlush(*it->second, flush.slot, *flush.request, flush.received, persisted);
    ServeWaiting(session_id);
}

void DataPlane::FinishFlush(Link &link, uint32_t slot, const wire::FlushRequest &request,
                            std::chrono::steady_clock::time_point received,
                            const Status &persisted) {
    counters_.gpspm_flush_time.Observe(std::chrono::steady_clock::now() - received);
    wire::FlushResponse response{request.request_id, wire::FlushStatus::kOk};
    if (persisted.ok()) {
        counters_.flushes++;
        counters_.bytes_flushed += request.length;
        sessions_.CountFlush(link.session_id, request.length);
    } else if (persisted.code() == StatusCode::kInvalidArgument) {
        counters_.flushes_rejected++;
        response.status = wire::FlushStatus::kOutOfRange;
        Log().warn("session {}: flush request refused: {}", wire::SessionIdString(link.session_id),
                   persisted.message());
    } else {
        // The disk failed under the region (it is damaged now): the
        // session hears it; the daemon and the other regions go on.
        counters_.flushes_rejected++;
        counters_.errors++;
        response.status = wire::FlushStatus::kFailed;
        Log().error("session {}: flush request failed: {}", wire::SessionIdString(link.session_id),
                    persisted.message());
    }
    Answer(link, slot, response);
}

void DataPlane::Answer(Link &link, uint32_t slot, const wire::FlushResponse &response) {
    // The slot takes the next request once this one is answered, so a
    // session never has more requests than slots in the daemon.
    const size_t response_offset =
        wire::kMaxFlushesInFlight * wire::kFlushRequestSize + slot * wire::kFlushResponseSize;
    wire::EncodeFlushResponse(response,
                              std::span<std::byte, wire::kFlushResponseSize>(
                                  link.messages.get() + response_offset, wire::kFlushResponseSize));
    const void *context = reinterpret_cast<const void *>(uintptr_t{slot});
    auto posted = link.conn->Recv(*link.messages_mr, slot * wire::kFlushRequestSize,
                                  wire::kFlushRequestSize, context);
    auto sent = posted.ok()
                    ? link.conn->Send(*link.messages_mr, response_offset, wire::kFlushResponseSize,
                                      RPMA_F_COMPLETION_ALWAYS, context)
                    : posted;
    if (!sent.ok()) {
        Log().warn("session {}: answering a flush request failed: {}",
                   wire::SessionIdString(link.session_id), sent.error().message());
        Close(link.session_id, true);
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
        epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, *fd, nullptr);
    if (auto fd = link->conn->Cq().fd(); fd.ok())
        epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, *fd, nullptr);
    // ~Link disconnects and deletes the connection (its queue pair applies
    // nothing of the client from then on), then deregisters; only then does
    // the session leave the table, so that ListSessions not showing it means
    // that nothing of it lands any more.
    link.reset();
    (void)sessions_.Close(session_id);
}

}  // namespace rpmad
