// Region's asynchronous operations: posted on the submitting thread as the
// synchronous ones are (the same posts, under the mutex), then completed by
// one progress thread per Region, oldest first, which polls the replicas as
// the synchronous waits do (AwaitReleasing: one poller at a time collects
// everyone's completions). No thread runs an operation for the submitter.
#include <algorithm>
#include <chrono>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "region_impl.h"

namespace rpma::client {

Region::Impl::HeldPosts::HeldPosts(Impl &impl)
    : impl_(impl), hold_(impl.in_flight_.OnProgressThread() || !impl.in_flight_.empty()) {
    if (hold_)
        impl_.members_.HoldPosts(true);
}

Region::Impl::HeldPosts::~HeldPosts() {
    if (hold_)
        impl_.members_.HoldPosts(false);  // the members now, should they have changed
}

bool Region::Impl::Room(std::unique_lock<std::mutex> &lock, Completion &done) {
    if (in_flight_.AwaitRoom(lock, options_.wait_for_room))
        return true;
    const size_t most = in_flight_.max_in_flight();
    lock.unlock();
    done(Status(StatusCode::kResourceExhausted,
                std::to_string(most) +
                    " asynchronous operations are outstanding on the region (max_in_flight): "
                    "nothing submitted; submit again once one completes"));
    return false;
}

void Region::Impl::WriteAsync(uint64_t offset, std::span<const std::byte> bytes, bool persist,
                              Completion done) {
    Pending p;
    p.op = {persist ? Op::Kind::kWritePersist : Op::Kind::kWrite, offset, bytes.size()};
    p.done = std::move(done);
    std::unique_lock lock(mu_);
    if (!Room(lock, p.done))
        return;
    const HeldPosts held(*this);
    // A refusal before anything was posted goes through neither Finish
    // nor Pinned, as a synchronous call's.
    if ((p.status = Admit(p.op, true, false)).ok()) {
        p.finish = p.pin = true;
        // Deferred: the write alone, signaled (its staging extent and send
        // queue entries must not wait for the group's persist), and only
        // then the group joined. Posting the write may wait for room, mu_
        // released, while the progress thread posts the forming group: a
        // group joined before would be persisted ahead of the write.
        const bool deferred = persist && Defers(offset, bytes.size());
        p.status = PostWriteOp(p.op, offset, bytes, persist && !deferred, &p.posted);
        if (deferred && p.status.ok())
            p.status = PersistOrJoin(p.op, offset, bytes.size(), &p.posted);
    }
    in_flight_.Push(std::move(p));
}

void Region::Impl::PersistAsync(uint64_t offset, uint64_t length, Completion done) {
    Pending p;
    p.op = {Op::Kind::kPersist, offset, length};
    p.done = std::move(done);
    std::unique_lock lock(mu_);
    if (!Room(lock, p.done))
        return;
    const HeldPosts held(*this);
    if ((p.status = Admit(p.op, true, false)).ok()) {
        p.finish = true;
        p.status = PersistOrJoin(p.op, offset, length, &p.posted);
    }
    in_flight_.Push(std::move(p));
}

void Region::Impl::CommitAsync(std::vector<Batch::Entry> entries, Completion done) {
    Pending p;
    p.op = {Op::Kind::kBatch};
    p.done = std::move(done);
    std::vector<Span> ranges;
    for (const Batch::Entry &e : entries) {
        if (!InRange(e.offset, e.bytes.size(), size_) && p.status.ok())
            p.status = Status(StatusCode::kInvalidArgument,
                              "batch: " + Describe("write", e.offset, e.bytes.size()) +
                                  " is beyond the region's " + std::to_string(size_) + " bytes");
        ranges.push_back({e.offset, e.bytes.size()});
    }
    const Span covering = Covering(ranges);
    p.op = {Op::Kind::kBatch, covering.offset, covering.length, entries.size()};
    std::unique_lock lock(mu_);
    if (!Room(lock, p.done))
        return;
    const HeldPosts held(*this);
    if (!p.status.ok())
        ;
    else if (attention_ && !(p.status = Attend(p.op, true, false)).ok())
        ;
    else {
        for (size_t i = 0; authority_ && i < entries.size() && p.status.ok(); ++i)
            p.status = NoteActivity(p.op, entries[i].offset, entries[i].bytes.size());
        if (p.status.ok()) {
            p.finish = p.pin = true;
            p.status = PostCommitOp(p.op, entries.data(), entries.size(), &p.posted);
        }
    }
    in_flight_.Push(std::move(p));
}

void Region::Impl::ReadAsync(uint64_t offset, std::span<std::byte> out, size_t index,
                             Completion done) {
    Pending p;
    p.op = {Op::Kind::kRead, offset, out.size(), 0, index};
    p.done = std::move(done);
    std::unique_lock lock(mu_);
    if (!Room(lock, p.done))
        return;
    if (!(p.status = Admit(p.op, false, true)).ok())
        ;
    else if (attention_ && read_only_ && !members_.legacy())
        // A reader's read is confirmed against the record afterwards: done
        // here, completed in order.
        p.status = ReadConfirmed(p.op, offset, out, index);
    else if (size_t taken = 0;
             (p.status = PostReadPiece(p.op, offset, out, index, &p.posted, &taken)).ok() &&
             taken < out.size()) {
        // Larger than one piece: the first posted, the rest read here (a
        // read of more than 1 MiB into an unregistered buffer is done in
        // the call), completed in order.
        Posted first = p.posted;
        p.posted = {};
        p.status = AwaitPosted(p.op, first);
        if (p.status.ok())
            p.status = ReadLocked(p.op, offset + taken, out.subspan(taken), index);
    }
    in_flight_.Push(std::move(p));
}

bool Region::Impl::Defers(uint64_t offset, uint64_t length) {
    if (!options_.group_commit || length == 0)
        return false;
    if (forming_ != nullptr)
        // Too far from the others: posted now, on its own (the group stays
        // for the progress thread, which alone posts groups).
        return JoinsGroup(forming_->covering, forming_->bytes, {offset, length}, kGroupSlack);
    // Whether the pipeline is full: with room, no wait for a group.
    return PersistsInFlight() >= kGroupPersistsInFlight;
}

Status Region::Impl::PersistOrJoin(const Op &op, uint64_t offset, uint64_t length, Posted *posted) {
    if (Defers(offset, length)) {
        if (forming_ == nullptr) {
            forming_ = std::make_shared<Group>();
            forming_->covering = {offset, length};
        } else {
            forming_->covering = Covering({forming_->covering, {offset, length}});
        }
        forming_->bytes += length;
        posted->Join(forming_);
        posted->acknowledge |= members_.Sole() == members_.size();
        return Status();
    }
    Posted persist;
    if (Status s = PostPersistOp(op, offset, length, &persist); !s.ok())
        return s;
    posted->seq = persist.seq;
    posted->persisted = true;
    posted->acknowledge |= persist.acknowledge;
    return Status();
}

void Region::Impl::PostGroup() {
    std::shared_ptr<Group> group = std::move(forming_);
    // What a failure names: the covering persist.
    const Op op{Op::Kind::kPersist, group->covering.offset, group->covering.length};
    Posted posted;
    group->status = PostPersistOp(op, op.offset, op.length, &posted);
    group->seq = posted.seq;
}

size_t Region::Impl::PersistsInFlight() {
    while (!persists_posted_.empty()) {
        const uint64_t seq = persists_posted_.front();
        if (!members_.AllHold([seq](Replica &r) { return r.persisted() >= seq; }))
            break;
        persists_posted_.pop_front();
    }
    return persists_posted_.size();
}

Status Region::Impl::Complete(Pending &p) {
    // operation_timeout counts from when the operation is the oldest one
    // outstanding, as a synchronous call's from when it starts to wait: a
    // replica is marked failed for its silence, not for the depth of the
    // queue ahead of the operation (a hung replica holds up the oldest
    // operation, which marks it failed within operation_timeout, and then
    // no later one waits for it).
    Status s = p.status;
    if (s.ok())
        s = AwaitPosted(p.op, p.posted);
    if (p.finish)
        s = Finish(p.op, std::move(s));
    if (p.pin)
        s = Pinned(p.op, std::move(s));
    return s;
}

void Region::Impl::AfterCompletions() {
    // A persist in flight completed: the group formed meanwhile goes.
    if (forming_ != nullptr && PersistsInFlight() < kGroupPersistsInFlight)
        PostGroup();
}

}  // namespace rpma::client
