// Region::Impl, private to the library: the operations over the replica
// set's members (members.h) and the fan-out's waits (fan_out.h): writes,
// persists and batches (region.cc), reads (region_read.cc), the
// asynchronous operations' progress thread (region_async.cc), the replica
// set's records (region_open.cc) and the resync of a failed replica
// (region_resync.cc).
#ifndef CLIENT_SRC_REGION_IMPL_H
#define CLIENT_SRC_REGION_IMPL_H

#include <array>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "ack_history.h"
#include "buffer_table.h"
#include "cluster_authority.h"
#include "coarse_clock.h"
#include "fan_out.h"
#include "in_flight.h"
#include "members.h"
#include "op.h"
#include "plan.h"
#include "replica.h"
#include "replica_set_state.h"
#include "rpma/client/region.h"
#include "staging_ring.h"

namespace rpma::client {

constexpr size_t kStagingId = 0;
// A write or read from a registered buffer is posted in pieces of at most
// this: what every provider takes in one work request (rpma_write's length
// is 32 bits; a verbs device caps a message at its max_msg_sz), so that no
// length ever makes a post fail, which would fail every replica at once.
constexpr size_t kMaxPostBytes = size_t{1} << 30;
// Group commit (OpenOptions::group_commit): an asynchronous persist is
// deferred while this many persists are in flight, so that flushes keep
// pipelining (an operation waits a quarter of a round trip more on average)
// while each covers the persists that came during a quarter of one.
constexpr size_t kGroupPersistsInFlight = 4;
// How many bytes more than its persists' own a group's covering range may
// span (JoinsGroup).
constexpr uint64_t kGroupSlack = 64 << 10;
// OpenOptions::max_in_flight's default.
constexpr size_t kDefaultMaxInFlight = 64;
class Region::Impl : private FanOut::Failures, private InFlight::Completer {
  public:
    using Registered = BufferTable::Buffer;
    using Need = FanOut::Need;
    using Outcome = FanOut::Outcome;

    Impl(std::string name, OpenOptions options)
        : name_(std::move(name)),
          options_(std::move(options)),
          fan_out_(members_, mu_, options_.operation_timeout, *this),
          in_flight_(mu_,
                     options_.max_in_flight == 0 ? kDefaultMaxInFlight : options_.max_in_flight,
                     *this) {}
    ~Impl() {
        StopMaintenance();
        in_flight_.Stop();
        std::lock_guard lock(mu_);
        // Let laggards finish what they were given before disconnecting.
        (void)fan_out_.Await(Op{Op::Kind::kClosing}, Need::kAll,
                             [&](Replica &r) { return r.Completed(seq_); });
        // A replica that failed and was not recorded stale may miss the
        // last writes: the next writer reconciles the hot extents.
        if (authority_ && (record_pending_ || fenced_))
            authority_->KeepActivity();
        // Every replica goes before the staging ring (and before the
        // application may free its registered buffers): a replica's
        // connection may read them to send until its registrations are gone
        // (~Replica), whatever order the members are declared in.
        members_.clear();
    }

    Status OpenAll(const ReplicaSet &set);
    // Cluster mode: the region's record in etcd decides which replicas are
    // in sync, and every change of it is committed there first.
    void SetAuthority(std::unique_ptr<ClusterAuthority> authority) {
        authority_ = std::move(authority);
    }
    const ClusterAuthority *authority() const { return authority_.get(); }
    std::vector<ReplicaInfo> Infos() const;
    // Cluster mode, a writer that took the region from one that died:
    // copies the extents the dead writer's activity log names from the
    // first live replica to the others where they differ (checksums), so
    // that every replica in sync returns the same bytes, then clears the
    // log. Before the Region's first write.
    Status Reconcile();
    // Cluster mode, a writer: a thread that runs what the controller asks
    // of this writer (<prefix>maintenance/<name>: repairs, replacements),
    // while the application writes (region_maintain.cc).
    void StartMaintenance();
    Status Write(uint64_t offset, std::span<const std::byte> bytes, bool persist);
    Status Persist(uint64_t offset, uint64_t length);
    Status Commit(const Batch::Entry *entries, size_t count);
    Status Read(uint64_t offset, std::span<std::byte> out, size_t index);
    Status RegisterBuffer(std::span<std::byte> bytes);
    Status UnregisterBuffer(std::span<std::byte> bytes);
    Status Repair(size_t index, const RepairOptions &options);
    uint64_t generation() const {
        std::lock_guard lock(mu_);
        return read_only_ ? 0 : generation_;
    }
    // Waits, up to operation_timeout, until the daemon behind `control` no
    // longer has session `session_id` (Readd's barrier).
    Status AwaitSessionEnd(ControlPlane &control, const std::string &session_id) const;
    // The asynchronous operations (region_async.cc): posted at once (after
    // waiting, on the calling thread, while max_in_flight are outstanding,
    // or refused then: OpenOptions::wait_for_room), completed by the
    // progress thread in submission order.
    void WriteAsync(uint64_t offset, std::span<const std::byte> bytes, bool persist,
                    Completion done);
    void PersistAsync(uint64_t offset, uint64_t length, Completion done);
    void CommitAsync(std::vector<Batch::Entry> entries, Completion done);
    void ReadAsync(uint64_t offset, std::span<std::byte> out, size_t index, Completion done);

