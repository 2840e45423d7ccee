#include "daemon/session_table.h"

#include <sys/random.h>

#include <cerrno>
#include <cstring>
#include "util/constant_time.h"

namespace rpmad {
namespace {

// Fills `out` from the kernel's CSPRNG; getrandom(2) blocks only before the
// pool is initialised at boot, and never returns short for <= 256 bytes.
bool FillRandom(void *out, size_t size) {
    ssize_t n;
    do {
        n = getrandom(out, size, 0);
    } while (n < 0 && errno == EINTR);
    return n == static_cast<ssize_t>(size);
}

}  // namespace

bool SecretsEqual(const std::array<uint8_t, 16> &a, const std::array<uint8_t, 16> &b) {
    return rpma::util::ConstantTimeEquals(
        std::string_view(reinterpret_cast<const char *>(a.data()), a.size()),
        std::string_view(reinterpret_cast<const char *>(b.data()), b.size()));
}

SessionTable::SessionTable(uint32_t max_sessions, std::chrono::seconds token_ttl,
                           SessionQuotas quotas)
    : max_sessions_(max_sessions), token_ttl_(token_ttl), quotas_(quotas) {}

Status SessionTable::CheckQuotas(const Requester &who) const {
    uint32_t held = 0, pending = 0;
    for (const auto &[id, entry] : sessions_) {
        if (entry.info.opener.identity != who.identity)
            continue;
        ++held;
        pending += !entry.info.connected && entry.info.opener.address == who.address;
    }
    if (quotas_.max_pending_per_peer != 0 && pending >= quotas_.max_pending_per_peer)
        return Status(StatusCode::kResourceExhausted,
                      who.identity + " from " + who.address + " has " + std::to_string(pending) +
                          " sessions opened but not connected, the limit of "
                          "sessions.max_pending_per_peer: connect with their tokens or let "
                          "them expire (sessions.token_ttl_seconds), or raise "
                          "sessions.max_pending_per_peer");
    if (quotas_.max_per_identity != 0 && held >= quotas_.max_per_identity)
        return Status(StatusCode::kResourceExhausted,
                      who.identity + " has " + std::to_string(held) +
                          " open sessions, the limit of sessions.max_per_identity: close "
                          "sessions it no longer uses, or raise sessions.max_per_identity");
    return Status();
}

StatusOr<SessionGrant> SessionTable::Open(const std::string &region, uint64_t region_id,
                                          const Requester &who, uint64_t replica_set_generation) {
    Entry entry;
    bool random_ok = FillRandom(entry.token.secret.data(), entry.token.secret.size());
    std::lock_guard lock(mu_);
    if (Status quota = CheckQuotas(who); !quota.ok())
        return quota;
    if (sessions_.size() >= max_sessions_)
        return Status(StatusCode::kResourceExhausted,
                      "the daemon has " + std::to_string(max_sessions_) +
                          " open sessions, its limit: close sessions that are no longer "
                          "used, or raise limits.max_sessions");
    do {
        random_ok = random_ok && FillRandom(&entry.token.session_id, sizeof(uint64_t));
    } while (random_ok && (entry.token.session_id == 0 || sessions_.count(entry.token.session_id)));
    if (!random_ok)
        return Status(
            StatusCode::kInternal,
            std::string("reading random bytes for a session token failed: ") + strerror(errno));
    const auto now = std::chrono::system_clock::now();
    entry.info.session_id = entry.token.session_id;
    entry.info.region = region;
    entry.info.opener = who;
    entry.info.replica_set_generation = replica_set_generation;
    entry.info.opened = now;
    entry.info.token_expires = now + token_ttl_;
    entry.deadline = std::chrono::steady_clock::now() + token_ttl_;
    entry.region_id = region_id;
    SessionGrant grant{entry.token, region, region_id, entry.info.token_expires};
    sessions_.emplace(entry.token.session_id, std::move(entry));
    return grant;
}

StatusOr<SessionGrant> SessionTable::Redeem(const wire::SessionToken &token,
                                            const std::string &peer, Refusal *why) {
    auto refuse = [why](Refusal refusal, std::string message) {
        if (why != nullptr)
            *why = refusal;
        return Status(StatusCode::kUnauthenticated, std::move(message));
    };
    std::lock_guard lock(mu_);
    auto it = sessions_.find(token.session_id);
    if (it == sessions_.end())
        return refuse(Refusal::kUnknownSession,
                      "no session " + wire::SessionIdString(token.session_id) +
                          " (closed, expired or never opened): open a new session");
    Entry &entry = it->second;
    if (!SecretsEqual(entry.token.secret, token.secret))
        return refuse(Refusal::kWrongSecret,
                      "wrong token for session " + wire::SessionIdString(token.session_id));
    if (entry.info.connected)
        return refuse(Refusal::kUsed,
                      "the token of session " + wire::SessionIdString(token.session_id) +
                          " was already used: a token admits one connection, open a new "
                          "session");
    if (std::chrono::steady_clock::now() >= entry.deadline) {
        sessions_.erase(it);
        return refuse(Refusal::kExpired,
                      "the token of session " + wire::SessionIdString(token.session_id) +
                          " expired: connect within sessions.token_ttl_seconds of opening it");
    }
    entry.info.connected = true;
    entry.info.peer = peer;
    return SessionGrant{entry.token, entry.info.region, entry.region_id, entry.info.token_expires};
}

StatusOr<bool> SessionTable::Close(uint64_t session_id) {
    std::lock_guard lock(mu_);
    auto it = sessions_.find(session_id);
    if (it == sessions_.end())
        return Status(StatusCode::kNotFound, "no session " + wire::SessionIdString(session_id) +
                                                 ": list the open sessions with ListSessions");
    const bool connected = it->second.info.connected;
    sessions_.erase(it);
    return connected;
}

std::vector<uint64_t> SessionTable::CloseRegion(const std::string &region) {
    std::lock_guard lock(mu_);
    std::vector<uint64_t> closed;
    for (auto it = sessions_.begin(); it != sessions_.end();) {
        if (it->second.info.region == region) {
            closed.push_back(it->first);
            it = sessions_.erase(it);
        } else {
            ++it;
        }
    }
    return closed;
}

std::vector<uint64_t> SessionTable::ExpirePending() {
    const auto now = std::chrono::steady_clock::now();
    std::lock_guard lock(mu_);
    std::vector<uint64_t> expired;
    for (auto it = sessions_.begin(); it != sessions_.end();) {
        if (!it->second.info.connected && now >= it->second.deadline) {
            expired.push_back(it->first);
            it = sessions_.erase(it);
        } else {
            ++it;
        }
    }
    return expired;
}

std::optional<std::chrono::steady_clock::time_point> SessionTable::NextExpiry() const {
    std::lock_guard lock(mu_);
    std::optional<std::chrono::steady_clock::time_point> next;
    for (const auto &[id, entry] : sessions_)
        if (!entry.info.connected && (!next || entry.deadline < *next))
            next = entry.deadline;
    return next;
}

void SessionTable::CountFlush(uint64_t session_id, uint64_t bytes) {
    std::lock_guard lock(mu_);
    auto it = sessions_.find(session_id);
    if (it == sessions_.end())
        return;
    it->second.info.flushes++;
    it->second.info.bytes_flushed += bytes;
}

bool SessionTable::SetGeneration(uint64_t session_id, const std::string &region,
                                 uint64_t generation) {
    std::lock_guard lock(mu_);
    auto it = sessions_.find(session_id);
    if (it == sessions_.end() || it->second.info.region != region)
        return false;
    it->second.info.replica_set_generation = generation;
    return true;
}

size_t SessionTable::size() const {
    std::lock_guard lock(mu_);
    return sessions_.size();
}

size_t SessionTable::CountForRegion(const std::string &region) const {
    std::lock_guard lock(mu_);
    size_t count = 0;
    for (const auto &[id, entry] : sessions_)
        count += entry.info.region == region;
    return count;
}

std::vector<SessionInfo> SessionTable::List(const std::string &region) const {
    std::lock_guard lock(mu_);
    std::vector<SessionInfo> list;
    for (const auto &[id, entry] : sessions_)
        if (region.empty() || entry.info.region == region)
            list.push_back(entry.info);
    return list;
}

}  // namespace rpmad
