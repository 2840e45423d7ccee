// One rpma connection: a TCP socket, the queue pair bound to it, and the
// rdma_cm-like handshake and teardown around them. How it works, and which
// role object owns which concern: CONNECTION.md; the files: tcp_connection.cc.
#ifndef RPMA_CORE_SRC_PROVIDER_TCP_TCP_CONNECTION_H
#define RPMA_CORE_SRC_PROVIDER_TCP_TCP_CONNECTION_H

#include <infiniband/verbs.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "rpma_core/src/provider/provider.h"
#include "rpma_core/src/provider/tcp/tcp_acks.h"
#include "rpma_core/src/provider/tcp/tcp_cm_events.h"
#include "rpma_core/src/provider/tcp/tcp_connection_deps.h"
#include "rpma_core/src/provider/tcp/tcp_connection_state.h"
#include "rpma_core/src/provider/tcp/tcp_connection_timer.h"
#include "rpma_core/src/provider/tcp/tcp_handshake.h"
#include "rpma_core/src/provider/tcp/tcp_inbound_reader.h"
#include "rpma_core/src/provider/tcp/tcp_initiator.h"
#include "rpma_core/src/provider/tcp/tcp_inline_progress.h"
#include "rpma_core/src/provider/tcp/tcp_liveness.h"
#include "rpma_core/src/provider/tcp/tcp_lock.h"
#include "rpma_core/src/provider/tcp/tcp_memory_table.h"
#include "rpma_core/src/provider/tcp/tcp_outbound_queue.h"
#include "rpma_core/src/provider/tcp/tcp_progress_engine.h"
#include "rpma_core/src/provider/tcp/tcp_receive_queue.h"
#include "rpma_core/src/provider/tcp/tcp_send_queue.h"
#include "rpma_core/src/provider/tcp/tcp_signaling_queue.h"
#include "rpma_core/src/provider/tcp/tcp_socket.h"
#include "rpma_core/src/provider/tcp/tcp_target.h"
#include "rpma_core/src/provider/tcp/tcp_unique_fd.h"

