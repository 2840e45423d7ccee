#include "replica_set_state.h"

#include <time.h>

#include <algorithm>
#include <cstdio>
#include <set>

#include "util/time_text.h"

namespace rpma::client {
namespace {

namespace v1 = ::rpmad::v1;
using Member = v1::ReplicaSetMember;
using Kind = ReplicaSetAnswer::Kind;

std::string Replica(const ReplicaSetInput &in, size_t i) {
    return "replica " + std::to_string(i) + " (" + in.addresses[i] + ")";
}

// The member of `record` recorded at `address`, or nullptr.
const Member *ByAddress(const v1::ReplicaSetRecord &record, const std::string &address) {
    for (const Member &m : record.members())
        if (m.address() == address)
            return &m;
    return nullptr;
}

const char *StateName(Member::State state) {
    switch (state) {
        case Member::STATE_IN_SYNC:
            return "in sync";
        case Member::STATE_STALE:
            return "stale";
        case Member::STATE_REPAIRING:
            return "being repaired";
        default:
            return "in no known state";
    }
}

}  // namespace

std::string UnknownDaemonId(size_t i) {
    char id[33];
    snprintf(id, sizeof(id), "%032zx", i);
    return id;
}

std::string DescribeRecord(const v1::ReplicaSetRecord &record) {
    std::string text = "generation " + std::to_string(record.generation());
    if (!record.writer().empty())
        text += ", by " + record.writer();
    if (record.updated_unix_seconds() > 0)
        text += ", at " + util::FormatUnixTime(record.updated_unix_seconds());
    if (!record.reason().empty())
        text += " (" + record.reason() + ")";
    return text;
}

const ::rpmad::v1::ReplicaSetMember *ByDaemon(const ::rpmad::v1::ReplicaSetRecord &record,
                                              const std::string &daemon_id) {
    for (const auto &m : record.members())
        if (m.daemon_id() == daemon_id)
            return &m;
    return nullptr;
}

bool SameMembers(const v1::ReplicaSetRecord &a, const v1::ReplicaSetRecord &b) {
    if (a.set_id() != b.set_id() || a.members_size() != b.members_size())
        return false;
    for (int k = 0; k < a.members_size(); ++k) {
        const Member &x = a.members(k), &y = b.members(k);
        if (x.daemon_id() != y.daemon_id() || x.address() != y.address() ||
            x.state() != y.state() || x.stale_since() != y.stale_since())
            return false;
    }
    return true;
}

v1::ReplicaSetRecord Successor(const v1::ReplicaSetRecord &held, const std::string &writer_id,
                               int64_t now_unix, const std::string &reason) {
    v1::ReplicaSetRecord next = held;
    next.set_generation(held.generation() + 1);
    next.set_writer(writer_id);
    next.set_updated_unix_seconds(now_unix);
    next.set_reason(reason);
    return next;
}

void SetMemberState(v1::ReplicaSetRecord *record, size_t i, Member::State state) {
    Member &m = *record->mutable_members(static_cast<int>(i));
    if (state == Member::STATE_IN_SYNC)
        m.set_stale_since(0);
    else if (m.state() == Member::STATE_IN_SYNC || m.stale_since() == 0)
        m.set_stale_since(record->generation());
    m.set_state(state);
}

Status RecordedVerdict(const v1::ReplicaSetRecord &record, const std::vector<bool> &accepted,
                       bool force, const std::string &what) {
    size_t count = 0, in_sync = 0, in_sync_accepted = 0;
    std::string missing;
    for (int k = 0; k < record.members_size(); ++k) {
        const bool ok = static_cast<size_t>(k) < accepted.size() && accepted[k];
        count += ok;
        if (record.members(k).state() == Member::STATE_IN_SYNC) {
            ++in_sync;
            in_sync_accepted += ok;
            if (!ok)
                missing += (missing.empty() ? "" : ", ") + std::to_string(k);
        }
    }
    const size_t members = static_cast<size_t>(record.members_size());
    const size_t majority = force ? 0 : Majority(members);
    if (in_sync_accepted == in_sync && count >= majority)
        return Status();
    const size_t needed = std::max(in_sync, majority);
    return Status(StatusCode::kQuorumLost,
                  what + " (generation " + std::to_string(record.generation()) +
                      "): " + std::to_string(count) + " of " + std::to_string(needed) +
                      " needed accepted (every in-sync member and a majority of the " +
                      std::to_string(members) + ")" +
                      (missing.empty() ? "" : "; not accepted by in-sync replica " + missing) +
                      ": no operation is acknowledged without it (a set needs a majority of its "
                      "members to change; see REPLICA_SETS.md)");
}

namespace {

ReplicaSetDecision DecideByAuthority(const ReplicaSetInput &in) {
    const size_t n = in.addresses.size();
    const v1::ReplicaSetRecord &record = *in.authority;
    ReplicaSetDecision d;
    d.newest = record;
    d.in_sync.assign(n, false);
    d.stale_since.assign(n, 0);
    d.why.assign(n, "");
    if (static_cast<size_t>(record.members_size()) != n) {
        d.status =
            Status(StatusCode::kInternal, "region " + in.region + ": the cluster's record lists " +
                                              std::to_string(record.members_size()) +
                                              " members, the opener " + std::to_string(n));
        return d;
    }
    for (size_t i = 0; i < n; ++i) {
        const ReplicaSetAnswer &a = in.answers[i];
        const Member &m = record.members(static_cast<int>(i));
        d.stale_since[i] = m.stale_since();
        if (m.state() != Member::STATE_IN_SYNC)
            d.why[i] = std::string("the cluster's record (") + DescribeRecord(record) +
                       ") has it " + StateName(m.state()) + " since generation " +
                       std::to_string(m.stale_since());
        else if (a.kind == Kind::kUnreached)
            d.why[i] = "not reached: " + a.error.ToString();
        else if (a.kind == Kind::kUnimplemented)
            d.why[i] = "its daemon keeps no replica-set record (an older rpmad)";
        else if (a.daemon_id != m.daemon_id())
            d.why[i] =
                "another daemon (" + a.daemon_id + ") answers where node " + m.daemon_id() + " was";
        else
            d.in_sync[i] = true;
    }
    if (in.writer) {
        v1::ReplicaSetRecord next = Successor(record, in.writer_id, in.now_unix, "writer opened");
        next.set_quorum(static_cast<uint32_t>(in.quorum));
        for (size_t i = 0; i < n; ++i)
            if (!d.in_sync[i] &&
                record.members(static_cast<int>(i)).state() == Member::STATE_IN_SYNC)
                SetMemberState(&next, i, Member::STATE_STALE);
        d.change = std::move(next);
    }
    return d;
}

}  // namespace

ReplicaSetDecision DecideReplicaSet(const ReplicaSetInput &in) {
    if (in.authority != nullptr)
        return DecideByAuthority(in);
    const size_t n = in.addresses.size();
    ReplicaSetDecision d;
    d.in_sync.assign(n, false);
    d.stale_since.assign(n, 0);
    d.why.assign(n, "");
    size_t reached = 0, unimplemented = 0;
    std::string unreached;
    for (size_t i = 0; i < n; ++i) {
        const ReplicaSetAnswer &a = in.answers[i];
        reached += a.kind != Kind::kUnreached;
        unimplemented += a.kind == Kind::kUnimplemented;
        if (a.kind == Kind::kUnreached) {
            d.why[i] = "not reached: " + a.error.ToString();
            unreached += "; " + Replica(in, i) + ": " + a.error.ToString();
        }
    }
    if (unimplemented > 0) {
        if (unimplemented < reached) {
            std::string old, fresh;
            for (size_t i = 0; i < n; ++i) {
                if (in.answers[i].kind == Kind::kUnimplemented)
                    old += (old.empty() ? "" : ", ") + Replica(in, i);
                else if (in.answers[i].kind == Kind::kRecord)
                    fresh += (fresh.empty() ? "" : ", ") + Replica(in, i);
            }
            d.status = Status(StatusCode::kFailedPrecondition,
                              "region " + in.region + ": " + old +
                                  " keep no replica-set record (an older rpmad) while " + fresh +
                                  " do: upgrade every daemon of the set");
            return d;
        }
        // Every daemon reached predates the records: as before them.
        d.legacy = true;
        for (size_t i = 0; i < n; ++i)
            d.in_sync[i] = in.answers[i].kind == Kind::kUnimplemented;
        return d;
    }
    const size_t majority = Majority(n);
    if (reached < majority && !in.force) {
        d.status = Status(StatusCode::kUnavailable,
                          "region " + in.region + ": reached " + std::to_string(reached) + " of " +
                              std::to_string(n) +
                              " replicas, fewer than a majority: the newest replica-set record "
                              "may be on one not reached, so which replicas hold every "
                              "acknowledged write is unknown; open again once more are back, or "
                              "with force to trust the newest of those reached (the risk: a "
                              "stale replica read, and written, as in sync)" +
                              unreached);
        return d;
    }
    // The set: one set_id among the records (generation 0 has none).
    std::set<std::string> set_ids;
    uint64_t newest_generation = 0;
    size_t newest_at = n;
    for (size_t i = 0; i < n; ++i) {
        const ReplicaSetAnswer &a = in.answers[i];
        if (a.kind != Kind::kRecord || a.record.generation() == 0)
            continue;
        set_ids.insert(a.record.set_id());
        if (newest_at == n || a.record.generation() > newest_generation) {
            newest_generation = a.record.generation();
            newest_at = i;
        }
    }
    if (set_ids.size() > 1 && !in.force) {
        std::string ids;
        for (size_t i = 0; i < n; ++i)
            if (in.answers[i].kind == Kind::kRecord && in.answers[i].record.generation() > 0)
                ids += "; " + Replica(in, i) + ": set " + in.answers[i].record.set_id() + " " +
                       DescribeRecord(in.answers[i].record);
        d.status = Status(StatusCode::kUnavailable,
                          "region " + in.region +
                              ": its replicas hold records of different replica sets (two "
                              "applications list different replicas for this region name?): "
                              "fix the replica list, or open with force to take the newest" +
                              ids);
        return d;
    }
    const std::string set_id =
        newest_at == n ? in.new_set_id : in.answers[newest_at].record.set_id();
    auto at_newest = [&](size_t i) {
        const ReplicaSetAnswer &a = in.answers[i];
        return a.kind == Kind::kRecord && a.record.generation() == newest_generation &&
               (newest_generation == 0 || a.record.set_id() == set_id);
    };
    // A newest generation that cannot have been recorded: held by fewer
    // than a majority even if every member not reached held it too (a
    // writer that died after one member took its change). Nothing was
    // acknowledged under it: it is stepped back from, to the newest that
    // can have been, and its holders count as holding that one (they took
    // it before). A change then follows the highest generation seen.
    const uint64_t highest = newest_generation;
    std::vector<bool> beyond(n, false);
    size_t unreached_count = 0;
    for (size_t i = 0; i < n; ++i)
        unreached_count += in.answers[i].kind == Kind::kUnreached;
    while (newest_at != n) {
        size_t holders = 0;
        for (size_t i = 0; i < n; ++i)
            holders += at_newest(i);
        if (holders + unreached_count >= Majority(n))
            break;
        for (size_t i = 0; i < n; ++i)
            beyond[i] = beyond[i] || at_newest(i);
        newest_at = n;
        newest_generation = 0;
        for (size_t i = 0; i < n; ++i) {
            const ReplicaSetAnswer &a = in.answers[i];
            if (beyond[i] || a.kind != Kind::kRecord || a.record.generation() == 0 ||
                a.record.set_id() != set_id)
                continue;
            if (newest_at == n || a.record.generation() > newest_generation) {
                newest_generation = a.record.generation();
                newest_at = i;
            }
        }
    }
    auto holds_newest = [&](size_t i) { return beyond[i] || at_newest(i); };
    const bool any_beyond = std::find(beyond.begin(), beyond.end(), true) != beyond.end();

    // Two versions of the newest generation: a writer died half-way
    // through recording one, or lost the race to another. The version on a
    // majority of the members is the only one that can have been recorded
    // (a member takes one record per generation): it alone is trusted, and
    // the members holding another are behind it.
    std::vector<bool> holds_other_version(n, false);
    if (newest_at != n)
        for (size_t i = 0; i < n; ++i) {
            if (!at_newest(i))
                continue;
            size_t same = 0;
            for (size_t k = 0; k < n; ++k)
                same += at_newest(k) && SameMembers(in.answers[k].record, in.answers[i].record);
            if (same < Majority(n))
                continue;
            newest_at = i;
            for (size_t k = 0; k < n; ++k)
                holds_other_version[k] =
                    at_newest(k) && !SameMembers(in.answers[k].record, in.answers[i].record);
            break;
        }
    auto holds_trusted = [&](size_t i) { return at_newest(i) && !holds_other_version[i]; };

    if (newest_at == n) {
        // Never recorded: every replica reached is in sync (a region
        // created again by this open included); a writer records
        // generation 1 with them IN_SYNC and the others STALE.
        for (size_t i = 0; i < n; ++i)
            d.in_sync[i] = in.answers[i].kind == Kind::kRecord;
        if (in.writer) {
            v1::ReplicaSetRecord first;
            first.set_set_id(set_id);
            first.set_generation(highest + 1);
            first.set_quorum(static_cast<uint32_t>(in.quorum));
            first.set_writer(in.writer_id);
            first.set_updated_unix_seconds(in.now_unix);
            first.set_reason("open");
            for (size_t i = 0; i < n; ++i) {
                Member &m = *first.add_members();
                const bool got = in.answers[i].kind == Kind::kRecord;
                m.set_daemon_id(got ? in.answers[i].daemon_id : UnknownDaemonId(i));
                m.set_address(in.addresses[i]);
                m.set_state(got ? Member::STATE_IN_SYNC : Member::STATE_STALE);
                m.set_stale_since(got ? 0 : first.generation());
                if (!got)
                    d.stale_since[i] = first.generation();
            }
            d.change = std::move(first);
        }
    } else {
        d.newest = in.answers[newest_at].record;
        // A majority of the record's members, too, when it lists more than
        // the opener was given.
        if (const size_t members = static_cast<size_t>(d.newest.members_size());
            reached < Majority(members) && !in.force) {
            d.status = Status(StatusCode::kUnavailable,
                              "region " + in.region + ": reached " + std::to_string(reached) +
                                  " of the " + std::to_string(members) +
                                  " members of its replica set (" + DescribeRecord(d.newest) +
                                  "), fewer than a majority: open it with every member's "
                                  "address, or with force to trust the newest record of those "
                                  "reached (the risk: a stale replica read as in sync)");
            return d;
        }
        // The records of the newest generation; when they differ (a writer
        // died half-way through a change), a member is in sync only if all
        // of them say so.
        std::vector<const v1::ReplicaSetRecord *> newest;
        bool ties_differ = false;
        for (size_t i = 0; i < n; ++i)
            if (holds_trusted(i)) {
                newest.push_back(&in.answers[i].record);
                ties_differ = ties_differ || !SameMembers(*newest.front(), *newest.back());
            }
        for (size_t i = 0; i < n; ++i) {
            const ReplicaSetAnswer &a = in.answers[i];
            const Member *recorded = a.kind == Kind::kRecord ? ByDaemon(d.newest, a.daemon_id)
                                                             : ByAddress(d.newest, in.addresses[i]);
            if (recorded != nullptr && recorded->state() != Member::STATE_IN_SYNC)
                d.stale_since[i] = recorded->stale_since();
            if (a.kind != Kind::kRecord)
                continue;  // why: not reached
            if (recorded == nullptr) {
                d.why[i] = "its daemon " + a.daemon_id + " is not a member of the newest record (" +
                           DescribeRecord(d.newest) +
                           "): another daemon, or a region created again, answers at its address";
                continue;
            }
            if (recorded->state() != Member::STATE_IN_SYNC) {
                d.why[i] = std::string("the newest record (") + DescribeRecord(d.newest) +
                           ") has it " + StateName(recorded->state()) + " since generation " +
                           std::to_string(recorded->stale_since());
                continue;
            }
            if (holds_other_version[i]) {
                d.why[i] = "its daemon holds another version of generation " +
                           std::to_string(newest_generation) +
                           " than the majority's (a writer that lost the race to record it)";
                continue;
            }
            if (!holds_newest(i)) {
                d.why[i] = "its daemon holds " +
                           (a.record.generation() == 0
                                ? std::string("no record")
                                : "generation " + std::to_string(a.record.generation()) +
                                      (a.record.set_id() == set_id ? "" : " of another set")) +
                           ", not the newest (" + std::to_string(newest_generation) +
                           "): it missed a change";
                continue;
            }
            bool all_say_so = true;
            for (const v1::ReplicaSetRecord *r : newest) {
                const Member *m = ByDaemon(*r, a.daemon_id);
                all_say_so = all_say_so && m != nullptr && m->state() == Member::STATE_IN_SYNC;
            }
            if (!all_say_so) {
                d.why[i] = "the records of generation " + std::to_string(newest_generation) +
                           " differ about it (a writer died while recording a change)";
                continue;
            }
            // A change stepped back from still says who its writer saw
            // fail: those stay out (it may have acknowledged writes they
            // lack before it recorded them).
            bool excluded = false;
            for (size_t k = 0; k < n && !excluded; ++k) {
                if (!beyond[k])
                    continue;
                const Member *m = ByDaemon(in.answers[k].record, a.daemon_id);
                excluded = m != nullptr && m->state() != Member::STATE_IN_SYNC;
            }
            if (excluded) {
                d.why[i] = "a change of generation " + std::to_string(highest) +
                           " that was never recorded on a majority has it out (its writer saw "
                           "it fail, then died)";
                continue;
            }
            d.in_sync[i] = true;
        }
        // A writer given fewer replicas than the set has would record a
        // smaller set: every member of the record must be in its list
        // (reached, or at a listed address).
        if (in.writer && !in.force)
            for (const Member &m : d.newest.members()) {
                bool listed = std::find(in.addresses.begin(), in.addresses.end(), m.address()) !=
                              in.addresses.end();
                for (size_t i = 0; i < n && !listed; ++i)
                    listed = in.answers[i].kind == Kind::kRecord &&
                             in.answers[i].daemon_id == m.daemon_id();
                if (listed)
                    continue;
                d.status = Status(StatusCode::kFailedPrecondition,
                                  "region " + in.region + ": its replica set (" +
                                      DescribeRecord(d.newest) + ") has member " + m.address() +
                                      " (daemon " + m.daemon_id() +
                                      "), which the replica list given does not: open it with "
                                      "every member's address, read-only, or with force to "
                                      "record the list given as the set");
                return d;
            }
        // A repair elsewhere (or one that died) keeps writers out.
        if (in.writer && !in.force && !in.repair_takeover)
            for (size_t i = 0; i < n; ++i) {
                const Member *m = in.answers[i].kind == Kind::kRecord
                                      ? ByDaemon(d.newest, in.answers[i].daemon_id)
                                      : ByAddress(d.newest, in.addresses[i]);
                if (m == nullptr || m->state() != Member::STATE_REPAIRING)
                    continue;
                d.status = Status(StatusCode::kUnavailable,
                                  "region " + in.region + ": " + Replica(in, i) +
                                      " is being repaired (" + DescribeRecord(d.newest) +
                                      "): wait for it, run `rpmactl region repair " + in.region +
                                      "` to finish a repair that died, or open with force to "
                                      "mark it stale again")
                               .WithReplica(i, in.addresses[i]);
                return d;
            }
        if (in.writer) {
            v1::ReplicaSetRecord next =
                Successor(d.newest, in.writer_id, in.now_unix, "open: the writer's view");
            next.set_generation(highest + 1);
            next.set_quorum(static_cast<uint32_t>(in.quorum));
            next.clear_members();
            for (size_t i = 0; i < n; ++i) {
                const ReplicaSetAnswer &a = in.answers[i];
                const Member *recorded = a.kind == Kind::kRecord
                                             ? ByDaemon(d.newest, a.daemon_id)
                                             : ByAddress(d.newest, in.addresses[i]);
                Member &m = *next.add_members();
                m.set_daemon_id(a.kind == Kind::kRecord ? a.daemon_id
                                : recorded != nullptr   ? recorded->daemon_id()
                                                        : UnknownDaemonId(i));
                m.set_address(in.addresses[i]);
                if (d.in_sync[i]) {
                    m.set_state(Member::STATE_IN_SYNC);
                    continue;
                }
                const bool keeps_repairing = recorded != nullptr &&
                                             recorded->state() == Member::STATE_REPAIRING &&
                                             !in.force;
                m.set_state(keeps_repairing ? Member::STATE_REPAIRING : Member::STATE_STALE);
                m.set_stale_since(recorded != nullptr && recorded->state() != Member::STATE_IN_SYNC
                                      ? recorded->stale_since()
                                      : next.generation());
                d.stale_since[i] = m.stale_since();
            }
            if (ties_differ || any_beyond || !SameMembers(next, d.newest) ||
                std::find(holds_other_version.begin(), holds_other_version.end(), true) !=
                    holds_other_version.end())
                d.change = std::move(next);
        }
    }
    size_t in_sync = 0;
    for (size_t i = 0; i < n; ++i)
        in_sync += d.in_sync[i];
    if (in_sync < in.quorum) {
        std::string stale;
        for (size_t i = 0; i < n; ++i)
            if (!d.in_sync[i])
                stale += "; " + Replica(in, i) +
                         (d.stale_since[i] > 0
                              ? " is stale since generation " + std::to_string(d.stale_since[i])
                              : std::string(" is not in sync")) +
                         " (" + d.why[i] + ")";
        d.status = Status(StatusCode::kQuorumLost,
                          "region " + in.region + ": " + std::to_string(in_sync) + " of " +
                              std::to_string(n) + " replicas in sync, quorum " +
                              std::to_string(in.quorum) + " needed" + stale +
                              ": repair with `rpmactl region repair " + in.region + "`");
    }
    return d;
}

}  // namespace rpma::client
