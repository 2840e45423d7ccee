// The operations a Region's quorum acknowledged, the newest of them: when a
// replica is marked failed, its error names those it had not confirmed (what
// a repair must bring back to it, and how far behind it was).
#ifndef CLIENT_SRC_ACK_HISTORY_H
#define CLIENT_SRC_ACK_HISTORY_H

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "op.h"

namespace rpma::client {

class AckHistory {
  public:
    // Keeps the newest `kept` (at least 1).
    explicit AckHistory(size_t kept);

    // `op` was acknowledged once `seq` was confirmed.
    void Add(const Op &op, uint64_t seq);

    // Whether a replica confirmed `op`, acknowledged at `seq`.
    using Confirmed = std::function<bool(const Op &op, uint64_t seq)>;
    // "; it had not confirmed N earlier operations that the quorum
    // acknowledged without it, from A to B" for a replica that joined after
    // seq `joined_after` (earlier ones it never had to confirm), "at least"
    // when the oldest kept is among them; "" when it confirmed every one.
    // A failure's path only.
    std::string Unconfirmed(uint64_t joined_after, const Confirmed &confirmed) const;

  private:
    struct Entry {
        Op op{Op::Kind::kWrite};
        uint64_t seq = 0;
    };
    std::vector<Entry> ring_;
    uint64_t count_ = 0;  // ever added
};

}  // namespace rpma::client

#endif  // CLIENT_SRC_ACK_HISTORY_H
