// One replica of a region: its rpmad session and the data-plane connection
// made with the session's token. Posts never block; Progress() collects what
// completed, Wait() waits for more. Private to the library; Region owns
// every Replica and calls it under its mutex, except AwaitEvent: the one
// thread that waits on a replica's completion queue does so without the
// Region's mutex, so that other threads post meanwhile (the provider takes
// posts and a wait on one connection at once). The completion side (the
// queue's wait, Progress, Close) is serialized by a mutex of the replica's
// own, held by the waiting thread for at most its wait's timeout.
//
// Waiting is rpma_core's own blocking wait (rpma_ext_cq_wait_timeout): with
// the tcp provider the waiting thread reads the connection's socket itself,
// so a completion reaches it without a hand-off from the progress thread.
#ifndef CLIENT_SRC_REPLICA_H
#define CLIENT_SRC_REPLICA_H

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "coarse_clock.h"
#include "proto/rpmad/v1/data_plane_wire.h"
#include "rpma/client/control_plane.h"
#include "rpma/client/status.h"
#include "rpma/rpma.hpp"

namespace rpma::client {

class Replica {
  public:
    // Work requests on the send queue at most (the connection's sq_size).
    static constexpr uint32_t kSqSize = 128;

    // Local memory the replica's operations use: buffers[0] is the staging
    // ring, the others are the application's registered buffers (by id).
    // Each is registered with this replica's peer (its protection domain).
    // `data_address` ("host:port"), when not empty, is where the data plane
    // is reached instead of the address the daemon reports.
    // The region on the daemon behind `control`, created when missing and
    // create_size > 0 (an existing one must then have that size). Looking
    // it up takes at most `lookup_timeout` when not 0 (a create, the
    // control plane's own deadline).
    static Result<::rpmad::v1::Region> EnsureRegion(
        ControlPlane &control, const std::string &region, uint64_t create_size,
        std::chrono::milliseconds lookup_timeout = std::chrono::milliseconds(0));
    // A session on `region` opened under replica-set generation
    // `generation` (0: never fenced), and its data-plane connection.
    static Result<std::unique_ptr<Replica>> Connect(ControlPlane &control,
                                                    const std::string &region, uint64_t generation,
                                                    std::chrono::milliseconds timeout,
                                                    const std::string &data_address = "");
    ~Replica();

    uint64_t size() const { return size_; }
    bool gpspm() const { return gpspm_; }
    const std::string &session_id() const { return session_id_; }
    // The daemon's identity, as OpenSession said ("" from older daemons).
    const std::string &daemon_id() const { return daemon_id_; }

    // Registers `bytes` as local buffer `id` (0: the staging ring).
    Status Register(size_t id, std::span<std::byte> bytes);
    void Unregister(size_t id);

    // A replica's first error (a failed post or completion, a refused flush,
    // a lost connection) is its end. The calls below that can meet one
    // return false then, and every time after; failure() says why. (Not a
    // Status per call: the posts, polls and waits are every operation's
    // path, and success would build and destroy one each time.)
    bool failed() const { return !failure_.ok(); }
    const Status &failure() const { return failure_; }

    // Ends the replica at once for `why` (kept as failure() unless one came
    // first): disconnects and deletes the data-plane connection and its
    // queue pair, and deregisters every buffer, so that nothing the daemon
    // still answers — a late READ's bytes, any completion — reaches local
    // memory (the staging ring, the application's buffers) afterwards, and
    // no write still queued reads it to send (it would send what the memory
    // holds by then). The region marks a replica failed with this: local
    // memory a failed replica was given is reused at once.
    void Close(Status why);

    // Non-blocking posts; every work request carries the region-wide
    // sequence number `seq`, and completes in posting order.
    //
    // A write with `confirmed_by_next` is followed at once by a signaled
    // work request (a persist) whose completion confirms it too (the queue
    // pair executes in order): it is posted unsignaled, which spares the
    // daemon an acknowledgement and this side a completion, and the two may
    // share one send (RPMA_EXT_F_MORE). Its failure still completes (as an
    // error).
    bool PostWrite(uint64_t remote_offset, size_t buffer, size_t local_offset, size_t length,
                   uint64_t seq, bool confirmed_by_next = false);
    // While held, writes (and GPSPM flush requests) wait on the connection
    // for the next post or wait, or RingDoorbell (RPMA_EXT_F_MORE), and many
    // share one send: only where a wait, or RingDoorbell, is certain to come
    // before anyone waits for them.
    void HoldPosts(bool hold) { hold_posts_ = hold; }
    // Sends what waits since the last ring (rpma_ext_conn_ring_doorbell).
    void RingDoorbell();
    bool PostRead(uint64_t remote_offset, size_t buffer, size_t local_offset, size_t length,
                  uint64_t seq);
    // APM: a persistent rpma_flush. GPSPM: a flush request message; durable
    // when the daemon's response comes back.
    bool PostPersist(uint64_t offset, uint64_t length, uint64_t seq);

