// Admission: a connection request is accepted only with a valid session
// token, into the protection domain of the one region its session names.
#include "daemon/data_plane.h"
#include "daemon/data_plane_state.h"
#include "daemon/log.h"
#include "proto/rpmad/v1/data_plane_wire.h"

namespace rpmad {
namespace {

// The address a connection request came from, for the log.
std::string PeerAddress(const rpma::ConnReq &request) {
    auto address = request.PeerAddress();
    return address.ok() ? *address : "an unknown address";
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
    wire::ConnectAccept accept{region->access.persistence == Persistence::kApm
                                   ? wire::AcceptedPersistence::kApm
                                   : wire::AcceptedPersistence::kGpspm,
                               region->region->size(), region->access.region_descriptor,
                               region->access.peer_cfg_descriptor};
    const auto accept_data = wire::EncodeConnectAccept(accept);
    auto conn = request.Connect(accept_data);
    if (!conn.ok())
        return fail(conn.error().message());
    link->conn.emplace(std::move(*conn));

    auto event_fd = link->conn->EventFd();
    auto cq_fd = link->conn->Cq().fd();
    if (!event_fd.ok() || !cq_fd.ok() || !SetNonBlocking(*event_fd).ok() ||
        !SetNonBlocking(*cq_fd).ok()) {
        counters_.errors++;
        (void)sessions_.Close(token.session_id);
        Log().error("session {}: setting up the connection's descriptors failed", session);
        return;
    }
    link->token = ++last_token_;
    link_tokens_[link->token] = token.session_id;
    loop_->Watch(*event_fd, link->token << 1);
    if (link->messages_mr)
        loop_->Watch(*cq_fd, link->token << 1 | kCompletionsBit);
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

}  // namespace rpmad
