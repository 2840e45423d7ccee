// rpma::client::Region: one named region replicated on every rpmad of a
// ReplicaSet. What applications call:
//
//   ReplicaSet set{{"a:7000", "b:7000", "c:7000"}, {}};
//   OpenOptions options;
//   options.create_size = 64 << 20;
//   options.quorum = 2;
//   auto region = Region::Open(set, "journal", options);
//   if (!region.ok()) { ... region.status().ToString() ... }
//   Status s = (*region)->WritePersist(0, bytes);  // durable on every replica
//                                                  // in sync, at least 2
//
// An acknowledged operation (write, persist, commit and their *Async
// forms) was confirmed by every replica in sync that has not failed, and
// they are at least OpenOptions::quorum (daemons without replica-set
// records: by the quorum, laggards not waited for): a replica that does not confirm
// within operation_timeout is marked failed and recorded stale before the
// operation returns, so no later opener takes it as in sync. Errors are
// values (Status) naming the replica; Readd (Repair) brings one back. A
// buffer may be reused once its call returned; RegisterBuffer spares large,
// long-lived buffers the copy into the staging ring.
//
// Threads: a Region is thread-safe, and several threads may write at once.
// Write, Persist, WritePersist and Commit hold the Region's mutex to post
// their work requests to every replica, not to wait: each then waits for
// its own operation's confirmations only, while other threads post (one
// waiting thread collects every replica's completions for all of them).
// Reads post under the mutex and wait without it too; Readd/Repair,
// RegisterBuffer and UnregisterBuffer hold it while they work. Ordering:
// every replica executes work
// requests in the order they were posted under the mutex (one connection
// per replica, executed in order), so writes to overlapping ranges take
// effect in the order of their calls' posts on every replica (for calls
// that overlap in time, whichever posted first; a large write is posted
// in pieces, each in order), and a Persist (or WritePersist, Commit) makes
// durable, within its range, every write posted before it on the Region
// from any thread. Acknowledgements of concurrent calls may return in any
// order. *Async posts at once on the calling thread, as the synchronous
// calls do, and one progress thread per Region completes the operations,
// in submission order; up to OpenOptions::max_in_flight are outstanding.
//
// How and why (fan-out, waiting, failure, replica-set records, buffers,
// threads): client/REGION.md and client/REPLICA_SETS.md; measurements:
// client/BENCH.md.
#ifndef CLIENT_INCLUDE_RPMA_CLIENT_REGION_H
#define CLIENT_INCLUDE_RPMA_CLIENT_REGION_H

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "rpma/client/cluster.h"
#include "rpma/client/replica_set.h"
#include "rpma/client/status.h"