    // Room for `requests` more work requests (and, for a persist, one more
    // flush request in flight).
    bool HasRoom(bool persist, size_t requests = 1) const {
        if (posted_ - finished_ + requests >= kSqSize)
            return false;
        return !persist || !gpspm_ ||
               flushes_posted_ - flushes_answered_ < ::rpmad::wire::kMaxFlushesInFlight;
    }

    // Collects every completion ready now (no system call when there are
    // some).
    bool Progress();
    // Progress(), unless another thread waits on the completion queue now
    // (AwaitEvent): that thread collects them when its wait ends.
    bool ProgressUnlessWaited();
    // The wait of Wait() alone, without the Region's mutex: touches no
    // bookkeeping, returns rpma_ext_cq_wait_timeout's code for TakeEvent,
    // which the caller gives it under the Region's mutex.
    int AwaitEvent(std::chrono::milliseconds timeout);
    // What AwaitEvent returned: collects what completed when an event came
    // (*fired), records an error as the failure.
    bool TakeEvent(int waited, bool *fired);
    // What is outstanding here, for a message about a replica that went
    // silent: "N work requests outstanding, F flush requests unanswered,
    // completed up to seq C of P posted, silent for S ms".
    std::string Backlog() const;
    // Nothing posted here is still to complete or to be confirmed durable.
    bool Idle() const { return completed_ >= last_posted_ && flushes_answered_ == flushes_posted_; }
    // Since when (CoarseNow) this replica has owed an answer without giving
    // any: its last completion, or the post that found it idle. What
    // operation_timeout is measured against, per replica: an operation
    // that waited behind another replica must not blame this one for it.
    std::chrono::nanoseconds silent_since() const { return silent_since_; }
    // Waits up to `timeout` for the completion queue's next event, then
    // collects what completed. *fired: an event came (false: the time was
    // up first). A connection that ends fails its work requests, so a wait
    // for them ends too.
    bool Wait(std::chrono::milliseconds timeout, bool *fired);
    // False when the connection ended (CLOSED or LOST): a system call, for
    // the slow paths (fds readable, time up).
    bool CheckConnection();
    // The fds that become readable when Wait or CheckConnection has
    // something to do, for waiting on several replicas at once.
    std::vector<int> Fds() const;

    // The highest seq whose work request completed (writes landed, reads
    // arrived) and whose persist was acknowledged durable.
    uint64_t completed() const { return completed_; }
    // Every work request posted here with a seq up to `seq` completed.
    // Seqs are region-wide and not every operation reaches every replica
    // (reads, Readd's copy), so a replica given nothing since is done too.
    bool Completed(uint64_t seq) const { return completed_ >= std::min(seq, last_posted_); }
    uint64_t persisted() const { return persisted_; }

  private:
    Replica() = default;
    // Records `status` as the failure, unless one came first; returns false.
    bool Fail(Status status);
    // Deletes the connection, then deregisters all local memory: when it
    // returns, nothing of this replica touches that memory any more.
    void Drop();
    Status PostReceive(size_t slot);
    bool OnCompletion(const ibv_wc &wc);
    // Progress's polling, cq_mu_ held; *took: it found completions.
    bool Collect(bool *took = nullptr);
    // Bookkeeping of a work request just posted; `signaled` ones retire
    // every one posted up to them when they complete.
    void Posted(uint64_t seq, bool signaled);

    std::string address_;
    std::string session_id_;
    std::string daemon_id_;
    uint64_t size_ = 0;
    bool gpspm_ = false;
    std::optional<Peer> peer_;
    std::vector<std::optional<MemoryRegion>> buffers_;
    // GPSPM messages: kMaxFlushesInFlight request slots, then as many
    // response slots.
    std::vector<std::byte> messages_;
    std::optional<MemoryRegion> messages_mr_;
    std::optional<Connection> conn_;
    std::optional<RemoteMemory> region_;
    rpma_cq *cq_ = nullptr;
    int cq_fd_ = -1;
    int event_fd_ = -1;
    uint64_t posted_ = 0;    // work requests on the send queue, ever
    uint64_t finished_ = 0;  // of them, completed (or retired by a later one)
    // For the signaled work requests in flight, oldest first (a ring of
    // kSqSize): the value of posted_ right after each, which finished_
    // becomes when it completes.
    std::vector<uint64_t> retires_;
    uint64_t signaled_posted_ = 0;
    uint64_t signaled_finished_ = 0;
    // Unsignaled work requests since the last signaled one: bounded, so
    // that the send queue never fills with ones nothing would retire.
    uint32_t unsignaled_run_ = 0;
    bool hold_posts_ = false;
    bool holding_ = false;  // posts wait for RingDoorbell (or a wait)
    uint64_t flushes_posted_ = 0;
    uint64_t flushes_answered_ = 0;
    uint64_t completed_ = 0;
    uint64_t last_posted_ = 0;
    uint64_t persisted_ = 0;
    std::chrono::nanoseconds silent_since_{0};
    Status failure_;  // ok while the replica works
    // The completion side: the queue's wait, its polling, Close.
    std::mutex cq_mu_;
};

}  // namespace rpma::client

#endif  // CLIENT_SRC_REPLICA_H
