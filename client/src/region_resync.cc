// Region::Readd: a failed replica brought back by copying the region from
// a live one before it counts toward the quorum again.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include "region_impl.h"

namespace rpma::client {

namespace {

namespace v1 = ::rpmad::v1;

constexpr uint64_t kExtent = uint64_t{1} << 20;  // ChecksumRegion's extent
// Extents per ChecksumRegion: 64 MiB, so that one call stays well inside the
// control plane's timeout however large the region (a window of the
// daemon's limit, 65536 extents, is 64 GiB: over 10 s to hash below
// 6.5 GB/s) and repair progress moves in small steps.
constexpr uint64_t kWindowExtents = 64;
constexpr size_t kChecksumBytes = 16;  // XXH3-128

int64_t NowSeconds() {
    return std::chrono::duration_cast<std::chrono::seconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

Result<std::string> Checksums(ControlPlane &control, const std::string &region, uint64_t offset,
                              uint64_t length) {
    v1::ChecksumRegionRequest request;
    request.set_region(region);
    request.set_offset(offset);
    request.set_length(length);
    request.set_extent_size(kExtent);
    v1::ChecksumRegionResponse response;
    grpc::Status got;
    // A daemon computes a few checksums at once (RESOURCE_EXHAUSTED past
    // them): another repair's or a verify's end is waited for, boundedly.
    for (int attempt = 0; attempt < 200; ++attempt) {
        response.Clear();
        got = control.regions().ChecksumRegion(control.SessionContext().get(), request, &response);
        if (got.error_code() != grpc::StatusCode::RESOURCE_EXHAUSTED)
            break;
        std::this_thread::sleep_for(std::chrono::milliseconds(25));
    }
    if (!got.ok())
        return FromGrpc(got, control.address());
    const uint64_t extents = (length + kExtent - 1) / kExtent;
    if (response.checksums().size() != extents * kChecksumBytes)
        return Status(StatusCode::kInternal, control.address() + ": ChecksumRegion answered " +
                                                 std::to_string(response.checksums().size()) +
                                                 " bytes for " + std::to_string(extents) +
                                                 " extents");
    return response.checksums();
}

}  // namespace

Status Region::Impl::CatchUp(size_t i, uint64_t from, const v1::ReplicaSetRecord &record) {
    ControlPlane &control = *members_[i].control;
    for (uint64_t g = from + 1; g < record.generation(); ++g) {
        v1::ReplicaSetRecord step = record;
        step.set_generation(g);
        step.set_reason(record.reason() + " (catching up a stale member)");
        v1::SetReplicaSetResponse response;
        const grpc::Status got = control.regions().SetReplicaSet(RecordContext(control).get(),
                                                                 SetRequest(i, step), &response);
        if (!got.ok())
            return FromGrpc(got, control.address()).WithReplica(i, members_[i].address);
        if (!response.applied())
            return Status(StatusCode::kFailedPrecondition,
                          "repair: replica " + std::to_string(i) +
                              "'s record moved on while it was brought up to date (" +
                              DescribeRecord(response.current()) + "): another writer")
                .WithReplica(i, members_[i].address);
    }
    return Status();
}

Status Region::Impl::CopyExtent(size_t index, uint64_t offset, uint64_t length) {
    const Op op{Op::Kind::kCopy, offset, length, 0, index};
    auto fail = [&](Status s) {
        MarkFailed(index, s, op);
        return members_[index].error;
    };
    if (Out(members_[index].state))
        return members_[index].error;
    size_t source = members_.FirstLive();
    if (source == members_.size())
        return fail(members_.QuorumLost(op));
    // Chunk by chunk under the mutex: a write to the extent lands either
    // before its read from the source (and is copied) or after it (and is
    // posted to the target behind the copy).
    for (const Piece &piece : Chunks(offset, length, StagingRing::kMaxExtent)) {
        auto at = AcquireStaging(op, piece.length);
        if (!at.ok())
            return fail(at.status());
        const size_t local = *at;
        // Room on both send queues first: the writes posted at depth may
        // have filled them, and a post past a full queue fails the replica.
        if (Status s = fan_out_.Await(
                op, Need::kOne, [](Replica &r) { return r.HasRoom(false); }, source);
            !s.ok())
            return fail(s);
        if (Status s = fan_out_.Await(
                op, Need::kOne, [](Replica &r) { return r.HasRoom(true, 2); }, index);
            !s.ok())
            return s;
        const uint64_t read_seq = ++seq_;
        if (Replica &r = *members_[source].replica;
            !r.PostRead(piece.offset, kStagingId, local, piece.length, read_seq))
            MarkFailed(source, r.failure(), op);
        Status s = fan_out_.Await(
            op, Need::kOne, [read_seq](Replica &r) { return r.Completed(read_seq); }, source);
        if (!s.ok())
            return fail(s);  // the source failed: repair again from another
        Replica &target = *members_[index].replica;
        const uint64_t write_seq = ++seq_;
        const uint64_t persist_seq = ++seq_;
        ring_.Retag(write_seq);
        if (!target.PostWrite(piece.offset, kStagingId, local, piece.length, write_seq) ||
            !target.PostPersist(piece.offset, piece.length, persist_seq))
            return fail(target.failure());
        s = fan_out_.Await(
            op, Need::kOne, [persist_seq](Replica &r) { return r.persisted() >= persist_seq; },
            index);
        if (!s.ok())
            return s;
    }
    return Status();
}

Status Region::Impl::Repair(size_t index, const RepairOptions &options) {
    const Op op{Op::Kind::kRepair, 0, 0, 0, index};
    std::unique_lock lock(mu_);
    if (index >= members_.size())
        return Status(StatusCode::kInvalidArgument,
                      "repair: the set has " + std::to_string(members_.size()) + " replicas");
    if (fenced_)
        return fenced_status_;
    if (read_only_)
        return Attend(op, true);
    // Failures not recorded yet are recorded first; when too few accept
    // them alone (a set left without a majority of live members), they go
    // into the repair's first record, which the repaired member helps
    // carry (below).
    if (record_pending_)
        if (Status s = Settle(op); !s.ok() && fenced_)
            return s;
    Member &m = members_[index];
    if (!Out(m.state))
        return Status(StatusCode::kInvalidArgument,
                      "repair: replica " + std::to_string(index) + " (" + m.address + ") is " +
                          (m.state == ReplicaState::kLive ? "in sync" : "being repaired") +
                          ", not failed or stale");
    if (m.replica) {
        // Its connection was closed when it was marked failed; the daemon
        // may not have seen that yet.
        m.draining_session = m.replica->session_id();
        m.replica.reset();
    }
    // A new channel also to the old address: the old one's connection may be
    // waiting out a reconnect backoff that began when the daemon died.
    const std::string address = options.new_address.empty() ? m.address : options.new_address;
    auto control = ControlPlane::Connect(address, m.control->options());
    if (!control.ok())
        return control.status().WithReplica(index, address);
    m.control = std::move(*control);
    m.address = address;
    if (!options.new_address.empty() || !options.new_data_address.empty())
        m.data_address = options.new_data_address;
    if (!m.draining_session.empty()) {
        if (Status s = AwaitSessionEnd(*m.control, m.draining_session); !s.ok())
            return s.WithReplica(index, m.address);
        m.draining_session.clear();
    }
    auto info = Replica::EnsureRegion(*m.control, name_, size_);
    if (!info.ok())
        return info.status().WithReplica(index, m.address);
    if (info->size() != size_)
        return Status(StatusCode::kFailedPrecondition,
                      "repair: its region has " + std::to_string(info->size()) +
                          " bytes where the others have " + std::to_string(size_))
            .WithReplica(index, m.address);

    // Recorded REPAIRING (generation + 1): every other writer is fenced.
    uint64_t session_generation = 0;
    if (!members_.legacy()) {
        v1::GetReplicaSetRequest get;
        get.set_region(name_);
        v1::ReplicaSetView view;
        const grpc::Status got =
            m.control->regions().GetReplicaSet(RecordContext(*m.control).get(), get, &view);
        if (!got.ok())
            return FromGrpc(got, m.address).WithReplica(index, m.address);
        // On the change some members accepted already, if any.
        const bool on_pending =
            pending_ && std::find(pending_accepted_.begin(), pending_accepted_.end(), true) !=
                            pending_accepted_.end();
        auto next =
            Successor(on_pending ? *pending_ : record_, writer_id_, NowSeconds(), "repair started");
        for (size_t i = 0; i < members_.size(); ++i)
            if (i != index && members_[i].state == ReplicaState::kFailed &&
                next.members(static_cast<int>(i)).state() == v1::ReplicaSetMember::STATE_IN_SYNC)
                SetMemberState(&next, i, v1::ReplicaSetMember::STATE_STALE);
        v1::ReplicaSetMember &member = *next.mutable_members(static_cast<int>(index));
        member.set_daemon_id(view.daemon_id());
        member.set_address(m.address);
        SetMemberState(&next, index, v1::ReplicaSetMember::STATE_REPAIRING);
        if (view.record().generation() + 1 < next.generation())
            if (Status s = CatchUp(index, view.record().generation(), next); !s.ok())
                return s;
        std::vector<bool> send(members_.size()), accepted;
        for (size_t i = 0; i < members_.size(); ++i)
            send[i] = i == index || !Out(members_[i].state);
        if (Status s =
                Propose(next, send, &accepted,
                        "repair of replica " + std::to_string(index) + ": recording it REPAIRING");
            !s.ok())
            return s;
        Adopt(next);
        pending_.reset();
        record_pending_ = false;
        attention_ = fenced_ || read_only_;
        m.daemon_id = view.daemon_id();
        session_generation = generation_;
    }
    auto replica = Replica::Connect(*m.control, name_, session_generation,
                                    options_.operation_timeout, m.data_address);
    if (!replica.ok())
        return replica.status().WithReplica(index, m.address);
    if (Status s = (*replica)->Register(kStagingId, ring_.memory()); !s.ok())
        return s.WithReplica(index, m.address);
    for (const Registered &r : registered_)
        if (Status s = (*replica)->Register(r.id, r.bytes); !s.ok())
            return s.WithReplica(index, m.address);
    m.replica = std::move(*replica);
    m.state = ReplicaState::kResyncing;
    m.error = Status();
    m.joined_after = seq_;
    const uint64_t joined_after = seq_;
    lock.unlock();

    // Window by window: checksums of both sides (without the mutex), then
    // the extents that differ copied (each under the mutex).
    RepairProgress progress{0, 0, size_};
    auto last_report = std::chrono::steady_clock::now();
    auto report = [&](bool force) {
        if (options.progress)
            options.progress(progress);
        const auto now = std::chrono::steady_clock::now();
        if (members_.legacy() || (!force && now - last_report < std::chrono::seconds(1)))
            return;
        last_report = now;
        std::unique_lock held(mu_);
        v1::RepairProgress told;
        told.set_region(name_);
        told.set_generation(generation_);
        told.set_bytes_compared(progress.compared);
        told.set_bytes_copied(progress.copied);
        told.set_total_bytes(progress.total);
        told.set_reported_unix_seconds(NowSeconds());
        ControlPlane &target = *members_[index].control;
        held.unlock();
        v1::RepairProgress answer;
        // Informative: a report that does not arrive changes nothing.
        (void)target.regions().ReportRepairProgress(RecordContext(target).get(), told, &answer);
    };
    const uint64_t window = kWindowExtents * kExtent;
    for (uint64_t at = 0; at < size_;) {
        const uint64_t length = std::min(window, size_ - at);
        const uint64_t extents = (length + kExtent - 1) / kExtent;
        std::vector<bool> differs(extents, true);
        if (!members_.legacy()) {
            lock.lock();
            if (fenced_)
                return fenced_status_;
            if (Out(members_[index].state))
                return members_[index].error;
            size_t source = members_.FirstLive();
            if (source == members_.size()) {
                const Status lost = members_.QuorumLost(op);
                MarkFailed(index, lost, op);
                return lost;
            }
            // The source has applied every write posted before the target
            // joined (those the target does not get): its checksums
            // include them.
            if (Status s = fan_out_.Await(
                    op, Need::kOne,
                    [joined_after](Replica &r) { return r.Completed(joined_after); }, source);
                !s.ok()) {
                lock.unlock();
                continue;  // that source failed: this window again, from another
            }
            ControlPlane &from = *members_[source].control;
            ControlPlane &to = *members_[index].control;
            lock.unlock();
            auto theirs = Checksums(from, name_, at, length);
            auto ours = theirs.ok() ? Checksums(to, name_, at, length) : theirs;
            if (!ours.ok()) {
                lock.lock();
                MarkFailed(index, ours.status(), op);
                return members_[index].error;
            }
            for (uint64_t e = 0; e < extents; ++e)
                differs[e] = theirs->compare(e * kChecksumBytes, kChecksumBytes, *ours,
                                             e * kChecksumBytes, kChecksumBytes) != 0;
        }
        for (uint64_t e = 0; e < extents; ++e) {
            const uint64_t offset = at + e * kExtent;
            const uint64_t bytes = std::min(kExtent, size_ - offset);
            if (differs[e]) {
                lock.lock();
                Status s = CopyExtent(index, offset, bytes);
                lock.unlock();
                if (!s.ok())
                    return s;
                progress.copied += bytes;
            }
            progress.compared += bytes;
            if (differs[e] || e + 1 == extents)
                report(false);
        }
        at += length;
    }
    report(true);

    // Recorded IN_SYNC (generation + 1), and only then counted.
    lock.lock();
    if (Out(members_[index].state))
        return members_[index].error;
    if (!members_.legacy()) {
        if (fenced_)
            return fenced_status_;
        auto next = Successor(record_, writer_id_, NowSeconds(), "repair finished");
        SetMemberState(&next, index, v1::ReplicaSetMember::STATE_IN_SYNC);
        std::vector<bool> send(members_.size()), accepted;
        for (size_t i = 0; i < members_.size(); ++i)
            send[i] = !Out(members_[i].state);
        if (Status s =
                Propose(next, send, &accepted,
                        "repair of replica " + std::to_string(index) + ": recording it IN_SYNC");
            !s.ok()) {
            MarkFailed(index, s, op);
            return s;
        }
        Adopt(next);
    }
    members_[index].state = ReplicaState::kLive;
    members_[index].stale_since = 0;
    return Status();
}

Status Region::Impl::AwaitSessionEnd(ControlPlane &control, const std::string &session_id) const {
    // rpmad ends a session only on its connection's CLOSED or LOST event,
    // which the tcp provider delivers after applying every byte the
    // connection carried before it (on verbs the QP's end is the same
    // barrier): once the session is gone, no write of the old connection
    // lands any more, and the copy cannot be overwritten by one. A daemon
    // that restarted has no such session (session ids are random), nor a
    // daemon at another address. No notification exists for this, so the
    // list is asked again after a pause that grows from 1 ms to 50 ms.
    const auto deadline = std::chrono::steady_clock::now() + options_.operation_timeout;
    std::chrono::milliseconds pause{1};
    for (;;) {
        ::rpmad::v1::ListSessionsRequest request;
        request.set_region(name_);
        ::rpmad::v1::ListSessionsResponse sessions;
        const grpc::Status listed =
            control.sessions().ListSessions(control.Context().get(), request, &sessions);
        if (!listed.ok())
            return FromGrpc(listed, control.address());
        const bool open = std::any_of(
            sessions.sessions().begin(), sessions.sessions().end(),
            [&](const ::rpmad::v1::Session &s) { return s.session_id() == session_id; });
        if (!open)
            return Status();
        if (std::chrono::steady_clock::now() >= deadline)
            return Status(StatusCode::kDeadlineExceeded,
                          "readd: the daemon still has the replica's previous session " +
                              session_id + " open " +
                              std::to_string(options_.operation_timeout.count()) +
                              " ms after its connection was closed, and may still apply writes "
                              "that connection queued, over the copy: Readd again once the "
                              "daemon runs (not stopped) and has closed it (rpmactl session list)");
        std::this_thread::sleep_for(pause);
        pause = std::min(pause * 2, std::chrono::milliseconds(50));
    }
}

}  // namespace rpma::client

namespace rpma::client {

Status Region::Impl::Reconcile() {
    if (!authority_ || authority_->inherited_activity().empty())
        return Status();
    const Op op{Op::Kind::kOpen};
    const uint64_t extent_bytes = authority_->inherited_extent_bytes();
    if (extent_bytes == 0 || extent_bytes % kExtent != 0)
        return Status(StatusCode::kInternal,
                      "region " + name_ + "'s activity log in etcd has extents of " +
                          std::to_string(extent_bytes) + " bytes, not a multiple of " +
                          std::to_string(kExtent) + ": it was not written by rpma");
    std::unique_lock lock(mu_);
    for (const uint64_t extent : authority_->inherited_activity()) {
        if (extent >= (size_ + extent_bytes - 1) / extent_bytes)
            continue;  // beyond the region (a log of a larger one?)
        const uint64_t offset = extent * extent_bytes;
        const uint64_t length = std::min(extent_bytes, size_ - offset);
        const size_t source = members_.FirstLive();
        if (source == members_.size())
            return members_.QuorumLost(op);
        auto theirs = Checksums(*members_[source].control, name_, offset, length);
        if (!theirs.ok())
            return theirs.status().WithReplica(source, members_[source].address);
        for (size_t i = 0; i < members_.size(); ++i) {
            if (i == source || members_[i].state != ReplicaState::kLive)
                continue;
            auto ours = Checksums(*members_[i].control, name_, offset, length);
            if (!ours.ok()) {
                MarkFailed(i, ours.status(), op);
                continue;
            }
            for (uint64_t at = 0; at < length; at += kExtent) {
                const uint64_t e = at / kExtent;
                if (theirs->compare(e * kChecksumBytes, kChecksumBytes, *ours, e * kChecksumBytes,
                                    kChecksumBytes) == 0)
                    continue;
                // Failure marks it failed (recorded stale below).
                (void)CopyExtent(i, offset + at, std::min(kExtent, length - at));
            }
        }
    }
    if (record_pending_)
        if (Status s = Settle(op); !s.ok())
            return s;
    if (members_.Live() < members_.quorum())
        return members_.QuorumLost(op);
    lock.unlock();
    return authority_->ClearInherited();
}

}  // namespace rpma::client
