#include "ack_history.h"

#include <algorithm>

namespace rpma::client {

AckHistory::AckHistory(size_t kept) : ring_(std::max<size_t>(kept, 1)) {}

void AckHistory::Add(const Op &op, uint64_t seq) {
    ring_[count_++ % ring_.size()] = {op, seq};
}

std::string AckHistory::Unconfirmed(uint64_t joined_after, const Confirmed &confirmed) const {
    const uint64_t kept = std::min<uint64_t>(count_, ring_.size());
    size_t count = 0;
    const Op *first = nullptr, *last = nullptr;
    for (uint64_t k = count_ - kept; k < count_; ++k) {
        const Entry &a = ring_[k % ring_.size()];
        if (a.seq <= joined_after || confirmed(a.op, a.seq))
            continue;
        ++count;
        first = first ? first : &a.op;
        last = &a.op;
    }
    if (count == 0)
        return "";
    // The oldest kept unconfirmed: older ones may be unconfirmed too.
    const bool maybe_more =
        kept == ring_.size() && first == &ring_[(count_ - kept) % ring_.size()].op;
    return "; it had not confirmed " + std::string(maybe_more ? "at least " : "") +
           std::to_string(count) + " earlier operation" + (count == 1 ? "" : "s") +
           " that the quorum acknowledged without it, " +
           (count == 1 ? last->ToString()
                       : "from " + first->ToString() + " to " + last->ToString());
}

}  // namespace rpma::client
