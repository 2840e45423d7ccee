// Region's data path: replica set -> sessions (Replica::Connect) -> fan-out
// (post to every replica, then FanOut's waits) -> completions
// (Replica::Progress).
#include "rpma/client/region.h"

#include <algorithm>
#include <cassert>
#include <cstring>
#include <future>
#include <mutex>

#include "region_impl.h"

namespace rpma::client {

std::vector<ReplicaInfo> Region::Impl::Infos() const {
    std::lock_guard lock(mu_);
    std::vector<ReplicaInfo> infos;
    for (const Member &m : members_)
        infos.push_back({m.address, m.state, m.replica && m.replica->gpspm(), m.error, m.daemon_id,
                         m.stale_since});
    return infos;
}

void Region::Impl::MarkFailed(size_t i, Status why, const Op &op) {
    Member &m = members_[i];
    if (Out(m.state))
        return;
    // Rule 2: one in sync in the record is recorded STALE before the next
    // acknowledgement (Finish); one being repaired is REPAIRING already.
    if (m.state == ReplicaState::kLive && !members_.legacy() && !read_only_)
        record_pending_ = attention_ = true;
    m.state = ReplicaState::kFailed;
    m.error =
        Status(why.code(), "failed during " + op.ToString() + ": " + why.message() + Unconfirmed(i))
            .WithReplica(i, m.address);
    // At once: the staging extents and registered buffers it was given count
    // as free from now on (it is no longer waited for), so no late answer
    // of its may reach them.
    if (m.replica)
        m.replica->Close(m.error);
    if (options_.on_failure)
        options_.on_failure(m.error);
}

std::string Region::Impl::Unconfirmed(size_t i) const {
    const Member &m = members_[i];
    if (!m.replica)
        return "";
    const Replica &r = *m.replica;
    return acknowledged_.Unconfirmed(m.joined_after, [&r](const Op &op, uint64_t seq) {
        return op.kind == Op::Kind::kWrite ? r.Completed(seq) : r.persisted() >= seq;
    });
}

Status Region::Impl::EnsureRoom(const Op &op, bool persist, size_t requests) {
    auto has_room = [persist, requests](Replica &r) { return r.HasRoom(persist, requests); };
    if (members_.AllHold(has_room))
        return Status();
    return fan_out_.AwaitReleasing(op, Need::kAll, has_room);
}

Result<size_t> Region::Impl::StagingWithRoom(const Op &op, size_t length, bool then_persist) {
    const size_t requests = then_persist ? 2 : 1;
    auto has_room = [then_persist, requests](Replica &r) {
        return r.HasRoom(then_persist, requests);
    };
    // Each round either returns or waits for a completion (or a failure).
    for (;;) {
        if (Status s = EnsureRoom(op, then_persist, requests); !s.ok())
            return s;
        if (const std::optional<size_t> at = TakeStaging(length)) {
            if (members_.AllHold(has_room))
                return *at;
            continue;
        }
        if (Status s = AwaitStaging(op); !s.ok())
            return s;
    }
}

Status Region::Impl::AwaitStaging(const Op &op) {
    const uint64_t used_by = ring_.Oldest();
    if (!reads_copying_.empty() && used_by >= *reads_copying_.begin()) {
        // A read's bytes, still to be copied out by the thread that takes
        // its completion (AwaitPosted), which wakes the waiters after it.
        fan_out_.AwaitPoller(kPollSlice);
        return Status();
    }
    return fan_out_.AwaitReleasing(op, Need::kAll,
                                   [used_by](Replica &r) { return r.Completed(used_by); });
}

Result<size_t> Region::Impl::AcquireStaging(const Op &op, size_t length) {
    // Each round either returns or waits for the oldest extent in use.
    for (;;) {
        if (const std::optional<size_t> at = TakeStaging(length))
            return *at;
        if (Status s = AwaitStaging(op); !s.ok())
            return s;
    }
}

Region::Impl::Registered *Region::Impl::SendsFrom(std::span<const std::byte> bytes) {
    Registered *r = registered_.Find(bytes.data(), bytes.size());
    if (r == nullptr || members_.quorum() >= members_.size())
        return r;
    size_t posted_to = 0;
    for (const Member &m : members_)
        posted_to += !Out(m.state);
    return members_.quorum() >= posted_to ? r : nullptr;
}

Status Region::Impl::PostWrite(const Op &op, uint64_t offset, std::span<const std::byte> bytes,
                               uint64_t *last_seq, bool persist_next) {
    auto post = [&](size_t buffer, size_t local, uint64_t at, size_t length, bool confirmed) {
        const uint64_t seq = ++seq_;
        for (size_t i = 0; i < members_.size(); ++i)
            if (!Out(members_[i].state))
                if (Replica &r = *members_[i].replica;
                    !r.PostWrite(at, buffer, local, length, seq, confirmed))
                    MarkFailed(i, r.failure(), op);
        *last_seq = seq;
        return seq;
    };
    if (Registered *r = SendsFrom(bytes)) {
        const auto local = static_cast<size_t>(bytes.data() - r->bytes.data());
        for (const Piece piece : Chunks(offset, bytes.size(), kMaxPostBytes)) {
            const bool confirmed = persist_next && piece.skip + piece.length == bytes.size();
            if (Status s = EnsureRoom(op, confirmed, confirmed ? 2 : 1); !s.ok())
                return s;
            r->last_seq = post(r->id, local + piece.skip, piece.offset, piece.length, confirmed);
        }
        return Status();
    }
    const Pieces pieces = Chunks(offset, bytes.size(), StagingRing::kMaxExtent);
    for (size_t k = 0; k < pieces.size(); ++k) {
        const Piece piece = pieces[k];
        // Only the last piece: an earlier one's extent may be waited for by
        // a later piece (StagingWithRoom), which an unsignaled write never
        // ends.
        const bool confirmed = persist_next && k + 1 == pieces.size();
        auto at = StagingWithRoom(op, piece.length, confirmed);
        if (!at.ok())
            return at.status();
        std::memcpy(ring_.at(*at), bytes.data() + piece.skip, piece.length);
        post(kStagingId, *at, piece.offset, piece.length, confirmed);
    }
    return Status();
}

Status Region::Impl::PostPersist(const Op &op, uint64_t offset, uint64_t length, uint64_t *seq) {
    if (Status s = EnsureRoom(op, true); !s.ok())
        return s;
    *seq = ++seq_;
    for (size_t i = 0; i < members_.size(); ++i)
        if (!Out(members_[i].state))
            if (Replica &r = *members_[i].replica; !r.PostPersist(offset, length, *seq))
                MarkFailed(i, r.failure(), op);
    NotePersist(*seq);
    return Status();
}

Status Region::Impl::Write(uint64_t offset, std::span<const std::byte> bytes, bool persist) {
    const Op op{persist ? Op::Kind::kWritePersist : Op::Kind::kWrite, offset, bytes.size()};
    if (!InRange(offset, bytes.size(), size_))
        return Beyond(op);
    std::lock_guard lock(mu_);
    if (attention_) [[unlikely]]
        if (Status s = Attend(op, true); !s.ok())
            return s;
    return Pinned(op, Finish(op, WriteLocked(op, offset, bytes, persist)));
}

Status Region::Impl::WriteLocked(const Op &op, uint64_t offset, std::span<const std::byte> bytes,
                                 bool persist) {
    Posted posted;
    if (Status s = PostWriteOp(op, offset, bytes, persist, &posted); !s.ok())
        return s;
    return AwaitPosted(op, posted);
}

Status Region::Impl::PostWriteOp(const Op &op, uint64_t offset, std::span<const std::byte> bytes,
                                 bool persist, Posted *posted) {
    if (Status s = members_.CheckQuorum(op); !s.ok() || bytes.empty())
        return s;
    uint64_t last = 0;
    if (Status s = PostWrite(op, offset, bytes, &last, persist); !s.ok())
        return s;
    if (persist)
        if (Status s = PostPersist(op, offset, bytes.size(), &last); !s.ok())
            return s;
    *posted = Posted::ByQuorum(last, persist, members_.Sole() == members_.size());
    return Status();
}

Status Region::Impl::AwaitPosted(const Op &op, const Posted &posted) {
    if (posted.group != nullptr && posted.group == forming_)
        PostGroup();  // the oldest operation outstanding waits for it
    if (posted.group != nullptr && !posted.group->status.ok())
        return posted.group->status;
    // A group's persist comes after its members' writes (PersistOrJoin).
    assert(posted.group == nullptr || posted.group->seq > posted.seq);
    const uint64_t seq = posted.group != nullptr ? posted.group->seq : posted.seq;
    if (seq == 0)
        return Status();
    Status s;
    if (posted.read) {
        s = fan_out_.AwaitReleasing(
            op, Need::kOne, [seq](Replica &r) { return r.Completed(seq); }, posted.replica);
        if (posted.staged != SIZE_MAX) {
            if (s.ok())
                std::memcpy(posted.out.data(), ring_.at(posted.staged), posted.out.size());
            reads_copying_.erase(seq);
            // Writers may wait for the extent (AwaitStaging).
            fan_out_.WakeWaiters();
        }
        return s;
    }
    if (posted.persisted)
        s = fan_out_.AwaitReleasing(
            op, Need::kQuorum, [seq](Replica &r) { return r.persisted() >= seq; }, 0);
    else
        s = fan_out_.AwaitReleasing(
            op, Need::kQuorum, [seq](Replica &r) { return r.Completed(seq); }, 0);
    if (s.ok() && posted.acknowledge)
        Acknowledge(op, seq);
    return s;
}

bool Region::Impl::PostedDone(const Posted &posted) {
    if (posted.group != nullptr && (posted.group->seq == 0 || !posted.group->status.ok()))
        return !posted.group->status.ok();  // not posted yet, or failed
    const uint64_t seq = posted.group != nullptr ? posted.group->seq : posted.seq;
    if (seq == 0)
        return true;
    if (posted.read)
        return fan_out_.Decide(
                   Need::kOne, [seq](Replica &r) { return r.Completed(seq); }, posted.replica) !=
               Outcome::kWaiting;
    if (posted.persisted)
        return fan_out_.Decide(
                   Need::kQuorum, [seq](Replica &r) { return r.persisted() >= seq; }, 0) !=
               Outcome::kWaiting;
    return fan_out_.Decide(
               Need::kQuorum, [seq](Replica &r) { return r.Completed(seq); }, 0) !=
           Outcome::kWaiting;
}

Status Region::Impl::Persist(uint64_t offset, uint64_t length) {
    const Op op{Op::Kind::kPersist, offset, length};
    if (!InRange(offset, length, size_))
        return Beyond(op);
    std::lock_guard lock(mu_);
    if (attention_) [[unlikely]]
        if (Status s = Attend(op, true); !s.ok())
            return s;
    return Finish(op, PersistLocked(op, offset, length));
}

Status Region::Impl::PersistLocked(const Op &op, uint64_t offset, uint64_t length) {
    Posted posted;
    if (Status s = PostPersistOp(op, offset, length, &posted); !s.ok())
        return s;
    return AwaitPosted(op, posted);
}

Status Region::Impl::PostPersistOp(const Op &op, uint64_t offset, uint64_t length, Posted *posted) {
    if (Status s = members_.CheckQuorum(op); !s.ok() || length == 0)
        return s;
    uint64_t seq = 0;
    if (Status s = PostPersist(op, offset, length, &seq); !s.ok())
        return s;
    *posted = Posted::ByQuorum(seq, true, members_.Sole() == members_.size());
    return Status();
}

Status Region::Impl::Commit(const Batch::Entry *entries, size_t count) {
    std::vector<Span> ranges;
    for (size_t i = 0; i < count; ++i) {
        if (!InRange(entries[i].offset, entries[i].bytes.size(), size_))
            return Status(
                StatusCode::kInvalidArgument,
                "batch: " + Describe("write", entries[i].offset, entries[i].bytes.size()) +
                    " is beyond the region's " + std::to_string(size_) + " bytes");
        ranges.push_back({entries[i].offset, entries[i].bytes.size()});
    }
    const Span covering = Covering(ranges);
    const Op op{Op::Kind::kBatch, covering.offset, covering.length, count};
    std::lock_guard lock(mu_);
    if (attention_) [[unlikely]] {
        if (Status s = Attend(op, true); !s.ok())
            return s;
        for (size_t i = 0; authority_ && i < count; ++i)
            if (Status s = NoteActivity(op, entries[i].offset, entries[i].bytes.size()); !s.ok())
                return s;
    }
    return Pinned(op, Finish(op, CommitLocked(op, entries, count)));
}

Status Region::Impl::CommitLocked(const Op &op, const Batch::Entry *entries, size_t count) {
    Posted posted;
    if (Status s = PostCommitOp(op, entries, count, &posted); !s.ok())
        return s;
    return AwaitPosted(op, posted);
}

Status Region::Impl::PostCommitOp(const Op &op, const Batch::Entry *entries, size_t count,
                                  Posted *posted) {
    const uint64_t covering_offset = op.offset, covering_length = op.length;
    if (Status s = members_.CheckQuorum(op); !s.ok() || covering_length == 0)
        return s;
    uint64_t seq = 0;
    for (size_t i = 0; i < count; ++i) {
        // The last write, and writes sent from registered buffers (no later
        // extent waits for them), are confirmed by the persist; a registered
        // buffer's bytes that are staged must complete by themselves.
        const bool persist_next = i + 1 == count || SendsFrom(entries[i].bytes) != nullptr;
        if (Status s = PostWrite(op, entries[i].offset, entries[i].bytes, &seq, persist_next);
            !s.ok())
            return s;
    }
    if (Status s = PostPersist(op, covering_offset, covering_length, &seq); !s.ok())
        return s;
    *posted = Posted::ByQuorum(seq, true, true);
    return Status();
}

Status Region::Impl::RegisterBuffer(std::span<std::byte> bytes) {
    if (bytes.empty())
        return Status(StatusCode::kInvalidArgument, "registering an empty buffer");
    std::lock_guard lock(mu_);
    if (registered_.Overlaps(bytes))
        return Status(StatusCode::kAlreadyExists, "the buffer overlaps one registered already");
    const size_t id = registered_.NewId();
    for (size_t i = 0; i < members_.size(); ++i)
        if (!Out(members_[i].state))
            if (Status s = members_[i].replica->Register(id, bytes); !s.ok()) {
                for (Member &m : members_)
                    if (m.replica)
                        m.replica->Unregister(id);
                return s.WithReplica(i, members_[i].address);
            }
    registered_.Add(bytes, id);
    return Status();
}

Status Region::Impl::UnregisterBuffer(std::span<std::byte> bytes) {
    std::lock_guard lock(mu_);
    const Registered *r = registered_.Exact(bytes);
    if (r == nullptr)
        return Status(StatusCode::kNotFound, "the buffer was not registered");
    const uint64_t last = r->last_seq;
    // Laggards may still read it: wait for them (or for their failure), the
    // mutex held throughout.
    (void)fan_out_.Await(Op{Op::Kind::kUnregister}, Need::kAll,
                         [last](Replica &replica) { return replica.Completed(last); });
    for (Member &m : members_)
        if (m.replica)
            m.replica->Unregister(r->id);
    registered_.Remove(r);
    return Status();
}

// --- Region: the public face ------------------------------------------------

Region::Region(std::unique_ptr<Impl> impl, std::string name, uint64_t size)
    : impl_(std::move(impl)), name_(std::move(name)), size_(size) {}

Region::~Region() = default;

std::vector<ReplicaInfo> Region::replicas() const {
    return impl_->Infos();
}

Status Region::Write(uint64_t offset, std::span<const std::byte> bytes) {
    return impl_->Write(offset, bytes, false);
}
Status Region::Persist(uint64_t offset, uint64_t length) {
    return impl_->Persist(offset, length);
}
Status Region::WritePersist(uint64_t offset, std::span<const std::byte> bytes) {
    return impl_->Write(offset, bytes, true);
}
Status Region::Commit(const Batch &batch) {
    return impl_->Commit(batch.writes_.data(), batch.writes_.size());
}
Status Region::Read(uint64_t offset, std::span<std::byte> out, size_t replica) {
    return impl_->Read(offset, out, replica);
}

namespace {

// A future's completion: the callback form under the futures.
std::pair<std::future<Status>, Completion> Promised() {
    auto promise = std::make_shared<std::promise<Status>>();
    std::future<Status> future = promise->get_future();
    return {std::move(future), [promise](Status s) { promise->set_value(std::move(s)); }};
}

}  // namespace

std::future<Status> Region::WriteAsync(uint64_t offset, std::span<const std::byte> bytes) {
    auto [future, done] = Promised();
    impl_->WriteAsync(offset, bytes, false, std::move(done));
    return std::move(future);
}
std::future<Status> Region::PersistAsync(uint64_t offset, uint64_t length) {
    auto [future, done] = Promised();
    impl_->PersistAsync(offset, length, std::move(done));
    return std::move(future);
}
std::future<Status> Region::WritePersistAsync(uint64_t offset, std::span<const std::byte> bytes) {
    auto [future, done] = Promised();
    impl_->WriteAsync(offset, bytes, true, std::move(done));
    return std::move(future);
}
std::future<Status> Region::CommitAsync(const Batch &batch) {
    auto [future, done] = Promised();
    impl_->CommitAsync(batch.writes_, std::move(done));
    return std::move(future);
}
std::future<Status> Region::ReadAsync(uint64_t offset, std::span<std::byte> out, size_t replica) {
    auto [future, done] = Promised();
    impl_->ReadAsync(offset, out, replica, std::move(done));
    return std::move(future);
}
void Region::WriteAsync(uint64_t offset, std::span<const std::byte> bytes, Completion done) {
    impl_->WriteAsync(offset, bytes, false, std::move(done));
}
void Region::PersistAsync(uint64_t offset, uint64_t length, Completion done) {
    impl_->PersistAsync(offset, length, std::move(done));
}
void Region::WritePersistAsync(uint64_t offset, std::span<const std::byte> bytes, Completion done) {
    impl_->WriteAsync(offset, bytes, true, std::move(done));
}
void Region::CommitAsync(const Batch &batch, Completion done) {
    impl_->CommitAsync(batch.writes_, std::move(done));
}
void Region::ReadAsync(uint64_t offset, std::span<std::byte> out, size_t replica, Completion done) {
    impl_->ReadAsync(offset, out, replica, std::move(done));
}

Status Region::RegisterBuffer(std::span<std::byte> bytes) {
    return impl_->RegisterBuffer(bytes);
}
Status Region::UnregisterBuffer(std::span<std::byte> bytes) {
    return impl_->UnregisterBuffer(bytes);
}
uint64_t Region::generation() const {
    return impl_->generation();
}
Status Region::Repair(size_t replica, const RepairOptions &options) {
    return impl_->Repair(replica, options);
}
Status Region::Readd(size_t replica, const ProgressCallback &progress,
                     const std::string &new_address) {
    RepairOptions options;
    if (progress)
        options.progress = [progress](const RepairProgress &p) { progress(p.compared, p.total); };
    options.new_address = new_address;
    return impl_->Repair(replica, options);
}

}  // namespace rpma::client
