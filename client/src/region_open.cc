// Region's opening and its replica-set record: the replicas' (or, in a
// cluster, etcd's) records turned into a view (replica_set_state.h),
// changes proposed, recorded and settled before an operation that depends
// on them is acknowledged (client/REPLICA_SETS.md).
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <future>

#include "region_impl.h"
#include "util/host_port.h"

namespace rpma::client {
namespace {

int64_t NowUnix() {
    return std::chrono::duration_cast<std::chrono::seconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

// Who records a change, for operators: "host pid N".
std::string WriterId() {
    char host[256] = {};
    if (gethostname(host, sizeof(host) - 1) != 0)
        std::strcpy(host, "unknown-host");
    return std::string(host) + " pid " + std::to_string(getpid());
}

// A new set's id: 32 hex digits of the region's name and the replica list
// (FNV-1a, twice), so that writers opening a region never recorded at the
// same time with the same list propose the same set (one of their first
// records wins on each member, and they are the same change), while two
// lists make two sets, which rule 3 keeps apart.
std::string NewSetId(const std::string &region, const std::vector<std::string> &addresses) {
    std::string text = region;
    for (const std::string &a : addresses)
        text += '\n' + a;
    uint64_t h1 = 14695981039346656037ull, h2 = 1099511628211ull * 31;
    for (const char c : text) {
        h1 = (h1 ^ static_cast<unsigned char>(c)) * 1099511628211ull;
        h2 = (h2 ^ static_cast<unsigned char>(c)) * 1099511628211ull + 0x9e3779b97f4a7c15ull;
    }
    char id[33];
    std::snprintf(id, sizeof(id), "%016llx%016llx", static_cast<unsigned long long>(h1),
                  static_cast<unsigned long long>(h2));
    return id;
}

// Runs call(i) for each i < n that selected(i) says, each on a thread of
// its own, and returns once every one has: a fan-out of control-plane
// calls, one per replica, at once.
template <typename Selected, typename Call>
void AtOnce(size_t n, const Selected &selected, const Call &call) {
    std::vector<std::future<void>> calls;
    for (size_t i = 0; i < n; ++i)
        if (selected(i))
            calls.push_back(std::async(std::launch::async, [&call, i] { call(i); }));
    for (auto &c : calls)
        c.get();
}

}  // namespace

Status Region::Impl::OpenAll(const ReplicaSet &set) {
    if (set.addresses.empty())
        return Status(StatusCode::kInvalidArgument, "the replica set has no addresses");
    if (options_.quorum > set.addresses.size())
        return Status(StatusCode::kInvalidArgument,
                      "quorum " + std::to_string(options_.quorum) + " is larger than the " +
                          std::to_string(set.addresses.size()) + " replicas of the set");
    if (!set.data_addresses.empty() && set.data_addresses.size() != set.addresses.size())
        return Status(StatusCode::kInvalidArgument,
                      "the replica set has " + std::to_string(set.addresses.size()) +
                          " addresses but " + std::to_string(set.data_addresses.size()) +
                          " data-plane addresses: give one per replica (\"\" for the daemon's "
                          "own) or none");
    for (const std::string &data : set.data_addresses) {
        std::string error;
        if (!data.empty() && !util::SplitHostPort(data, &error))
            return Status(StatusCode::kInvalidArgument, "data-plane address " + error);
    }
    members_.set_quorum(options_.quorum == 0 ? set.addresses.size() : options_.quorum);
    read_only_ = options_.read_only;
    // A read-only Region's writes are refused; a cluster writer checks its
    // lease before each operation.
    attention_ = read_only_ || authority_ != nullptr;
    writer_id_ = WriterId();
    for (size_t i = 0; i < set.addresses.size(); ++i) {
        const std::string &address = set.addresses[i];
        auto control = ControlPlane::Connect(address, set.options);
        if (!control.ok())
            return control.status();
        Member member;
        member.address = address;
        if (!set.data_addresses.empty())
            member.data_address = set.data_addresses[i];
        member.control = std::move(*control);
        members_.push_back(std::move(member));
    }
    const size_t n = members_.size();

    // 1. Every replica at once: its region (created where missing, when
    // asked) and its replica-set record.
    std::vector<ReplicaSetAnswer> answers(n);
    std::vector<uint64_t> sizes(n, 0);
    AtOnce(
        n, [](size_t) { return true; },
        [&](size_t i) {
            ControlPlane &control = *members_[i].control;
            ReplicaSetAnswer &a = answers[i];
            auto info = Replica::EnsureRegion(control, name_, options_.create_size,
                                              options_.operation_timeout);
            if (!info.ok()) {
                a.error = info.status();
                return;
            }
            sizes[i] = info->size();
            ::rpmad::v1::GetReplicaSetRequest request;
            request.set_region(name_);
            ::rpmad::v1::ReplicaSetView view;
            const grpc::Status got =
                control.regions().GetReplicaSet(RecordContext(control).get(), request, &view);
            if (got.error_code() == grpc::StatusCode::UNIMPLEMENTED) {
                a.kind = ReplicaSetAnswer::Kind::kUnimplemented;
            } else if (!got.ok()) {
                a.error = FromGrpc(got, control.address());
            } else {
                a.kind = ReplicaSetAnswer::Kind::kRecord;
                a.record = view.record();
                a.daemon_id = view.daemon_id();
            }
        });
    // Sizes: the first replica reached decides.
    for (size_t i = 0; i < n; ++i) {
        if (sizes[i] == 0)
            continue;
        if (size_ == 0)
            size_ = sizes[i];
        if (sizes[i] != size_) {
            answers[i] = ReplicaSetAnswer();
            answers[i].error = Status(StatusCode::kFailedPrecondition,
                                      "its region has " + std::to_string(sizes[i]) +
                                          " bytes where the others have " + std::to_string(size_));
        }
    }
    for (size_t i = 0; i < n; ++i)
        if (!answers[i].error.ok())
            members_[i].error = Status(answers[i].error).WithReplica(i, members_[i].address);
    auto too_few = [&](size_t opened) {
        // The first replica's error says it best (e.g. kNotFound); the
        // message names every one.
        Status first;
        std::string all;
        for (const Member &m : members_)
            if (!m.error.ok()) {
                if (first.ok())
                    first = m.error;
                all += (all.empty() ? "" : "; ") + m.error.ToString();
            }
        return Status(first.code(), "opening region " + name_ + ": " + std::to_string(opened) +
                                        " of " + std::to_string(n) + " replicas opened, " +
                                        std::to_string(members_.quorum()) + " needed: " + all)
            .WithReplica(*first.replica(), first.replica_address());
    };
    size_t reached = 0;
    for (const ReplicaSetAnswer &a : answers)
        reached += a.kind != ReplicaSetAnswer::Kind::kUnreached;
    if (reached < members_.quorum())
        return too_few(reached);

    // 2. The rules (replica_set_state.h), and the writer's view recorded.
    ReplicaSetInput input;
    input.region = name_;
    input.addresses = set.addresses;
    input.answers = answers;
    input.quorum = members_.quorum();
    input.writer = !read_only_;
    input.force = options_.force;
    input.repair_takeover = options_.repair_takeover;
    input.writer_id = writer_id_;
    input.now_unix = NowUnix();
    input.new_set_id = NewSetId(name_, set.addresses);
    if (authority_)
        input.authority = &authority_->record();
    const ReplicaSetDecision decision = DecideReplicaSet(input);
    if (!decision.status.ok())
        return decision.status;
    members_.set_legacy(decision.legacy);
    record_ = decision.newest;
    generation_ = record_.generation();
    if (decision.change) {
        std::vector<bool> send(n), accepted(n, false);
        for (size_t i = 0; i < n; ++i)
            send[i] = answers[i].kind == ReplicaSetAnswer::Kind::kRecord;
        if (Status s = Propose(*decision.change, send, &accepted,
                               "opening region " + name_ + ": recording the writer's view");
            !s.ok())
            return s;
        record_ = *decision.change;
        generation_ = record_.generation();
    }
    for (size_t i = 0; i < n; ++i) {
        Member &m = members_[i];
        m.daemon_id = answers[i].daemon_id;
        m.stale_since = decision.stale_since[i];
        if (decision.in_sync[i])
            continue;
        m.state = ReplicaState::kStale;
        if (answers[i].kind != ReplicaSetAnswer::Kind::kUnreached)
            m.error =
                Status(StatusCode::kFailedPrecondition, "stale: " + decision.why[i] +
                                                            ": repair it (Readd, `rpmactl region "
                                                            "repair " +
                                                            name_ + "`)")
                    .WithReplica(i, m.address);
    }

    // 3. Sessions on the replicas in sync, under the generation held.
    const uint64_t session_generation = read_only_ || members_.legacy() ? 0 : generation_;
    for (size_t i = 0; i < n; ++i) {
        Member &m = members_[i];
        if (!decision.in_sync[i])
            continue;
        auto replica = Replica::Connect(*m.control, name_, session_generation,
                                        options_.operation_timeout, m.data_address);
        Status got = replica.ok() ? Status() : replica.status();
        if (got.ok())
            got = (*replica)->Register(kStagingId, ring_.memory());
        if (!got.ok()) {
            // Refused, or its session fenced before it connected, because
            // another writer's record came after this open read them?
            if (session_generation > 0) {
                ::rpmad::v1::GetReplicaSetRequest request;
                request.set_region(name_);
                ::rpmad::v1::ReplicaSetView view;
                if (m.control->regions()
                        .GetReplicaSet(RecordContext(*m.control).get(), request, &view)
                        .ok() &&
                    view.record().generation() > generation_)
                    open_raced_ = true;
            }
            m.state = ReplicaState::kLive;  // as it is in the record: MarkFailed records it
            MarkFailed(i, got, Op{Op::Kind::kOpen});
            continue;
        }
        m.replica = std::move(*replica);
        m.state = ReplicaState::kLive;
        if (m.daemon_id.empty())
            m.daemon_id = m.replica->daemon_id();
    }
    if (members_.Live() < members_.quorum())
        return too_few(members_.Live());
    if (record_pending_)
        if (Status s = Settle(Op{Op::Kind::kOpen}); !s.ok())
            return s;
    return Status();
}

std::unique_ptr<grpc::ClientContext> Region::Impl::RecordContext(ControlPlane &control) const {
    // The record's calls are a session opener's (the client token where the
    // daemon requires one), as OpenSession.
    auto context = control.SessionContext();
    const auto bound =
        std::chrono::system_clock::now() +
        std::min<std::chrono::milliseconds>(options_.operation_timeout, control.options().timeout);
    context->set_deadline(bound);
    return context;
}

::rpmad::v1::SetReplicaSetRequest Region::Impl::SetRequest(
    size_t i, const ::rpmad::v1::ReplicaSetRecord &record) const {
    ::rpmad::v1::SetReplicaSetRequest request;
    request.set_region(name_);
    request.set_expected_generation(record.generation() - 1);
    *request.mutable_record() = record;
    // This Region's own session on it survives the change.
    if (members_[i].replica)
        request.add_keep_session_ids(members_[i].replica->session_id());
    return request;
}

Status Region::Impl::Propose(const ::rpmad::v1::ReplicaSetRecord &record,
                             const std::vector<bool> &send, std::vector<bool> *accepted,
                             const std::string &what) {
    const size_t n = members_.size();
    // Cluster mode: etcd first, the authority; then the daemons, which
    // fence older writers by it. A change another writer or the controller
    // overtook fences this Region.
    if (authority_)
        if (Status s = authority_->Commit(record); !s.ok()) {
            if (s.code() == StatusCode::kFailedPrecondition) {
                fenced_ = attention_ = true;
                fenced_status_ = Status(s.code(), what + ": " + s.message());
                return fenced_status_;
            }
            return Status(s.code(), what + ": " + s.message());
        }
    accepted->resize(n, false);
    std::vector<::rpmad::v1::SetReplicaSetResponse> responses(n);
    std::vector<Status> errors(n);
    std::vector<bool> asked(n, false);
    for (size_t i = 0; i < n; ++i)
        asked[i] = send[i] && !(*accepted)[i];
    AtOnce(
        n, [&](size_t i) { return asked[i]; },
        [&](size_t i) {
            ControlPlane &control = *members_[i].control;
            errors[i] =
                FromGrpc(control.regions().SetReplicaSet(RecordContext(control).get(),
                                                         SetRequest(i, record), &responses[i]),
                         control.address());
        });
    std::string refused;
    std::vector<size_t> behind;
    for (size_t i = 0; i < n; ++i) {
        if (!asked[i])
            continue;
        if (!errors[i].ok()) {
            refused += "; replica " + std::to_string(i) + ": " + errors[i].ToString();
            continue;
        }
        const auto &current = responses[i].current();
        // The same change, recorded by this writer before (a retry) or by
        // another one that saw the same (two writers dropping the same
        // replica, or opening a new region with the same list): the set is
        // as this writer wants it.
        if (responses[i].applied() ||
            (current.generation() == record.generation() && SameMembers(current, record))) {
            (*accepted)[i] = true;
            continue;
        }
        if (current.generation() >= record.generation()) {
            // Another writer changed the set first: this Region is fenced.
            fenced_ = attention_ = true;
            fenced_status_ =
                Status(StatusCode::kFailedPrecondition,
                       what + ": the replica set changed under this Region (" +
                           DescribeRecord(current) + ", seen on replica " + std::to_string(i) +
                           " " + members_[i].address + "): open it again")
                    .WithReplica(i, members_[i].address);
            return fenced_status_;
        }
        behind.push_back(i);
    }
    // Behind (it missed changes, or holds what a step back skipped): brought
    // up through the generations between, then asked again; only once no
    // member showed a newer record.
    for (size_t i : behind) {
        const uint64_t from = responses[i].current().generation();
        Status caught = CatchUp(i, from, record);
        if (caught.ok()) {
            ::rpmad::v1::SetReplicaSetResponse again;
            ControlPlane &control = *members_[i].control;
            caught = FromGrpc(control.regions().SetReplicaSet(RecordContext(control).get(),
                                                              SetRequest(i, record), &again),
                              control.address());
            if (caught.ok() && again.applied()) {
                (*accepted)[i] = true;
                continue;
            }
        }
        refused += "; replica " + std::to_string(i) + " holds generation " + std::to_string(from) +
                   " (behind" + (caught.ok() ? "" : ": " + caught.ToString()) + ")";
    }
    // With etcd the authority, the members in sync must take the change
    // (they fence by it), a majority need not.
    Status verdict =
        RecordedVerdict(record, *accepted, options_.force || authority_ != nullptr, what);
    if (!verdict.ok())
        return Status(verdict.code(), verdict.message() + refused);
    return verdict;
}

void Region::Impl::Adopt(const ::rpmad::v1::ReplicaSetRecord &record) {
    record_ = record;
    generation_ = record.generation();
    for (size_t i = 0; i < members_.size() && static_cast<int>(i) < record.members_size(); ++i)
        members_[i].stale_since = record.members(static_cast<int>(i)).stale_since();
}

Status Region::Impl::Settle(const Op &op) {
    for (;;) {
        if (!pending_) {
            auto next = Successor(record_, writer_id_, NowUnix(), "replica failed");
            std::string which;
            for (size_t i = 0; i < members_.size(); ++i)
                if (members_[i].state == ReplicaState::kFailed &&
                    next.members(static_cast<int>(i)).state() ==
                        ::rpmad::v1::ReplicaSetMember::STATE_IN_SYNC) {
                    SetMemberState(&next, i, ::rpmad::v1::ReplicaSetMember::STATE_STALE);
                    which += (which.empty() ? "" : ", ") + std::to_string(i);
                }
            if (which.empty()) {
                record_pending_ = false;
                attention_ = fenced_ || read_only_ || authority_ != nullptr;
                return Status();
            }
            next.set_reason("replica " + which + " failed");
            pending_ = std::move(next);
            pending_accepted_.assign(members_.size(), false);
        }
        std::vector<bool> send(members_.size());
        for (size_t i = 0; i < members_.size(); ++i)
            send[i] = !Out(members_[i].state);
        if (Status s = Propose(*pending_, send, &pending_accepted_,
                               op.ToString() + ": recording " + pending_->reason());
            !s.ok())
            return s;
        Adopt(*pending_);
        pending_.reset();
    }
}

Status Region::Impl::ReadConfirmed(const Op &op, uint64_t offset, std::span<std::byte> out,
                                   size_t index) {
    // Bytes read between two looks at the same record came from a replica
    // in sync all along: every write acknowledged before the first look
    // is on it.
    constexpr int kAttempts = 4;
    for (int attempt = 0; attempt < kAttempts; ++attempt) {
        if (Status s = ReadLocked(op, offset, out, index); !s.ok())
            return s;
        bool changed = false;
        ::rpmad::v1::ReplicaSetRecord newest;
        Status s = authority_ ? authority_->Refresh(&changed) : NewestOfReplicas(op, &newest);
        if (!s.ok())
            return Status(s.code(), op.ToString() +
                                        ": confirming that the replica is still in "
                                        "sync: " +
                                        s.message());
        if (!authority_)
            changed = newest.generation() != record_.generation();
        if (!changed)
            return Status();
        const ::rpmad::v1::ReplicaSetRecord &record = authority_ ? authority_->record() : newest;
        // By daemon: a reader may list the replicas in another order.
        for (size_t i = 0; i < members_.size(); ++i) {
            Member &m = members_[i];
            if (m.state != ReplicaState::kLive)
                continue;
            const auto *recorded = m.daemon_id.empty() ? nullptr : ByDaemon(record, m.daemon_id);
            if (recorded && recorded->state() == ::rpmad::v1::ReplicaSetMember::STATE_IN_SYNC)
                continue;
            MarkFailed(i,
                       Status(StatusCode::kFailedPrecondition,
                              "recorded out of sync (" + record.reason() + ")"),
                       op);
            m.stale_since = recorded ? recorded->stale_since() : record.generation();
        }
        record_ = record;
    }
    return Status(StatusCode::kUnavailable,
                  op.ToString() + ": region " + name_ +
                      "'s record kept changing while it was read: read again");
}

Status Region::Impl::NewestOfReplicas(const Op &op, ::rpmad::v1::ReplicaSetRecord *newest) {
    const size_t n = members_.size();
    std::vector<std::optional<::rpmad::v1::ReplicaSetRecord>> held(n);
    std::vector<Status> errors(n);
    // Not the replicas known to be out: each would cost a timeout.
    AtOnce(
        n, [&](size_t i) { return !Out(members_[i].state); },
        [&](size_t i) {
            ControlPlane &control = *members_[i].control;
            ::rpmad::v1::GetReplicaSetRequest request;
            request.set_region(name_);
            ::rpmad::v1::ReplicaSetView view;
            errors[i] = FromGrpc(
                control.regions().GetReplicaSet(RecordContext(control).get(), request, &view),
                control.address());
            if (errors[i].ok())
                held[i] = view.record();
        });
    size_t answered = 0;
    for (size_t i = 0; i < n; ++i) {
        if (!held[i]) {
            if (!Out(members_[i].state))
                MarkFailed(i, errors[i], op);
            continue;
        }
        ++answered;
        if (held[i]->generation() >= newest->generation())
            *newest = *held[i];
    }
    // Any majority holds the newest record a writer acknowledged under
    // (forced: whatever answered, as at the open).
    if (answered < (options_.force ? 1 : Majority(n)))
        return Status(StatusCode::kUnavailable,
                      std::to_string(answered) + " of " + std::to_string(n) +
                          " replicas answered for their records; a majority is needed");
    return Status();
}

Status Region::Impl::Attend(const Op &op, bool writes, bool settle) {
    if (fenced_)
        return fenced_status_;
    if (authority_ && writes)
        if (Status held = authority_->Held(); !held.ok())
            return Status(held.code(), op.ToString() + ": " + held.message());
    if (writes && read_only_)
        return Status(StatusCode::kFailedPrecondition,
                      op.ToString() + ": the region " + name_ +
                          " was opened read-only: open it without read_only to write");
    // A read acknowledges nothing: it needs no record.
    if (record_pending_ && writes && settle)
        if (Status s = Settle(op); !s.ok())
            return s;
    // A write into an extent not hot is recorded in the activity log first
    // (a batch's writes each: Commit).
    if (authority_ && (op.kind == Op::Kind::kWrite || op.kind == Op::Kind::kWritePersist))
        return NoteActivity(op, op.offset, op.length);
    return Status();
}

Result<std::unique_ptr<Region>> Region::TryOpening(const std::string &name,
                                                   const OpenOptions &options,
                                                   const std::function<Status(Impl &)> &open) {
    // Another writer recording a change while this one opens (two opening a
    // new region at once, one dropping a replica) makes the open's record
    // or sessions outdated: the open starts over with what is recorded now,
    // a few times.
    constexpr int kAttempts = 4;
    std::unique_ptr<Impl> impl;
    for (int attempt = 1;; ++attempt) {
        impl = std::make_unique<Impl>(name, options);
        Status s = open(*impl);
        if (s.ok())
            break;
        if (!impl->open_raced() || attempt == kAttempts)
            return s;
    }
    const uint64_t size = impl->size();
    return std::unique_ptr<Region>(new Region(std::move(impl), name, size));
}

Result<std::unique_ptr<Region>> Region::Open(const ReplicaSet &replicas, const std::string &name,
                                             const OpenOptions &options) {
    return TryOpening(name, options, [&](Impl &impl) { return impl.OpenAll(replicas); });
}

Result<std::unique_ptr<Region>> Region::Open(const Cluster &cluster, const std::string &name,
                                             const OpenOptions &options) {
    if (options.create_size != 0)
        return Status(StatusCode::kInvalidArgument,
                      "create_size: a cluster's regions are created and placed by `rpmactl "
                      "--etcd ... region create`, not by an open");
    if (options.force)
        return Status(StatusCode::kInvalidArgument,
                      "force: in a cluster etcd's record decides which replicas are in sync; "
                      "there is nothing to force");
    return TryOpening(name, options, [&](Impl &impl) {
        // Taken again on each attempt: the record may have moved on.
        auto authority = ClusterAuthority::Open(cluster, name, !options.read_only, WriterId());
        if (!authority.ok())
            return authority.status();
        const ReplicaSet replicas = (*authority)->replicas();
        impl.SetAuthority(std::move(*authority));
        if (Status s = impl.OpenAll(replicas); !s.ok())
            return s;
        // (A reader inherits no activity log: nothing to reconcile.)
        if (Status s = impl.Reconcile(); !s.ok())
            return s;
        if (!options.read_only && cluster.maintain)
            impl.StartMaintenance();
        return Status();
    });
}

}  // namespace rpma::client