namespace rpma::client {

struct OpenOptions {
    // Bytes; when > 0 the region is created on replicas where it is
    // missing (an existing one must have this size). 0: it must exist.
    uint64_t create_size = 0;
    // The fewest live (in-sync) replicas an operation may be acknowledged
    // by; 0 means all of them. With replica-set records every live replica
    // is waited for (one that does not confirm within operation_timeout is
    // marked failed and recorded stale first); without records (older
    // daemons) the quorum's confirmations are enough.
    size_t quorum = 0;
    // How long a replica may owe an answer without giving any (and take to
    // connect) before it is marked failed: its own silence, not how long an
    // operation waited (perhaps behind another replica). It bounds how long
    // a hung daemon or a cut network goes unnoticed: within
    // operation_timeout of the first operation that must wait for the
    // replica (with records or a quorum of all, the next one; without
    // records and with a smaller quorum, at the latest the staged write
    // that needs the replica's oldest unconfirmed extent of the 8 MiB ring
    // back, or the operation that finds its queue of 128 work requests
    // full). Short values suit a LAN (1-2 s); the operations waiting
    // meanwhile stall.
    std::chrono::milliseconds operation_timeout{10000};
    // Called when a replica is marked failed, with the replica (index,
    // address), the error and the operation in the message. Runs on the
    // thread that detected it (any thread calling the Region), under the
    // Region's mutex: do not call the Region from it.
    std::function<void(const Status &)> on_failure;
    // A reader: records nothing, opens its sessions under generation 0 (a
    // writer's record change never fences them), reads only from replicas
    // in sync, and refuses every write and persist (kFailedPrecondition).
    // Still needs a majority reached to trust the record (or force).
    bool read_only = false;
    // Opens although fewer than a majority of the replicas answered, or
    // their records have different set ids: the newest record among those
    // reached is taken as it is. The risk: the newest record may be on a
    // replica not reached, so a stale replica may be read, and written, as
    // in sync, and another writer may be writing the set meanwhile. A
    // writer's forced open records what it sees (the members not reached
    // STALE) and marks members left REPAIRING stale again, and its record
    // changes (at open, on failures, in repairs) count once the members in
    // sync accepted them, a majority or not. For a person who knows that no
    // other writer exists.
    bool force = false;
    // A writer's open that finds a member REPAIRING (a repair that died, or
    // one still running elsewhere) opens anyway, the member kStale, so that
    // Readd/Repair takes the repair over (`rpmactl region repair`): its
    // first record fences the other repairer's sessions.
    bool repair_takeover = false;
    // How many asynchronous operations (*Async) may be outstanding on the
    // Region at once; a submission past it waits until the oldest completes
    // (on the submitting thread), or is refused (wait_for_room). 0 means the
    // default, 64.
    size_t max_in_flight = 0;
    // false: an asynchronous submission while max_in_flight operations are
    // outstanding does not wait for room: nothing is submitted, and it
    // completes at once with kResourceExhausted (a future ready; a
    // Completion run on the submitting thread before the call returns, the
    // one case where a Completion does not run on the progress thread). For
    // an event loop that must never block: submit again once a completion
    // came. A Completion's own submissions (on the progress thread) are
    // never refused, as they never wait.
    bool wait_for_room = true;
    // Group commit: an asynchronous WritePersist or Persist submitted while
    // several persists are still in flight on the Region does not post a
    // persist of its own; the progress thread posts one persist covering it
    // and the others deferred with it, as soon as one in flight completes
    // (when their ranges are neighbours: a log's appends, for example).
    // Each is still acknowledged only once its own range is durable on the
    // replicas counted for it. Fewer flushes per operation at depth, for
    // up to a fraction of a round trip more latency each; false posts
    // every persist at once. Synchronous calls never wait for a group.
    bool group_commit = true;
};

// An asynchronous operation's completion, called once with its result.
using Completion = std::function<void(Status)>;

enum class ReplicaState {
    kLive,       // in sync: counts toward the quorum, serves reads
    kFailed,     // marked failed by this Region (recorded STALE); Readd repairs it
    kResyncing,  // being repaired by this Region's Readd: receives writes,
                 // does not count yet (REPAIRING in the record)
    kStale,      // not in sync when the Region opened (the record says STALE or
                 // REPAIRING, or another daemon answers at its address, or it
                 // was not reached): no session, never read or counted; Readd
                 // repairs it
    kRepairing = kResyncing,
};

struct ReplicaInfo {
    std::string address;
    ReplicaState state = ReplicaState::kLive;
    bool gpspm = false;  // how it persists (false: APM)
    Status error;        // why it failed or is stale (ok while in sync)
    // The identity of the daemon that answered at `address` (32 hex
    // digits; "" when not reached or the daemon predates identities).
    std::string daemon_id;
    // The record generation that first excluded it (kStale, kFailed once
    // recorded, kRepairing); 0 while in sync.
    uint64_t stale_since = 0;
};

// Several writes made durable by one persist: Region::Commit posts every
// write, then one persist over the range they span, on each replica.
class Batch {
  public:
    // `bytes` must stay valid until Commit returns (or its future is ready).
    void Write(uint64_t offset, std::span<const std::byte> bytes) {
        writes_.push_back({offset, bytes});
    }
    bool empty() const { return writes_.empty(); }
    size_t size() const { return writes_.size(); }
    void Clear() { writes_.clear(); }

