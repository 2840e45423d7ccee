#include "replica.h"

#include <poll.h>

#include <algorithm>
#include <cstring>

#include "rpma_ext.h"
#include "util/host_port.h"

namespace rpma::client {
namespace {

namespace v1 = ::rpmad::v1;
namespace wire = ::rpmad::wire;

constexpr uint32_t kSqSize = Replica::kSqSize;
constexpr uint32_t kRqSize = wire::kMaxFlushesInFlight;
constexpr uint32_t kCqSize = kSqSize + kRqSize;
// At most this many unsignaled work requests in a row: the next one is
// signaled whatever its caller said, so that a quarter of the send queue at
// most waits for a signaled one to retire it.
constexpr uint32_t kMaxUnsignaledRun = kSqSize / 4;
constexpr size_t kResponsesAt = wire::kMaxFlushesInFlight * wire::kFlushRequestSize;
// Receive completions carry this bit in their wr_id, send-queue ones the seq
// shifted left by one with bit 0 set for a persist.
constexpr uint64_t kReceiveBit = uint64_t{1} << 63;

const void *Context(uint64_t value) {
    return reinterpret_cast<const void *>(static_cast<uintptr_t>(value));
}

Status DataPlaneError(const std::string &what, const rpma::Error &error) {
    return Status(StatusCode::kDataPlane, what + ": " + error.message());
}

// Posts go through the C API: the C++ layer's spell out their range in a
// string on every call, a cost the hot path does not pay. This spells it
// out on failure only, in the C++ layer's words.
Status PostError(const std::string &what, rpma::detail::Returned returned, const char *call,
                 uint64_t offset, size_t length) {
    return DataPlaneError(
        what, rpma::detail::Failure(
                  returned, call, std::to_string(length) + " bytes at " + std::to_string(offset)));
}

}  // namespace

Result<v1::Region> Replica::EnsureRegion(ControlPlane &control, const std::string &region,
                                         uint64_t create_size,
                                         std::chrono::milliseconds lookup_timeout) {
    v1::Region info;
    v1::GetRegionRequest get;
    get.set_name(region);
    auto lookup = control.Context();
    if (lookup_timeout.count() > 0 && lookup_timeout < control.options().timeout)
        lookup->set_deadline(std::chrono::system_clock::now() + lookup_timeout);
    grpc::Status got = control.regions().GetRegion(lookup.get(), get, &info);
    if (got.error_code() == grpc::StatusCode::NOT_FOUND && create_size > 0) {
        v1::CreateRegionRequest create;
        create.set_name(region);
        create.set_size(create_size);
        got = control.regions().CreateRegion(control.Context().get(), create, &info);
        // Another client may have created it meanwhile: take it as it is.
        if (got.error_code() == grpc::StatusCode::ALREADY_EXISTS)
            got = control.regions().GetRegion(control.Context().get(), get, &info);
    }
    if (!got.ok())
        return FromGrpc(got, control.address());
    if (create_size > 0 && info.size() != create_size)
        return Status(StatusCode::kAlreadyExists,
                      control.address() + ": region " + region + " exists with " +
                          std::to_string(info.size()) + " bytes, not the " +
                          std::to_string(create_size) +
                          " asked for: open it with its size or delete it first");
    return info;
}

Result<std::unique_ptr<Replica>> Replica::Connect(ControlPlane &control, const std::string &region,
                                                  uint64_t generation,
                                                  std::chrono::milliseconds timeout,
                                                  const std::string &data_address) {
    v1::OpenSessionRequest open;
    open.set_region(region);
    open.set_replica_set_generation(generation);
    v1::OpenSessionResponse session;
    grpc::Status got =
        control.sessions().OpenSession(control.SessionContext().get(), open, &session);
    if (!got.ok())
        return FromGrpc(got, control.address());
    const auto token = wire::DecodeToken(std::as_bytes(std::span(session.token())));
    if (!token)
        return Status(StatusCode::kInternal,
                      control.address() + ": the daemon sent a malformed session token");

    std::string host = session.data_address(), port = session.data_port();
    if (!data_address.empty()) {
        std::string error;
        auto split = util::SplitHostPort(data_address, &error);
        if (!split)
            return Status(StatusCode::kInvalidArgument, "data-plane address " + error);
        host = std::move(split->host);
        port = std::move(split->port);
    }

    std::unique_ptr<Replica> replica(new Replica());
    replica->address_ = control.address();
    replica->session_id_ = session.session_id();
    replica->daemon_id_ = session.daemon_id();
    const std::string where =
        control.address() + " (data plane " + util::JoinHostPort(host, port) + ")";
    auto peer = Peer::ForAddress(host, RPMA_UTIL_IBV_CONTEXT_REMOTE);
    if (!peer.ok())
        return DataPlaneError(where, peer.error());
    replica->peer_.emplace(std::move(*peer));
    replica->messages_.resize(kResponsesAt + wire::kMaxFlushesInFlight * wire::kFlushResponseSize);
    auto mr = MemoryRegion::Register(*replica->peer_, replica->messages_,
                                     RPMA_MR_USAGE_SEND | RPMA_MR_USAGE_RECV);
    if (!mr.ok())
        return DataPlaneError(where, mr.error());
    replica->messages_mr_.emplace(std::move(*mr));

    auto cfg = ConnCfg::New();
    if (!cfg.ok())
        return DataPlaneError(where, cfg.error());
    for (auto set : {cfg->SetSqSize(kSqSize), cfg->SetRqSize(kRqSize), cfg->SetCqSize(kCqSize),
                     cfg->SetTimeout(static_cast<int>(timeout.count()))})
        if (!set.ok())
            return DataPlaneError(where, set.error());
    auto request = ConnReq::New(*replica->peer_, host, port, &*cfg);
    if (!request.ok())
        return DataPlaneError(where, request.error());
    // Every flush response needs a posted receive; post them all now.
    for (size_t slot = 0; slot < wire::kMaxFlushesInFlight; ++slot) {
        auto posted =
            request->Recv(*replica->messages_mr_, kResponsesAt + slot * wire::kFlushResponseSize,
                          wire::kFlushResponseSize, Context(kReceiveBit | slot));
        if (!posted.ok())
            return DataPlaneError(where, posted.error());
    }
    const auto pdata = wire::EncodeConnectRequest(*token);
    auto conn = std::move(*request).Connect(std::as_bytes(std::span(pdata)));
    if (!conn.ok())
        return DataPlaneError(where, conn.error());
    replica->conn_.emplace(std::move(*conn));

    auto event_fd = replica->conn_->EventFd();
    if (!event_fd.ok())
        return DataPlaneError(where, event_fd.error());
    pollfd p{*event_fd, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(timeout.count())) != 1)
        return Status(StatusCode::kDeadlineExceeded,
                      where + ": the data-plane connection was not established within " +
                          std::to_string(timeout.count()) + " ms");
    auto event = replica->conn_->NextEvent();
    if (!event.ok())
        return DataPlaneError(where, event.error());
    if (*event != RPMA_CONN_ESTABLISHED)
        return Status(StatusCode::kDataPlane,
                      where + ": the daemon did not accept the connection (" +
                          rpma_utils_conn_event_2str(*event) +
                          "): the token expired or the region went away; open again");
    auto accept_data = replica->conn_->PrivateData();
    if (!accept_data.ok())
        return DataPlaneError(where, accept_data.error());
    const auto accept = wire::DecodeConnectAccept(*accept_data);
    if (!accept)
        return Status(StatusCode::kInternal, where + ": malformed acceptance private data");
    auto remote = RemoteMemory::FromDescriptor(accept->region_descriptor);
    if (!remote.ok())
        return DataPlaneError(where, remote.error());
    auto peer_cfg = PeerCfg::FromDescriptor(accept->peer_cfg_descriptor);
    if (!peer_cfg.ok())
        return DataPlaneError(where, peer_cfg.error());
    if (auto applied = replica->conn_->ApplyRemotePeerCfg(*peer_cfg); !applied.ok())
        return DataPlaneError(where, applied.error());
    replica->region_.emplace(std::move(*remote));
    replica->size_ = accept->region_size;
    replica->gpspm_ = accept->persistence == wire::AcceptedPersistence::kGpspm;
    auto cq_fd = replica->conn_->Cq().fd();
    if (!cq_fd.ok())
        return DataPlaneError(where, cq_fd.error());
    replica->cq_ = replica->conn_->Cq().get();
    replica->cq_fd_ = *cq_fd;
    replica->event_fd_ = *event_fd;
    replica->retires_.resize(kSqSize);
    return replica;
}