    uint64_t size() const { return size_; }
    // OpenAll failed because another writer changed the record meanwhile.
    bool open_raced() const { return open_raced_ || fenced_; }

  private:
    // Whether an asynchronous submission may go on, mu_ held by `lock`
    // (InFlight::AwaitRoom); if not, `done` ran, with mu_ released, with
    // kResourceExhausted.
    bool Room(std::unique_lock<std::mutex> &lock, Completion &done);
    void StopMaintenance();
    void MaintenanceLoop();
    // One action of the controller's request, when it still applies.
    void Maintain(const rpma::cluster::v1::MaintenanceRequest::Action &action);
    // Takes in-sync member `i` out (recorded stale) to copy it elsewhere,
    // when the others still meet the quorum.
    Status Retire(size_t i, const std::string &why);
    // The operations' posts, mu_ held (the *Locked waits, and the async
    // submissions, share them).
    Status PostWriteOp(const Op &op, uint64_t offset, std::span<const std::byte> bytes,
                       bool persist, Posted *posted);
    Status PostPersistOp(const Op &op, uint64_t offset, uint64_t length, Posted *posted);
    Status PostCommitOp(const Op &op, const Batch::Entry *entries, size_t count, Posted *posted);
    // One piece of a read: at most StagingRing::kMaxExtent into the ring,
    // or kMaxPostBytes into a registered buffer, from offset on; *taken is
    // how much of `out` it covers.
    Status PostReadPiece(const Op &op, uint64_t offset, std::span<std::byte> out, size_t index,
                         Posted *posted, size_t *taken);
    // Whether replica `index` may be read (in sync), else why not.
    Status Readable(const Op &op, size_t index) const;
    // Waits (mu_ released meanwhile) until what `posted` left is met; then a staged read's
    // bytes are copied out and an acknowledged operation remembered.
    Status AwaitPosted(const Op &op, const Posted &posted);
    // Whether AwaitPosted would return at once.
    bool PostedDone(const Posted &posted) override;
    Status WriteLocked(const Op &op, uint64_t offset, std::span<const std::byte> bytes,
                       bool persist);
    Status PersistLocked(const Op &op, uint64_t offset, uint64_t length);
    Status CommitLocked(const Op &op, const Batch::Entry *entries, size_t count);
    // Reads piece by piece, each posted under mu_ and waited for without it.
    Status ReadLocked(const Op &op, uint64_t offset, std::span<std::byte> out, size_t index);
    // A reader's read: ReadLocked, then the newest record (etcd's, or a
    // majority of the replicas') confirmed unchanged since the last look
    // (else adopted, and the read done again): the writer does not tell
    // readers when it records a replica stale, and a replica it cut off
    // may still answer them.
    Status ReadConfirmed(const Op &op, uint64_t offset, std::span<std::byte> out, size_t index);
    // The newest record a majority of the replicas hold, into *newest; a
    // replica that does not answer is marked failed.
    Status NewestOfReplicas(const Op &op, ::rpmad::v1::ReplicaSetRecord *newest);
    // What an operation checks before it starts when attention_ is set: a
    // fenced Region, a read-only one's writes, failures not yet recorded.
    // kInvalidArgument: `op`'s range is beyond the region.
    Status Beyond(const Op &op) const {
        return Status(StatusCode::kInvalidArgument,
                      op.ToString() + ": beyond the region's " + std::to_string(size_) + " bytes");
    }
    // An asynchronous submission's checks, mu_ held: its range, then
    // Attend's when attention_ is set.
    Status Admit(const Op &op, bool writes, bool settle) {
        if (!InRange(op.offset, op.length, size_))
            return Beyond(op);
        return attention_ ? Attend(op, writes, settle) : Status();
    }
    // `settle`: failures not yet recorded are recorded first; an
    // asynchronous submission leaves that to its completion (Finish), so
    // that it does not wait on the control plane: nothing is acknowledged
    // before it either way.
    Status Attend(const Op &op, bool writes, bool settle = true);
    // After an operation that marked an in-sync replica failed: records it
    // STALE (generation + 1) before the operation returns (rule 2).
    Status Finish(const Op &op, Status s) {
        if (record_pending_) [[unlikely]] {
            // Fenced says more than the operation's own error.
            Status recorded = Settle(op);
            if (s.ok() || fenced_)
                return recorded;
        }
        return s;
    }
    Status NoteActivity(const Op &op, uint64_t offset, uint64_t length) {
        Status s = authority_->NoteActivity(offset, length);
        return s.ok() ? s : Status(s.code(), op.ToString() + ": " + s.message());
    }
    // A write that failed may have reached some replicas and not others:
    // in cluster mode its extents stay in the activity log.
    Status Pinned(const Op &op, Status s) {
        if (!s.ok() && authority_) [[unlikely]]
            authority_->PinActivity(op.offset, op.length);
        return s;
    }
    // Records every replica marked failed that the held record has in
    // sync, until none is left (rule 2); kQuorumLost when too few accepted,
    // kFailedPrecondition when fenced.
    Status Settle(const Op &op);
    // Sends `record` (expected: its generation - 1) to the members that
    // `send` selects and have not accepted it yet, at once, within
    // operation_timeout; marks who accepted, and the Region fenced when a
    // member holds a newer generation. Then rule 1's verdict on `record`.
    Status Propose(const ::rpmad::v1::ReplicaSetRecord &record, const std::vector<bool> &send,
                   std::vector<bool> *accepted, const std::string &what);
    // SetReplicaSet of `record` (expected: its generation - 1) for member i.
    ::rpmad::v1::SetReplicaSetRequest SetRequest(size_t i,
                                                 const ::rpmad::v1::ReplicaSetRecord &record) const;
    // Brings member `i`'s daemon, which holds generation `from`, to
    // `record` step by step (each change adds exactly 1): the repair's
    // target, behind since it went stale.
    Status CatchUp(size_t i, uint64_t from, const ::rpmad::v1::ReplicaSetRecord &record);
    // Adopts a recorded change: the held record, generation and stale_since.
    void Adopt(const ::rpmad::v1::ReplicaSetRecord &record);
    Status Fenced() const { return fenced_status_; }
    std::unique_ptr<grpc::ClientContext> RecordContext(ControlPlane &control) const;
    // Copies extent [offset, offset + length) from `source` to member
    // `index` (read, write, persist), under the mutex (`lock` held).
    Status CopyExtent(size_t index, uint64_t offset, uint64_t length);
    // Marks member `i` failed during `op` (why: `why`): reported, left out
    // of every later operation, its connection closed; one in sync in the
    // record is recorded STALE before the next acknowledgement (Finish).
    void MarkFailed(size_t i, Status why, const Op &op) override;
    // Remembers `op`, acknowledged by the quorum once `seq` was confirmed.
    void Acknowledge(const Op &op, uint64_t seq) { acknowledged_.Add(op, seq); }
    // "; it had not confirmed N earlier operations ..., from A to B" for
    // replica `i`, or "" when it confirmed every remembered one.
    std::string Unconfirmed(size_t i) const;
    // Data path (AwaitReleasing): room for `requests` work requests (and a
    // persist's flush) on every replica not failed.
    Status EnsureRoom(const Op &op, bool persist, size_t requests = 1);
    // Data path: `length` bytes of the staging ring, for the work request
    // posted next (seq_ + 1), with room for a write on every replica, both
    // true together (mu_ is not released between this and the post, so no
    // other thread takes them). `then_persist`: room for the persist that
    // confirms the write too, so that mu_ is not released between an
    // unsignaled write and its persist either (a thread holding mu_ to the
    // end, waiting for that write's extent or buffer, would wait for a
    // persist that cannot be posted).
    Result<size_t> StagingWithRoom(const Op &op, size_t length, bool then_persist);
    // `length` bytes of the staging ring for the work request posted next
    // (a repair's copy), waited for as StagingWithRoom's (mu_ released).
    Result<size_t> AcquireStaging(const Op &op, size_t length);
    // One wait for the oldest extent in use to come back.
    Status AwaitStaging(const Op &op);
    // What the ring has free now for the work request posted next.
    // An extent comes back once every replica completed its work request
    // and, for a read's, its bytes were copied out (reads_copying_).
    std::optional<size_t> TakeStaging(size_t length) {
        return ring_.Take(length, seq_ + 1, [this](uint64_t seq) {
            return (reads_copying_.empty() || seq < *reads_copying_.begin()) &&
                   members_.AllHold([seq](Replica &r) { return r.Completed(seq); });
        });
    }

