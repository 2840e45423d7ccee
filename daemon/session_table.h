// The sessions of one rpmad: who may connect to which region. OpenSession
// makes a pending session with a random token; the data plane redeems the
// token once, when its connection arrives, and the session then lives as
// long as that connection. A pending session whose token was not redeemed
// in time expires.
//
// Tokens: a 64-bit session id (public, names the session) and a 128-bit
// secret from getrandom(2), compared in constant time. A token is bound to
// one region (by name and by the region's id, so a region deleted and
// created again does not honour old tokens) and admits one connection.
// Secrets are never logged.
//
// Quotas: besides limits.max_sessions for all, sessions.max_per_identity
// bounds the sessions (pending or connected) of one identity, and
// sessions.max_pending_per_peer the pending ones of one peer (an identity
// at one address), so that a client opening sessions it never connects
// cannot take every session from the others.
#ifndef DAEMON_SESSION_TABLE_H
#define DAEMON_SESSION_TABLE_H

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "daemon/status.h"
#include "proto/rpmad/v1/data_plane_wire.h"

namespace rpmad {

// Who opens a session, as the control plane authenticated it.
struct Requester {
    // "token:NAME" (sessions.client_tokens_file), "admin" (the admin token),
    // "cert:SUBJECT" (a verified TLS client certificate), else
    // "address:HOST" when nothing authenticates the caller.
    std::string identity;
    std::string address;  // the caller's host, without the port
};

// 0: no limit of that kind (limits.max_sessions still holds).
struct SessionQuotas {
    uint32_t max_per_identity = 0;
    uint32_t max_pending_per_peer = 0;
};

struct SessionGrant {
    wire::SessionToken token;
    std::string region;
    uint64_t region_id = 0;
    std::chrono::system_clock::time_point token_expires;
};

struct SessionInfo {
    uint64_t session_id = 0;
    std::string region;
    Requester opener;
    bool connected = false;
    std::string peer;
    std::chrono::system_clock::time_point opened;
    std::chrono::system_clock::time_point token_expires;
    uint64_t flushes = 0;
    uint64_t bytes_flushed = 0;
    // The replica-set generation its writer opened it under (0: never
    // fenced); a SetReplicaSet that keeps it moves it on.
    uint64_t replica_set_generation = 0;
};

class SessionTable {
  public:
    SessionTable(uint32_t max_sessions, std::chrono::seconds token_ttl, SessionQuotas quotas = {});

    // RESOURCE_EXHAUSTED, naming the config key, when `who` is at a quota
    // or max_sessions are open (pending or connected).
    StatusOr<SessionGrant> Open(const std::string &region, uint64_t region_id,
                                const Requester &who = {}, uint64_t replica_set_generation = 0);

    // Why Redeem refused a token, for the counters.
    enum class Refusal { kUnknownSession, kWrongSecret, kUsed, kExpired };
    // Admits the connection that presents `token` from `peer`: the session
    // becomes connected and its token is spent. UNAUTHENTICATED (unknown
    // session, wrong secret, token already used, token expired) — the
    // message says which, without any secret, and *why too when given.
    StatusOr<SessionGrant> Redeem(const wire::SessionToken &token, const std::string &peer,
                                  Refusal *why = nullptr);

    // Ends a session (its connection, if any, is the caller's to close).
    // NOT_FOUND when there is none. Returns whether it was connected.
    StatusOr<bool> Close(uint64_t session_id);
    // Ends the sessions of a region; returns their ids.
    std::vector<uint64_t> CloseRegion(const std::string &region);
    // Removes pending sessions whose token expired; returns their ids.
    std::vector<uint64_t> ExpirePending();
    // When the next pending token expires, if any.
    std::optional<std::chrono::steady_clock::time_point> NextExpiry() const;

    void CountFlush(uint64_t session_id, uint64_t bytes);
    // Moves a session of `region` to replica-set generation `generation`
    // (a writer's session that a SetReplicaSet keeps); false when there is
    // no such session.
    bool SetGeneration(uint64_t session_id, const std::string &region, uint64_t generation);

    size_t size() const;
    size_t CountForRegion(const std::string &region) const;
    // Sorted by session id; all regions when `region` is empty.
    std::vector<SessionInfo> List(const std::string &region) const;

  private:
    struct Entry {
        SessionInfo info;
        wire::SessionToken token;
        std::chrono::steady_clock::time_point deadline;
        uint64_t region_id = 0;
    };

    // OK, or why `who` may not open another session now; under mu_.
    Status CheckQuotas(const Requester &who) const;

    const uint32_t max_sessions_;
    const std::chrono::seconds token_ttl_;
    const SessionQuotas quotas_;
    mutable std::mutex mu_;
    std::map<uint64_t, Entry> sessions_;
};

// True when the two secrets are equal; takes the same time whatever they hold.
bool SecretsEqual(const std::array<uint8_t, 16> &a, const std::array<uint8_t, 16> &b);

}  // namespace rpmad

#endif  // DAEMON_SESSION_TABLE_H