Replica::~Replica() {
    std::lock_guard lock(cq_mu_);
    if (!conn_)
        return;
    // Wait briefly for CLOSED so that the daemon ends the session now, not
    // when it notices the socket gone.
    if (conn_->Disconnect().ok() && !failed()) {
        pollfd p{event_fd_, POLLIN, 0};
        if (poll(&p, 1, 1000) == 1)
            (void)conn_->NextEvent();
    }
    Drop();
}

void Replica::Close(Status why) {
    (void)Fail(why.ok() ? Status(StatusCode::kDataPlane, "closed") : std::move(why));
    // After a wait in another thread (AwaitEvent) on the queue deleted here.
    std::lock_guard lock(cq_mu_);
    if (!conn_)
        return;
    // Every use of the connection checks failed() first, so none follows.
    // No wait for CLOSED: the daemon may be the reason this replica failed.
    (void)conn_->Disconnect();
    Drop();
}

void Replica::Drop() {
    conn_.reset();
    cq_ = nullptr;
    cq_fd_ = event_fd_ = -1;
    // Deleting the connection is not enough: a tcp connection that was
    // disconnecting keeps sending what was queued (up to its 2 s linger),
    // reading the payloads from local memory when the socket takes them.
    // Once deregistration returns, nothing reads or writes the memory any
    // more (the tcp provider breaks such a connection instead), so the
    // owner may reuse or free it.
    buffers_.clear();
    messages_mr_.reset();
}

