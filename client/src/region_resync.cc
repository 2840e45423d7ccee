// Region::Readd: a failed replica brought back by copying the region from
// a live one before it counts toward the quorum again.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include "region_impl.h"

namespace rpma::client {

Status Region::Impl::Readd(size_t index, const ProgressCallback &progress,
                           const std::string &new_address) {
    std::unique_lock lock(mu_);
    if (index >= members_.size())
        return Status(StatusCode::kInvalidArgument,
                      "readd: the set has " + std::to_string(members_.size()) + " replicas");
    Member &m = members_[index];
    if (m.state != ReplicaState::kFailed)
        return Status(StatusCode::kInvalidArgument, "readd: replica " + std::to_string(index) +
                                                        " (" + m.address + ") is not failed");
    if (m.replica) {
        // Its connection was closed when it was marked failed; the daemon
        // may not have seen that yet.
        m.draining_session = m.replica->session_id();
        m.replica.reset();
    }
    // A new channel also to the old address: the old one's connection may be
    // waiting out a reconnect backoff that began when the daemon died.
    const std::string address = new_address.empty() ? m.address : new_address;
    auto control = ControlPlane::Connect(address, m.control->options());
    if (!control.ok())
        return control.status().WithReplica(index, address);
    m.control = std::move(*control);
    m.address = address;
    if (!m.draining_session.empty()) {
        if (Status s = AwaitSessionEnd(*m.control, m.draining_session); !s.ok())
            return s.WithReplica(index, m.address);
        m.draining_session.clear();
    }
    auto replica =
        Replica::Connect(*m.control, name_, size_, options_.operation_timeout, m.data_address);
    if (!replica.ok())
        return replica.status().WithReplica(index, m.address);
    if ((*replica)->size() != size_)
        return Status(StatusCode::kFailedPrecondition,
                      "readd: its region has " + std::to_string((*replica)->size()) +
                          " bytes where the others have " + std::to_string(size_))
            .WithReplica(index, m.address);
    if (Status s = (*replica)->Register(kStagingId, staging_); !s.ok())
        return s.WithReplica(index, m.address);
    for (const Registered &r : registered_)
        if (Status s = (*replica)->Register(r.id, r.bytes); !s.ok())
            return s.WithReplica(index, m.address);
    m.replica = std::move(*replica);
    m.state = ReplicaState::kResyncing;
    m.error = Status();
    m.joined_after = seq_;
    lock.unlock();

    // Chunk by chunk under the mutex: a write to a chunk lands either before
    // its copy (and is copied) or after it (and is posted to this replica
    // behind the copy).
    for (const Piece &piece : Chunks(0, size_, kSlotSize)) {
        lock.lock();
        const Op op{Op::Kind::kCopy, piece.offset, piece.length, 0, index};
        auto fail = [&](Status s) {
            MarkFailed(index, s, op);
            return members_[index].error;
        };
        if (members_[index].state == ReplicaState::kFailed)
            return members_[index].error;
        size_t source = members_.size();
        for (size_t i = 0; i < members_.size() && source == members_.size(); ++i)
            if (members_[i].state == ReplicaState::kLive)
                source = i;
        if (source == members_.size())
            return fail(QuorumLost(op));
        const uint64_t before = seq_;
        Status s = Await(
            op, Need::kOne, [before](Replica &r) { return r.Completed(before); }, source);
        auto slot = s.ok() ? AcquireSlot(op) : Result<size_t>(s);
        if (!slot.ok())
            return fail(slot.status());
        const size_t local = *slot * kSlotSize;
        const uint64_t read_seq = ++seq_;
        slot_seq_[*slot] = read_seq;
        if (Replica &r = *members_[source].replica;
            !r.PostRead(piece.offset, kStagingId, local, piece.length, read_seq))
            MarkFailed(source, r.failure(), op);
        s = Await(
            op, Need::kOne, [read_seq](Replica &r) { return r.Completed(read_seq); }, source);
        if (!s.ok())
            return fail(s);  // the source failed: try Readd again with another
        Replica &target = *members_[index].replica;
        const uint64_t write_seq = ++seq_;
        const uint64_t persist_seq = ++seq_;
        slot_seq_[*slot] = write_seq;
        if (!target.PostWrite(piece.offset, kStagingId, local, piece.length, write_seq) ||
            !target.PostPersist(piece.offset, piece.length, persist_seq))
            return fail(target.failure());
        s = Await(
            op, Need::kOne, [persist_seq](Replica &r) { return r.persisted() >= persist_seq; },
            index);
        if (!s.ok())
            return s;
        lock.unlock();
        if (progress)
            progress(piece.offset + piece.length, size_);
    }
    lock.lock();
    if (members_[index].state == ReplicaState::kFailed)
        return members_[index].error;
    members_[index].state = ReplicaState::kLive;
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
