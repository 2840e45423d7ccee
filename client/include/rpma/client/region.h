// rpma::client::Region: one named region replicated on every rpmad of a
// ReplicaSet. What applications call:
//
//   ReplicaSet set{{"a:7000", "b:7000", "c:7000"}, {}};
//   OpenOptions options;
//   options.create_size = 64 << 20;
//   options.quorum = 2;
//   auto region = Region::Open(set, "journal", options);
//   if (!region.ok()) { ... region.status().ToString() ... }
//   Status s = (*region)->WritePersist(0, bytes);  // durable on >= 2 replicas
//
// Fan-out. An operation posts its work to every replica before it waits for
// any (posts never block), then collects the completions of all replicas'
// queues as they come, so no replica waits for another. It returns once the
// quorum (OpenOptions::quorum live replicas, all by default) confirmed it:
// a Write when the bytes landed, a Persist when each replica acknowledged
// durability (APM: a persistent rpma_flush; GPSPM: the daemon's flush
// response; a set may mix both). Laggards are not waited for; their
// completions are collected by the operations that follow (any operation
// that waits first collects everything ready), and a laggard that errs
// then, or that still has not completed when a later operation needs its
// staging slot or times out (operation_timeout), is marked failed then.
//
// Waiting. The calling thread waits in rpma_core's own blocking wait
// (rpma_ext_cq_wait_timeout, bounded by operation_timeout); on the tcp
// provider that thread reads the replica's connection itself, so a
// completion reaches it without a hand-off between threads. With several
// replicas to hear from, it waits that way on one at a time, up to a
// millisecond each, starting with the one posted to last (when it has
// answered, the others most likely have too); replicas slower than that
// are waited for all together in poll(2). A write that a persist follows
// (in WritePersist and Commit) asks for no completion of its own: the
// persist's confirms it.
//
// Failure. A replica whose work request fails, whose connection ends, or
// that does not complete within operation_timeout is marked failed,
// reported (OpenOptions::on_failure and replicas(): which replica, what
// error, during which operation, and which earlier operations the quorum
// acknowledged without its confirmation: "it had not confirmed 7 earlier
// operations ..., from write+persist of 4096 bytes at 81920 to ...") and
// excluded from every later operation. Its data-plane connection is closed
// at once, so nothing it answers late (a timed-out read's bytes) reaches
// the staging ring or a registered buffer, which live replicas reuse from
// then on; reading from it fails with kFailedPrecondition until Readd.
// An operation never counts a replica that did not confirm it. With fewer
// live replicas than the quorum an operation fails with kQuorumLost. Readd
// brings a failed replica back: a new session, the whole region copied from
// a live replica, and only then does it count again.
//
// Buffers. Unregistered buffers are copied into a registered staging ring
// (8 slots of 1 MiB, registered once per replica at Open); nothing is
// registered on the hot path. A slot is reused only once every replica not
// failed is done with it, laggards included, so a write larger than the
// ring (8 MiB) waits for its ninth piece until the slowest replica took its
// first (at most operation_timeout: then that replica is marked failed).
// Buffers given to RegisterBuffer are written from and read into directly
// (zero copy), registered once per replica and reused until
// UnregisterBuffer, whenever the operation waits for every replica it is
// sent to: when the quorum is as large as the replicas not failed (the
// default quorum, all; or 2 of 3 once one failed). Behind a smaller quorum, writes from them are
// copied into the staging ring like any others: a laggard still sending from the buffer after the
// call returned would store, and confirm, bytes the application wrote there since. Either way a
// buffer may be reused as soon as the call returned. Measured (client/BENCH.md): at 4 KiB the two
// cost the same latency (the copy is ~450 instructions of a ~20 us write + persist); streaming 1
// MiB writes, a registered buffer reaches 0.94x raw TCP and the staging ring 0.70x. So register
// large long-lived buffers; small writes need not be. Behind a quorum smaller than the set,
// registering gains nothing on writes (they pay the copy, and wait when a laggard is a whole ring
// behind); reads still go without a copy.
//
// Threads. A Region is thread-safe: operations are serialized by one mutex
// (so an operation's latency includes waiting for others). The *Async
// variants run on the Region's own worker thread in the order submitted;
// the caller keeps the buffers alive until the future is ready.
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

#include "rpma/client/replica_set.h"
#include "rpma/client/status.h"