Status Replica::Register(size_t id, std::span<std::byte> bytes) {
    if (buffers_.size() <= id)
        buffers_.resize(id + 1);
    auto mr =
        MemoryRegion::Register(*peer_, bytes, RPMA_MR_USAGE_WRITE_SRC | RPMA_MR_USAGE_READ_DST);
    if (!mr.ok())
        return DataPlaneError(address_ + ": registering a buffer", mr.error());
    buffers_[id].emplace(std::move(*mr));
    return Status();
}

void Replica::Unregister(size_t id) {
    if (id < buffers_.size())
        buffers_[id].reset();
}

bool Replica::Fail(Status status) {
    if (failure_.ok())
        failure_ = std::move(status);
    return false;
}

void Replica::Posted(uint64_t seq, bool signaled) {
    if (Idle())
        silent_since_ = CoarseNow();
    ++posted_;
    last_posted_ = seq;
    if (!signaled) {
        ++unsignaled_run_;
        return;
    }
    unsignaled_run_ = 0;
    retires_[signaled_posted_++ % kSqSize] = posted_;
}

bool Replica::PostWrite(uint64_t remote_offset, size_t buffer, size_t local_offset, size_t length,
                        uint64_t seq, bool confirmed_by_next) {
    if (failed())
        return false;
    const bool signaled = !confirmed_by_next || unsignaled_run_ >= kMaxUnsignaledRun;
    // The persist comes next, or the region rings: one send for them all.
    const int flags = (signaled ? RPMA_F_COMPLETION_ALWAYS : RPMA_F_COMPLETION_ON_ERROR) |
                      (confirmed_by_next || hold_posts_ ? RPMA_EXT_F_MORE : 0);
    const auto posted = rpma::detail::Check(rpma_write(conn_->get(), region_->get(), remote_offset,
                                                       buffers_.at(buffer)->get(), local_offset,
                                                       length, flags, Context(seq << 1)));
    if (posted.code != 0)
        return Fail(PostError("posting a write", posted, "rpma_write", remote_offset, length));
    holding_ = holding_ || hold_posts_;
    Posted(seq, signaled);
    return true;
}

