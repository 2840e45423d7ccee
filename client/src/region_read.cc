// Region's reads: from one replica in sync, a piece at a time (up to 1 MiB
// through the staging ring, or straight into a registered buffer), each
// posted under the mutex and waited for without it.
#include <algorithm>
#include <cstring>

#include "region_impl.h"

namespace rpma::client {

Status Region::Impl::Read(uint64_t offset, std::span<std::byte> out, size_t index) {
    const Op op{Op::Kind::kRead, offset, out.size(), 0, index};
    if (!InRange(offset, out.size(), size_))
        return Beyond(op);
    std::lock_guard lock(mu_);
    if (attention_) [[unlikely]] {
        if (Status s = Attend(op, false); !s.ok())
            return s;
        if (read_only_ && !members_.legacy())
            return ReadConfirmed(op, offset, out, index);
    }
    return ReadLocked(op, offset, out, index);
}

Status Region::Impl::Readable(const Op &op, size_t index) const {
    if (index >= members_.size())
        return Status(
            StatusCode::kInvalidArgument,
            op.ToString() + ": the set has " + std::to_string(members_.size()) + " replicas");
    const Member &m = members_[index];
    if (m.state == ReplicaState::kLive)
        return Status();
    if (m.stale_since > 0 || m.state == ReplicaState::kStale || m.state == ReplicaState::kResyncing)
        return Status(StatusCode::kFailedPrecondition,
                      op.ToString() + ": replica " + std::to_string(index) + " is " +
                          (m.state == ReplicaState::kResyncing ? "being repaired" : "stale") +
                          (m.stale_since > 0 ? " (missed writes since generation " +
                                                   std::to_string(m.stale_since) + ")"
                                             : std::string()) +
                          ": read another or repair it" +
                          (m.error.ok() ? "" : " (" + m.error.ToString() + ")"))
            .WithReplica(index, m.address);
    return Status(StatusCode::kFailedPrecondition, op.ToString() + ": the replica is not live (" +
                                                       m.error.ToString() +
                                                       "); read from another or Readd it")
        .WithReplica(index, m.address);
}

Status Region::Impl::PostReadPiece(const Op &op, uint64_t offset, std::span<std::byte> out,
                                   size_t index, Posted *posted, size_t *taken) {
    if (Status s = Readable(op, index); !s.ok())
        return s;
    Replica &replica = *members_[index].replica;
    size_t buffer = kStagingId, local = 0, staged = SIZE_MAX;
    if (const Registered *r = registered_.Find(out.data(), out.size())) {
        buffer = r->id;
        local = static_cast<size_t>(out.data() - r->bytes.data());
        *taken = std::min(out.size(), kMaxPostBytes);
    } else {
        *taken = std::min(out.size(), StagingRing::kMaxExtent);
    }
    // Room on the replica and, when staged, an extent, both true together
    // (each wait releases mu_: look at both again after it).
    for (;;) {
        if (Status s = fan_out_.AwaitReleasing(
                op, Need::kOne, [](Replica &r) { return r.HasRoom(false); }, index);
            !s.ok())
            return s;
        if (Status s = Readable(op, index); !s.ok())
            return s;
        if (buffer != kStagingId)
            break;
        // The extent is this read's (seq_ + 1) until its bytes are copied
        // out (AwaitPosted), whoever collects its completion.
        if (const std::optional<size_t> at = TakeStaging(*taken)) {
            local = staged = *at;
            break;
        }
        if (Status s = AwaitStaging(op); !s.ok())
            return s;
    }
    const uint64_t seq = ++seq_;
    if (staged != SIZE_MAX)
        reads_copying_.insert(seq);
    posted->seq = seq;
    posted->read = true;
    posted->replica = index;
    posted->staged = staged;
    posted->out = out.first(*taken);
    if (!replica.PostRead(offset, buffer, local, *taken, seq)) {
        MarkFailed(index, replica.failure(), op);
        reads_copying_.erase(seq);
        return members_[index].error;
    }
    return Status();
}

Status Region::Impl::ReadLocked(const Op &op, uint64_t offset, std::span<std::byte> out,
                                size_t index) {
    if (Status s = Readable(op, index); !s.ok() || out.empty())
        return s;
    while (!out.empty()) {
        Posted posted;
        size_t taken = 0;
        if (Status s = PostReadPiece(op, offset, out, index, &posted, &taken); !s.ok())
            return s;
        if (Status s = AwaitPosted(op, posted); !s.ok())
            return s;
        offset += taken;
        out = out.subspan(taken);
    }
    return Status();
}

}  // namespace rpma::client