  private:
    friend class Region;
    struct Entry {
        uint64_t offset;
        std::span<const std::byte> bytes;
    };
    std::vector<Entry> writes_;
};

// Readd's progress: bytes compared so far out of the region's size.
using ProgressCallback = std::function<void(uint64_t copied, uint64_t total)>;

// A repair's progress: of the region's `total` bytes, `compared` were
// checksummed on both sides so far and `copied` of them differed and were
// copied.
struct RepairProgress {
    uint64_t compared = 0;
    uint64_t copied = 0;
    uint64_t total = 0;
};

struct RepairOptions {
    // Called after each extent window is compared and its differing
    // extents copied (on the calling thread, without the Region's mutex).
    std::function<void(const RepairProgress &)> progress;
    // Where the replica's daemon listens now, when not where it was.
    std::string new_address;
    // Where its data plane is reached now ("host:port": a node's advertised
    // address), when not where its daemon says it listens. Empty with a
    // new_address: where that daemon says.
    std::string new_data_address;
};

class Region {
  public:
    // Connects to every replica: creates the region where missing (when
    // options.create_size > 0), reads the replica-set records (see Replica
    // sets above) and records the writer's view when it differs, opens a
    // session on each in-sync replica (under the record's generation) and
    // connects its data plane with the session's token. A replica that
    // cannot be reached or opened is marked failed (and reported) as long as
    // the others meet the quorum; otherwise Open fails with every replica's
    // error. Errors: kInvalidArgument (no addresses, quorum larger than the
    // set, a bad TLS file), kNotFound (missing region and create_size 0),
    // kAlreadyExists (exists with another size), kQuorumLost (fewer in-sync
    // replicas than the quorum: which are stale since when, and "repair
    // with `rpmactl region repair NAME`"), kUnavailable (fewer than a
    // majority reached, records of different set ids, a member being
    // repaired: see force and repair_takeover; "unreachable: <address>:
    // ..."), kFailedPrecondition (the record changed under the open: open
    // again: an open that another writer's change overtook starts over by
    // itself a few times first), and the daemons' own errors.
    static Result<std::unique_ptr<Region>> Open(const ReplicaSet &replicas, const std::string &name,
                                                const OpenOptions &options = {});
    // Cluster mode: region `name` of the cluster whose etcd `cluster` names,
    // at the nodes its record in etcd places it on. etcd's record decides
    // which replicas are in sync (no majority of replicas is needed), and
    // every change of it is committed there before the daemons take it.
    // A writer takes the region under an etcd lease (Cluster::writer_lease)
    // with a new writer epoch, and records a new generation on the daemons
    // before its first write, which closes every session of an older
    // writer; a second writer is refused (kFailedPrecondition naming the
    // first) until the first closes or its lease expires; readers
    // (read_only) are not limited. An operation that would change the
    // record while etcd is out of reach fails (kUnavailable); writes to the
    // replicas in sync go on. create_size and force are refused
    // (kInvalidArgument): rpmactl creates and places a cluster's regions.
    // A writer also keeps an activity log of the extents it writes into
    // (a write into one not written recently records it in etcd first:
    // kUnavailable while etcd is out of reach), reconciles the extents a
    // writer that died left in it before it returns, and runs the
    // controller's repairs on a thread of its own (Cluster::maintain;
    // README "Cluster mode"). A reader confirms each read against etcd's
    // record (one round trip: a replica the writer recorded stale may
    // still answer) and refuses one no longer in sync (kFailedPrecondition).
    static Result<std::unique_ptr<Region>> Open(const Cluster &cluster, const std::string &name,
                                                const OpenOptions &options = {});
    // Waits for what is in flight (bounded by operation_timeout) and
    // disconnects every replica, ending their sessions.
    ~Region();
    Region(const Region &) = delete;
    Region &operator=(const Region &) = delete;

    const std::string &name() const { return name_; }
    uint64_t size() const { return size_; }
    // The replica-set generation this Region holds (its sessions' and its
    // record changes' base): it grows when the Region records a failed
    // replica stale or repairs one. 0 for a read-only Region and for
    // daemons without records.
    uint64_t generation() const;
    // Each replica's state, in ReplicaSet order.
    std::vector<ReplicaInfo> replicas() const;

    // Every operation checks [offset, offset + length) against size()
    // (kInvalidArgument) and fails with kQuorumLost when fewer than the
    // quorum are live, before and after it posted, or when a replica it
    // found failed could not be recorded stale; with kFailedPrecondition
    // once the Region is fenced (another writer changed the record) or,
    // for writes and persists, when it is read_only.
    //
    // The bytes land on the replicas (not yet durable).
    Status Write(uint64_t offset, std::span<const std::byte> bytes);
    // Makes [offset, offset + length) durable on the replicas.
    Status Persist(uint64_t offset, uint64_t length);
    // Write, then Persist of the same range, waited for once.
    Status WritePersist(uint64_t offset, std::span<const std::byte> bytes);
    // The batch's writes, then one persist of the range they span.
    Status Commit(const Batch &batch);
    // Reads from one replica (its index in the ReplicaSet), which must be
    // in sync (kLive): a stale or repairing one fails with
    // kFailedPrecondition ("replica 2 is stale (missed writes since
    // generation 4): read another or repair it").
    Status Read(uint64_t offset, std::span<std::byte> out, size_t replica);