void Replica::RingDoorbell() {
    if (!holding_ || failed())
        return;
    holding_ = false;
    rpma_ext_conn_ring_doorbell(conn_->get());
}

bool Replica::PostRead(uint64_t remote_offset, size_t buffer, size_t local_offset, size_t length,
                       uint64_t seq) {
    if (failed())
        return false;
    const auto posted = rpma::detail::Check(
        rpma_read(conn_->get(), buffers_.at(buffer)->get(), local_offset, region_->get(),
                  remote_offset, length, RPMA_F_COMPLETION_ALWAYS, Context(seq << 1)));
    if (posted.code != 0)
        return Fail(PostError("posting a read", posted, "rpma_read", remote_offset, length));
    Posted(seq, true);
    return true;
}

std::string Replica::Backlog() const {
    std::string backlog = std::to_string(posted_ - finished_) + " work requests outstanding";
    if (gpspm_)
        backlog += ", " + std::to_string(flushes_posted_ - flushes_answered_) +
                   " flush requests unanswered";
    backlog += ", completed up to seq " + std::to_string(completed_) + " of " +
               std::to_string(last_posted_) + " posted";
    if (!Idle())
        backlog += ", silent for " +
                   std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                                      CoarseNow() - silent_since_)
                                      .count()) +
                   " ms";
    return backlog;
}

bool Replica::PostPersist(uint64_t offset, uint64_t length, uint64_t seq) {
    if (failed())
        return false;
    if (!gpspm_) {
        const auto posted = rpma::detail::Check(
            rpma_flush(conn_->get(), region_->get(), offset, length, RPMA_FLUSH_TYPE_PERSISTENT,
                       RPMA_F_COMPLETION_ALWAYS, Context(seq << 1 | 1)));
        if (posted.code != 0)
            return Fail(
                PostError("posting a persistent flush", posted, "rpma_flush", offset, length));
        holding_ = false;  // the flush went, and whatever waited with it
        Posted(seq, true);
        return true;
    }
    // A request slot is free again once its response came: at most
    // kMaxFlushesInFlight are outstanding (HasRoom).
    const size_t at = (flushes_posted_ % wire::kMaxFlushesInFlight) * wire::kFlushRequestSize;
    wire::EncodeFlushRequest({seq, offset, length},
                             std::span<std::byte, wire::kFlushRequestSize>(
                                 messages_.data() + at, wire::kFlushRequestSize));
    const auto posted = rpma::detail::Check(rpma_send(
        conn_->get(), messages_mr_->get(), at, wire::kFlushRequestSize,
        RPMA_F_COMPLETION_ALWAYS | (hold_posts_ ? RPMA_EXT_F_MORE : 0), Context(seq << 1)));
    if (posted.code != 0)
        return Fail(PostError("posting a GPSPM flush request", posted, "rpma_send", at,
                              wire::kFlushRequestSize));
    holding_ = holding_ || hold_posts_;
    Posted(seq, true);
    ++flushes_posted_;
    return true;
}

bool Replica::OnCompletion(const ibv_wc &wc) {
    if (wc.status != IBV_WC_SUCCESS)
        return Fail(Status(StatusCode::kDataPlane,
                           std::string("a work request failed: ") + ibv_wc_status_str(wc.status) +
                               " (the connection broke or the daemon refused the access)"));
    if ((wc.wr_id & kReceiveBit) == 0) {
        const uint64_t seq = wc.wr_id >> 1;
        // Successful completions are the signaled ones, in posting order.
        finished_ = retires_[signaled_finished_++ % kSqSize];
        completed_ = std::max(completed_, seq);
        if (wc.wr_id & 1)
            persisted_ = std::max(persisted_, seq);
        return true;
    }
    const size_t slot = wc.wr_id & ~kReceiveBit;
    const size_t at = kResponsesAt + slot * wire::kFlushResponseSize;
    const auto response =
        wire::DecodeFlushResponse(std::span(messages_.data() + at, wire::kFlushResponseSize));
    if (!response)
        return Fail(Status(StatusCode::kInternal, "a malformed GPSPM flush response"));
    if (response->status != wire::FlushStatus::kOk)
        return Fail(Status(StatusCode::kDataPlane,
                           "the daemon refused a GPSPM flush request (status " +
                               std::to_string(static_cast<int>(response->status)) + ")"));
    ++flushes_answered_;
    persisted_ = std::max(persisted_, response->request_id);
    const auto reposted =
        rpma::detail::Check(rpma_recv(conn_->get(), messages_mr_->get(), at,
                                      wire::kFlushResponseSize, Context(kReceiveBit | slot)));
    if (reposted.code != 0)
        return Fail(
            PostError("reposting a receive", reposted, "rpma_recv", at, wire::kFlushResponseSize));
    return true;
}