namespace rpma::client {

struct OpenOptions {
    // Bytes; when > 0 the region is created on replicas where it is
    // missing (an existing one must have this size). 0: it must exist.
    uint64_t create_size = 0;
    // Live replicas that must confirm an operation; 0 means all of them.
    size_t quorum = 0;
    // How long a replica may take to confirm an operation (and to connect)
    // before it is marked failed. It bounds how long a hung daemon or a cut
    // network goes unnoticed: within operation_timeout of the first
    // operation that must wait for the replica (with a quorum of all, the
    // next one; with a smaller quorum, at the latest the staged write that
    // reuses the replica's oldest unconfirmed slot of the ring, 8 on, or the
    // operation that finds its queue of 128 work requests full). Short
    // values suit a LAN (1-2 s); the operations waiting meanwhile stall.
    std::chrono::milliseconds operation_timeout{10000};
    // Called when a replica is marked failed, with the replica (index,
    // address), the error and the operation in the message. Runs on the
    // thread that detected it, under the Region's mutex: do not call the
    // Region from it.
    std::function<void(const Status &)> on_failure;
};

enum class ReplicaState {
    kLive,       // counts toward the quorum
    kFailed,     // excluded; Readd brings it back
    kResyncing,  // being copied by Readd: receives writes, does not count yet
};

struct ReplicaInfo {
    std::string address;
    ReplicaState state = ReplicaState::kLive;
    bool gpspm = false;  // how it persists (false: APM)
    Status error;        // why it failed (ok while it has not)
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

// Readd's progress: bytes copied so far out of the region's size.
using ProgressCallback = std::function<void(uint64_t copied, uint64_t total)>;

class Region {
  public:
    // Connects to every replica: creates the region where missing (when
    // options.create_size > 0), opens a session and connects its data plane
    // with the session's token. A replica that cannot be reached or opened
    // is marked failed (and reported) as long as the others meet the
    // quorum; otherwise Open fails with every replica's error. Errors:
    // kInvalidArgument (no addresses, quorum larger than the set, a bad
    // TLS file), kNotFound (missing region and create_size 0),
    // kAlreadyExists (exists with another size), kQuorumLost, and the
    // daemons' own errors (kUnavailable: "unreachable: <address>: ...").
    static Result<std::unique_ptr<Region>> Open(const ReplicaSet &replicas, const std::string &name,
                                                const OpenOptions &options = {});
    // Waits for what is in flight (bounded by operation_timeout) and
    // disconnects every replica, ending their sessions.
    ~Region();
    Region(const Region &) = delete;
    Region &operator=(const Region &) = delete;

    const std::string &name() const { return name_; }
    uint64_t size() const { return size_; }
    // Each replica's state, in ReplicaSet order.
    std::vector<ReplicaInfo> replicas() const;

    // Every operation checks [offset, offset + length) against size()
    // (kInvalidArgument) and fails with kQuorumLost when fewer than the
    // quorum are live, before and after it posted.
    //
    // The bytes land on the replicas (not yet durable).
    Status Write(uint64_t offset, std::span<const std::byte> bytes);
    // Makes [offset, offset + length) durable on the replicas.
    Status Persist(uint64_t offset, uint64_t length);
    // Write, then Persist of the same range, waited for once.
    Status WritePersist(uint64_t offset, std::span<const std::byte> bytes);
    // The batch's writes, then one persist of the range they span.
    Status Commit(const Batch &batch);
    // Reads from one replica (its index in the ReplicaSet), which must not
    // be failed.
    Status Read(uint64_t offset, std::span<std::byte> out, size_t replica);

    std::future<Status> WriteAsync(uint64_t offset, std::span<const std::byte> bytes);
    std::future<Status> PersistAsync(uint64_t offset, uint64_t length);
    std::future<Status> WritePersistAsync(uint64_t offset, std::span<const std::byte> bytes);
    std::future<Status> CommitAsync(const Batch &batch);
    std::future<Status> ReadAsync(uint64_t offset, std::span<std::byte> out, size_t replica);

    // Registers `bytes` with every replica so that operations on spans
    // inside it go without a copy: reads always (only the replica read
    // from touches it, and the read returns once it answered), writes when
    // the operation waits for every replica it is sent to. Behind a quorum
    // smaller than the replicas not failed, writes from it are staged (see
    // Buffers above), since a laggard would send from it after the call
    // returned. Keep it alive until UnregisterBuffer; its bytes may change
    // as soon as a call that used them returned (an async one: its future
    // is ready).
    Status RegisterBuffer(std::span<std::byte> bytes);
    // Waits for every operation that may still use it (laggards included),
    // then deregisters it. kNotFound when it was not registered.
    Status UnregisterBuffer(std::span<std::byte> bytes);

    // Brings failed replica `replica` back. First it waits (up to
    // operation_timeout) until the replica's daemon has ended its previous
    // session: the writes that connection had queued (a stopped or slow
    // daemon works through them after it failed) are applied by then, and
    // none lands over the copy; a restarted daemon has no such session.
    // Then a new session (creating the region if the daemon lost it), and
    // the whole region is copied from a live replica in 1 MiB chunks (read,
    // write, persist), `progress` called after each; writes made meanwhile
    // go to it too. Only when the copy is durable does it count toward the
    // quorum again. Errors: kInvalidArgument (index out of range, replica
    // not failed), the daemon's errors, kDeadlineExceeded (the daemon still
    // has the previous session: Readd again once it runs and has closed
    // it), kDataPlane (the copy failed; the replica stays failed),
    // kQuorumLost (no live replica to copy from). `new_address`, when not
    // empty, is where the replica's daemon listens now (restarted on
    // another port or host); replicas() shows it from then on. Either way
    // the control plane gets a new channel, so a daemon restarted on its
    // old address is reached at once.
    Status Readd(size_t replica, const ProgressCallback &progress = nullptr,
                 const std::string &new_address = "");

  private:
    class Impl;
    Region(std::unique_ptr<Impl> impl, std::string name, uint64_t size);

    std::unique_ptr<Impl> impl_;
    std::string name_;
    uint64_t size_ = 0;
};

}  // namespace rpma::client

#endif  // CLIENT_INCLUDE_RPMA_CLIENT_REGION_H