    std::future<Status> WriteAsync(uint64_t offset, std::span<const std::byte> bytes);
    std::future<Status> PersistAsync(uint64_t offset, uint64_t length);
    std::future<Status> WritePersistAsync(uint64_t offset, std::span<const std::byte> bytes);
    std::future<Status> CommitAsync(const Batch &batch);
    std::future<Status> ReadAsync(uint64_t offset, std::span<std::byte> out, size_t replica);
    // The same, completed through `done` instead of a future: for event
    // loops. `done` runs on the Region's progress thread, without the
    // Region's mutex held, once for each submission, in submission order;
    // it may submit more operations (and call the synchronous ones) but
    // holds up the completions behind it while it runs. A submission the
    // Region refuses at once (a range beyond it, a read-only Region's
    // write) completes through `done` as well. Every `done` has run when
    // ~Region returns. With OpenOptions::wait_for_room false, a submission
    // refused for room runs `done` on the calling thread, before the call
    // returns, with kResourceExhausted.
    void WriteAsync(uint64_t offset, std::span<const std::byte> bytes, Completion done);
    void PersistAsync(uint64_t offset, uint64_t length, Completion done);
    void WritePersistAsync(uint64_t offset, std::span<const std::byte> bytes, Completion done);
    void CommitAsync(const Batch &batch, Completion done);
    void ReadAsync(uint64_t offset, std::span<std::byte> out, size_t replica, Completion done);

    // Registers `bytes` with every replica so that operations on spans
    // inside it go without a copy: reads always (only the replica read
    // from touches it, and the read returns once it answered), writes when
    // the quorum is as large as the replicas not failed. Behind a smaller
    // quorum, writes from it are staged (see Buffers above): without
    // records a laggard would send from it after the call returned. Keep
    // it alive until UnregisterBuffer; its bytes may change
    // as soon as a call that used them returned (an async one: its future
    // is ready).
    Status RegisterBuffer(std::span<std::byte> bytes);
    // Waits for every operation that may still use it (laggards included),
    // then deregisters it. kNotFound when it was not registered.
    Status UnregisterBuffer(std::span<std::byte> bytes);

    // Repairs replica `replica` (kFailed, kStale, or kRepairing left by a
    // repair that died) and brings it back (REPLICA_SETS.md rule 6):
    //  1. waits (up to operation_timeout) until the replica's daemon has
    //     ended this Region's previous session on it, if any: the writes
    //     that connection had queued are applied by then, and none lands
    //     over the copy (kDeadlineExceeded: Readd again once the daemon
    //     runs and has closed it);
    //  2. records it REPAIRING (generation + 1: every other writer's
    //     sessions are fenced), opens a session on it under that
    //     generation (creating the region if the daemon lost it); from
    //     then on this Region's writes go to it too;
    //  3. compares the region's 1 MiB extents (checksums, ChecksumRegion) on
    //     a live replica and on it, window by window, and copies only those
    //     that differ (read, write, persist; a write of this Region to an
    //     extent lands either before its copy, and is copied, or after it,
    //     behind the copy), reporting progress (the callback, and to the
    //     replica's daemon about once a second);
    //  4. records it IN_SYNC (generation + 1), and only then counts it.
    // A repair that fails leaves the member REPAIRING (kFailed here) and
    // may be run again: it copies only what still differs. Errors:
    // kInvalidArgument (index out of range, replica in sync), the
    // daemon's errors, kDeadlineExceeded, kDataPlane (the copy failed),
    // kQuorumLost (no live replica to copy from, or a record not accepted
    // by enough), kFailedPrecondition (fenced). The control plane gets a
    // new channel, so a daemon restarted on its old address is reached at
    // once.
    Status Repair(size_t replica, const RepairOptions &options = {});
    // Repair with `progress` told (bytes compared, region size) and
    // `new_address`, when not empty, where the replica's daemon listens now
    // (restarted on another port or host); replicas() shows it from then on.
    Status Readd(size_t replica, const ProgressCallback &progress = nullptr,
                 const std::string &new_address = "");

  private:
    class Impl;
    Region(std::unique_ptr<Impl> impl, std::string name, uint64_t size);
    // Open's attempts: `open` on a fresh Impl, again while another writer's
    // change overtakes it (a few times). Not named Open*: it stays out of
    // the library's exported symbols (librpma_client.map).
    static Result<std::unique_ptr<Region>> TryOpening(const std::string &name,
                                                      const OpenOptions &options,
                                                      const std::function<Status(Impl &)> &open);

    std::unique_ptr<Impl> impl_;
    std::string name_;
    uint64_t size_ = 0;
};

}  // namespace rpma::client

#endif  // CLIENT_INCLUDE_RPMA_CLIENT_REGION_H