bool Replica::CheckConnection() {
    if (failed())
        return false;
    // A connection event now can only be its end (CLOSED or LOST).
    pollfd p{event_fd_, POLLIN, 0};
    if (poll(&p, 1, 0) == 1) {
        auto event = conn_->NextEvent();
        if (event.ok() && (*event == RPMA_CONN_CLOSED || *event == RPMA_CONN_LOST))
            return Fail(
                Status(StatusCode::kDataPlane, std::string("the data-plane connection ended (") +
                                                   rpma_utils_conn_event_2str(*event) +
                                                   "): the daemon stopped or the network failed"));
    }
    return true;
}

bool Replica::Wait(std::chrono::milliseconds timeout, bool *fired) {
    *fired = false;
    if (failed())
        return false;
    int waited = 0;
    {
        std::lock_guard lock(cq_mu_);
        // Another thread's wait (AwaitEvent) may have taken the event of
        // completions still in the queue: collect them first, or this
        // wait would be for an event that already came.
        bool took = false;
        if (!Collect(&took))
            return false;
        if (took) {
            *fired = true;
            return true;
        }
        waited = rpma_ext_cq_wait_timeout(cq_, static_cast<int>(timeout.count()));
    }
    return TakeEvent(waited, fired);
}

int Replica::AwaitEvent(std::chrono::milliseconds timeout) {
    std::lock_guard lock(cq_mu_);
    if (cq_ == nullptr)  // closed meanwhile
        return RPMA_E_INVAL;
    // The event re-arms the queue; completions that came before are polled
    // by TakeEvent. An event left by completions Progress already took
    // costs one empty round.
    return rpma_ext_cq_wait_timeout(cq_, static_cast<int>(timeout.count()));
}

bool Replica::TakeEvent(int waited, bool *fired) {
    *fired = false;
    if (failed())
        return false;
    if (waited == RPMA_E_NO_COMPLETION)
        return true;
    if (waited != 0)
        return Fail(Status(StatusCode::kDataPlane,
                           std::string("waiting for completions: ") + rpma_err_2str(waited)));
    *fired = true;
    return Progress();
}

bool Replica::ProgressUnlessWaited() {
    if (failed())
        return false;
    std::unique_lock lock(cq_mu_, std::try_to_lock);
    return !lock.owns_lock() || Collect();
}

bool Replica::Progress() {
    if (failed())
        return false;
    std::lock_guard lock(cq_mu_);
    return Collect();
}

bool Replica::Collect(bool *took) {
    ibv_wc wc[16];
    for (;;) {
        // The C API, as for posts: no Result to build per poll.
        int n = 0;
        const auto polled =
            rpma::detail::Check(rpma_cq_get_wc(cq_, static_cast<int>(std::size(wc)), wc, &n));
        if (polled.code == RPMA_E_NO_COMPLETION)
            return true;
        if (polled.code != 0)
            return Fail(DataPlaneError("polling completions",
                                       rpma::detail::Failure(polled, "rpma_cq_get_wc")));
        if (took != nullptr)
            *took = *took || n > 0;
        if (n > 0)
            silent_since_ = CoarseNow();
        for (int i = 0; i < n; ++i)
            if (!OnCompletion(wc[i]))
                return false;
        if (n < static_cast<int>(std::size(wc)))
            return true;
    }
}

std::vector<int> Replica::Fds() const {
    if (failed())
        return {};
    return {cq_fd_, event_fd_};
}

}  // namespace rpma::client