    // The registered buffer holding `bytes` when a write may send from it
    // directly, else nullptr (unregistered, or to be staged). Directly only
    // when the quorum is every replica not failed: without records, behind
    // a smaller quorum a laggard may still be sending from the buffer after
    // the call returned, and would store, and confirm, whatever the
    // application wrote there since. (With records every in-sync replica is
    // waited for, so only a resyncing one could; the copy is kept anyway.)
    Registered *SendsFrom(std::span<const std::byte> bytes);
    // Posts `bytes` to every replica not failed; *last_seq is the seq of its
    // last work request. `persist_next`: a persist posted later in this
    // operation confirms that last work request (Replica::PostWrite's
    // confirmed_by_next), and nothing the operation waits for before then
    // depends on it.
    Status PostWrite(const Op &op, uint64_t offset, std::span<const std::byte> bytes,
                     uint64_t *last_seq, bool persist_next);
    Status PostPersist(const Op &op, uint64_t offset, uint64_t length, uint64_t *seq);
    // Group commit, mu_ held: whether a persist of (offset, length) would
    // be left to the forming group now, rather than posted.
    bool Defers(uint64_t offset, uint64_t length);
    // Makes [offset, offset + length) durable for the operation `posted`
    // describes, whose writes (if any) are posted: it joins the forming
    // group when Defers says so, else a persist is posted.
    Status PersistOrJoin(const Op &op, uint64_t offset, uint64_t length, Posted *posted);
    // Posts the forming group's covering persist (the progress thread).
    void PostGroup();
    // Persists posted and not yet done on every replica (group commit's
    // measure of the pipeline: a lower bound, from what was collected).
    size_t PersistsInFlight();
    // A persist was posted (counted by PersistsInFlight).
    void NotePersist(uint64_t seq) {
        if (!options_.group_commit)
            return;
        persists_posted_.push_back(seq);
        (void)PersistsInFlight();  // and those done leave: none waits long
    }
    // While it lives (mu_ held), an asynchronous submission's posts wait
    // for the doorbell (Replica::HoldPosts) when the progress thread rings
    // before it waits for them: it posts them itself (a callback's
    // submission), or operations are outstanding ahead of them (it waits for
    // those first). Submissions then share one send per replica, as a chain
    // of work requests shares one doorbell on a NIC.
    class HeldPosts {
      public:
        explicit HeldPosts(Impl &impl);
        ~HeldPosts();
        HeldPosts(const HeldPosts &) = delete;
        HeldPosts &operator=(const HeldPosts &) = delete;