namespace rpma::provider::tcp {

class CompletionQueue;
class RequestQueue;

class Connection final : public EventHandler,
                         public DeadlineHandler,
                         public ReceiveWaiter,
                         public RegionUser,
                         public std::enable_shared_from_this<Connection> {
  public:
    // Not yet connected; Connect tries `addresses` in order. Null when its
    // event fd cannot be created (the process is out of file descriptors).
    static std::shared_ptr<Connection> CreateActive(const ConnectionDeps &deps,
                                                    std::vector<SocketAddress> addresses);
    // An accepted socket whose CONNECT_REQUEST, once read, goes to `requests`.
    static int StartPassive(const ConnectionDeps &deps, UniqueFd socket,
                            std::weak_ptr<RequestQueue> requests);

    Connection(const ConnectionDeps &deps, bool active);

    // rdma_cm side.
    int BindQp(const QueuePairBinding &binding);
    // Only the QP that is bound (`handle`) can unbind itself.
    void UnbindQp(const provider::QueuePair *handle);
    int Connect(const void *private_data, uint8_t length, int timeout_ms);
    int Accept(const void *private_data, uint8_t length);
    int Reject();
    int Disconnect();
    // The application dropped its CmId: finish a goodbye in progress, or cut
    // the connection (the peer then sees it vanish).
    void Abandon();
    const std::vector<uint8_t> &RequestPrivateData() const {
        return handshake_.peer_private_data();
    }
    // Where the socket leads, as it was when attached.
    int PeerAddress(sockaddr_storage *address) const;
    int EventFd() const { return events_.Fd(); }
    int NextEvent(CmEvent *event) { return events_.Pop(event); }

    // Queue pair side; SendHeld sends what posts with `more` left queued.
    int PostSend(const ibv_send_wr &wr);
    int PostRecv(const ibv_recv_wr &wr);
    int PostFlush(uint64_t remote_addr, uint32_t rkey, size_t length, FlushType type, bool signaled,
                  uint64_t wr_id);
    int PostAtomicWrite(uint64_t remote_addr, uint32_t rkey, const char value[8], bool signaled,
                        uint64_t wr_id);
    void SendHeld();

    void OnEvents(int fd, uint32_t events) override;
    void Quiesce() override;
    void OnDeadline() override;
    void ResumeReceiving() override;
    std::weak_ptr<ReceiveWaiter> WeakWaiter() override { return weak_from_this(); }

    // Inline progress, for tcp_completion_channel.h (InlineProgress owns the waiters, the
    // lease and the direct read); *muted is the waiter's own. Before each poll: the socket
    // while it can be read (muted, and handed to `watcher` unless it watches *token), else -1.
    int PrepareInlineWait(bool *muted, uint64_t *token, InlineWatcher *watcher);
    // After `watcher` rebuilt its set: the socket again, if still muted.
    void RewatchInline(bool muted, InlineWatcher *watcher);
    // Lifts this waiter's mute; the last leaves the inline linger.
    void EndInlineWait(bool *muted);
    // The inbound processing in the waiter (`try_only`: unless locked); true if read.
    bool DriveInbound(bool try_only);
    // Alone on this connection: one blocking recv without the lock (none
    // when the channel's `events` hold one), then DriveInbound's processing,
    // until *caught is set. kRead: wait on; otherwise wait with epoll.
    enum class DirectRead { kRead, kTimedOut, kUnavailable };
    DirectRead WaitDirect(bool *muted, CompletionQueue *const *caught,
                          const SignalingQueue<CompletionQueue *> &events);

  private:
    using State = ConnectionState;
    using TimerPurpose = ConnectionTimer::Purpose;

    // The message being read from the socket (tcp_inbound_message.h).
    InboundMessage &in() { return reader_.message(); }

    // The only way state_ changes (tcp_connection_state.h).
    void MoveTo(State next);

    // Socket and timer plumbing.
    int AttachSocket(UniqueFd socket);
    void DetachSocket();
    void OnTimer(TimerPurpose purpose);
    bool ReadingEnabled() const;
    uint32_t WantedEvents() const;
    void UpdateInterest();
    void RingDoorbell();
    void EndInlineWaitLocked(bool *muted);
    // Liveness: the looks at the peer begin unless they run (or are off).
    void WatchPeer();
    void LookAtPeer(ProgressEngine::Clock::time_point now);
    void FlushOutbound();
    // After any progress: pending ACK, flushing, half-close, interest.
    void AfterProgress();

    // Handshake (tcp_connection_handshake.cc).
    bool TryNextAddress();
    void FinishTcpConnect();
    void OnHandshakeHeader();
    void OnHandshakePayload();

    // Inbound (tcp_connection_{inbound,target,initiator}.cc).
    void ReadInbound(bool drained = false);
    void BeginPayload(size_t length);
    void OnHeader();
    void OnPayloadComplete();
    // What the Target (tcp_target.h) or the Initiator said, done.
    void Act(Target::Verdict verdict);
    void Act(Initiator::Verdict verdict);
    void OnPersisted(int error);

    // Posting (what it sends and when: Initiator).
    int PostRequest(PendingWr &&, OutboundMessage &&, uint64_t length = 0, bool more = false);
    void OnCompletionLost();

    // Ending (each says why at its definition).
    // The queue pair enters the error state and the connection breaks.
    void Fail(ibv_wc_status first_status, bool send_nothing);
    void ProtocolError(const char *why);
    void NotAnRpmaPeer(const char *why);
    void OnPeerGone(int error);
    void FinishDisconnect();
    void BeginClosing();
    void CloseNow();

    const ConnectionDeps deps_;
    const bool active_;

    Lock mu_;
    State state_;
    UniqueFd socket_;
    uint64_t socket_token_ = 0;
    uint32_t interest_ = 0;
    // Application threads waiting inline: the lease, the direct read.
    InlineProgress inline_;
    bool write_shut_down_ = false;
    ConnectionTimer timer_;

    std::string peer_;
    sockaddr_storage peer_address_{};  // AF_UNSPEC until a socket is attached
    PeerLiveness liveness_;
    Handshake handshake_;

    CmEvents events_;

    bool has_qp_ = false;
    QueuePairBinding qp_;
    // The send queue and posting; borrows acks_, out_ and the lease.
    Initiator initiator_{&out_, &acks_, &inline_.lease()};

    Acknowledgements acks_;
    InboundReader reader_;
    // The peer's requests, applied; borrows the message reader_ reads.
    Target target_;
    // Local buffers resolved for posts (SEND) and receives.
    RegionCache local_regions_;
    OutboundQueue out_;
};

}  // namespace rpma::provider::tcp

#endif  // RPMA_CORE_SRC_PROVIDER_TCP_TCP_CONNECTION_H
