#include "members.h"

namespace rpma::client {

size_t Members::Live() const {
    size_t live = 0;
    for (const Member &m : members_)
        live += m.state == ReplicaState::kLive;
    return live;
}

size_t Members::FirstLive() const {
    for (size_t i = 0; i < members_.size(); ++i)
        if (members_[i].state == ReplicaState::kLive)
            return i;
    return members_.size();
}

size_t Members::Sole() const {
    if (quorum_ != 1)
        return members_.size();
    size_t sole = members_.size();
    for (size_t i = 0; i < members_.size(); ++i) {
        if (Out(members_[i].state))
            continue;
        // A second one to post to, or one that does not count yet.
        if (sole != members_.size() || members_[i].state != ReplicaState::kLive)
            return members_.size();
        sole = i;
    }
    return sole;
}

Status Members::QuorumLost(const Op &op) const {
    std::string failed;
    for (const Member &m : members_)
        if (Out(m.state))
            failed += "; " + m.error.ToString();
    return Status(StatusCode::kQuorumLost,
                  op.ToString() + ": " + std::to_string(Live()) + " of " +
                      std::to_string(members_.size()) + " replicas live, " +
                      std::to_string(quorum_) +
                      " needed (Readd failed replicas once they are back)" + failed);
}

}  // namespace rpma::client