      private:
        Impl &impl_;
        const bool hold_;
    };
    // The progress thread's (InFlight): an operation's outcome (waited
    // for, then through Finish and Pinned), and group commit's turn after
    // each round of completions.
    Status Complete(Pending &pending) override;
    void AfterCompletions() override;

    const std::string name_;
    const OpenOptions options_;
    uint64_t size_ = 0;

    // The replica set's record (REPLICA_SETS.md), as this Region last
    // recorded or read it; members in members_' order. Unused when legacy.
    ::rpmad::v1::ReplicaSetRecord record_;
    uint64_t generation_ = 0;
    bool read_only_ = false;  // OpenOptions::read_only
    std::string writer_id_;   // "host pid N"
    // The operations' one check: set while any of the below is.
    bool attention_ = false;
    // Cluster mode (SetAuthority); null for a static set.
    std::unique_ptr<ClusterAuthority> authority_;
    bool record_pending_ = false;  // a replica in sync in record_ was marked failed
    bool fenced_ = false;
    Status fenced_status_;
    bool open_raced_ = false;
    // A change proposed and not yet recorded, and who accepted it.
    std::optional<::rpmad::v1::ReplicaSetRecord> pending_;
    std::vector<bool> pending_accepted_;

    // Every operation's bookkeeping and posts. Held start to end by all but
    // the data path (writes, persists, batches), which releases it while it
    // waits for its replicas (AwaitReleasing): posting order under it is
    // each replica's execution order.
    mutable std::mutex mu_;
    // Declared before members_, which send from it, so that it outlives
    // them even without ~Impl's explicit teardown.
    StagingRing ring_;
    Members members_;
    // The waits (mu_ held), which report failures to MarkFailed.
    FanOut fan_out_;
    uint64_t seq_ = 0;  // the last seq posted
    BufferTable registered_;
    // The last operations acknowledged by the quorum: a laggard that fails
    // is reported with those it had not confirmed. As many as a replica's
    // send queue holds work requests, so no laggard is behind on more.
    AckHistory acknowledged_{Replica::kSqSize};

    std::mutex maintenance_mu_;
    std::condition_variable maintenance_cv_;
    bool maintenance_stop_ = false;
    std::thread maintainer_;

    // The staged reads whose bytes are not copied out yet: their extents,
    // and every later one, stay taken (TakeStaging).
    std::set<uint64_t> reads_copying_;

    // Group commit: the persists being deferred together, and the
    // sequence numbers of persists posted, oldest first, until every
    // replica is done with them (only with OpenOptions::group_commit).
    std::shared_ptr<Group> forming_;
    std::deque<uint64_t> persists_posted_;
    // Asynchronous operations outstanding, and the progress thread.
    InFlight in_flight_;
};

}  // namespace rpma::client

#endif  // CLIENT_SRC_REGION_IMPL_H
