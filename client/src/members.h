// A Region's replica set as its operations see it: the members (address,
// session, state) and the rule that counts them (the quorum, and whether
// the daemons keep replica-set records). Private to the library; used under
// the Region's mutex.
#ifndef CLIENT_SRC_MEMBERS_H
#define CLIENT_SRC_MEMBERS_H

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "op.h"
#include "plan.h"
#include "replica.h"
#include "rpma/client/region.h"

namespace rpma::client {

// A replica the operations leave out: failed while open, or stale since the
// open (no session).
inline bool Out(ReplicaState state) {
    return state == ReplicaState::kFailed || state == ReplicaState::kStale;
}

struct Member {
    std::string address;
    std::string data_address;  // ReplicaSet::data_addresses' override, if any
    std::unique_ptr<ControlPlane> control;
    std::unique_ptr<Replica> replica;
    ReplicaState state = ReplicaState::kFailed;
    Status error;
    // The last seq posted before it joined (Readd): what came before is
    // not its to confirm.
    uint64_t joined_after = 0;
    // The session of a connection that Readd dropped and whose end the
    // daemon has not been seen to reach: until it has, the daemon may
    // still apply that connection's queued writes, over a resync's copy.
    std::string draining_session;
    // Its daemon's identity (as reached), and the generation that first
    // excluded it from the in-sync members (0 while in sync).
    std::string daemon_id;
    uint64_t stale_since = 0;
};

class Members {
  public:
    size_t size() const { return members_.size(); }
    Member &operator[](size_t i) { return members_[i]; }
    const Member &operator[](size_t i) const { return members_[i]; }
    std::vector<Member>::iterator begin() { return members_.begin(); }
    std::vector<Member>::iterator end() { return members_.end(); }
    std::vector<Member>::const_iterator begin() const { return members_.begin(); }
    std::vector<Member>::const_iterator end() const { return members_.end(); }
    void push_back(Member m) { members_.push_back(std::move(m)); }
    // Every replica goes (its connection, its registrations).
    void clear() { members_.clear(); }

    // The fewest replicas an operation may be acknowledged by
    // (OpenOptions::quorum, or every member).
    size_t quorum() const { return quorum_; }
    void set_quorum(size_t quorum) { quorum_ = quorum; }
    // The daemons keep no replica-set records (older than them).
    bool legacy() const { return legacy_; }
    void set_legacy(bool legacy) { legacy_ = legacy; }

    // Members in sync and not failed.
    size_t Live() const;
    // The first live member (a repair's source); size() if none.
    size_t FirstLive() const;
    // A set with one replica to hear from, that counts (live) and meets a
    // quorum of one alone: the replica, or size() when the set has none
    // such. Nothing is acknowledged without it, so its operations go into
    // no acknowledgement history.
    size_t Sole() const;
    // kQuorumLost for `op`, naming every replica left out and why.
    Status QuorumLost(const Op &op) const;
    Status CheckQuorum(const Op &op) const { return Live() < quorum_ ? QuorumLost(op) : Status(); }
    // Whether an operation `confirmed` by that many live replicas, with
    // `undecided` more still to answer, is acknowledged: with records every
    // in-sync member is waited for and the quorum is the fewest it may be
    // acknowledged by (rule 3); legacy: the quorum.
    Verdict Count(size_t confirmed, size_t undecided) const {
        return legacy_ ? QuorumVerdict(confirmed, undecided, quorum_)
                       : InSyncVerdict(confirmed, undecided, quorum_);
    }
    // Whether `holds` is true of every replica not failed: the check that
    // spares an operation whose resources are free the cost of a wait.
    template <typename Predicate>
    bool AllHold(const Predicate &holds) const {
        for (const Member &m : members_)
            if (!Out(m.state) && !holds(*m.replica))
                return false;
        return true;
    }

    // Posts wait for the doorbell (Replica::HoldPosts) while `hold`.
    void HoldPosts(bool hold) {
        for (Member &m : members_)
            m.replica->HoldPosts(hold);
    }
    // Sends what waits for the doorbell, on every replica not left out:
    // before a wait blocks, which is what makes holding safe.
    void RingAll() {
        for (Member &m : members_)
            if (!Out(m.state))
                m.replica->RingDoorbell();
    }

  private:
    std::vector<Member> members_;
    size_t quorum_ = 0;
    bool legacy_ = false;
};

}  // namespace rpma::client

#endif  // CLIENT_SRC_MEMBERS_H
