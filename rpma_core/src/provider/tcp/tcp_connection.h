// One rpma connection: a TCP socket, the queue pair bound to it, and the
// rdma_cm-like handshake and teardown around them.
//
// Both directions run at once: as initiator the connection sends requests
// and completes WRs from the peer's answers (SendQueue); as target it
// executes the peer's requests on registered memory, in order, on the
// progress thread, without the application's help.
//
// Locking: one mutex per connection guards all of its state. It is taken by
// the progress thread (socket and timer events, resumes) and by application
// threads (posting, Connect/Accept/Disconnect). Socket I/O under the lock is
// always non-blocking. Lock order: connection -> CQ -> channel, connection ->
// receive queue, connection -> progress engine; never the reverse.
#ifndef RPMA_CORE_SRC_PROVIDER_TCP_TCP_CONNECTION_H
#define RPMA_CORE_SRC_PROVIDER_TCP_TCP_CONNECTION_H

#include <infiniband/verbs.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "rpma_core/src/provider/provider.h"
#include "rpma_core/src/provider/tcp/tcp_memory_table.h"
#include "rpma_core/src/provider/tcp/tcp_outbound_queue.h"
#include "rpma_core/src/provider/tcp/tcp_progress_engine.h"
#include "rpma_core/src/provider/tcp/tcp_receive_queue.h"
#include "rpma_core/src/provider/tcp/tcp_send_queue.h"
#include "rpma_core/src/provider/tcp/tcp_signaling_queue.h"
#include "rpma_core/src/provider/tcp/tcp_socket.h"
#include "rpma_core/src/provider/tcp/tcp_unique_fd.h"
#include "rpma_core/src/provider/tcp/tcp_wire.h"

namespace rpma::provider::tcp {

class CompletionQueue;
class RequestQueue;

// What every connection shares with the device.
struct ConnectionDeps {
    ProgressEngine *engine;
    MemoryTable *memory;
    // How long a target holds a SEND that found no posted receive before it
    // fails the sender with IBV_WC_RNR_RETRY_EXC_ERR.
    const std::atomic<int> *rnr_timeout_ms;
    // How long an outgoing request that reached its peer waits for ACCEPT or
    // REJECT before kUnreachable.
    const std::atomic<int> *reply_timeout_ms;
};

struct QueuePairBinding {
    provider::QueuePair *handle = nullptr;
    uint32_t qp_num = 0;
    uint64_t pd_id = 0;
    CompletionQueue *send_cq = nullptr;
    CompletionQueue *recv_cq = nullptr;
    ReceiveQueue *srq = nullptr;  // the SRQ's queue, or null for a private RQ
    uint32_t sq_size = 0;
    uint32_t rq_size = 0;
};

class Connection final : public EventHandler,
                         public ReceiveWaiter,
                         public std::enable_shared_from_this<Connection> {
  public:
    // Not yet connected; Connect tries `addresses` in order.
    static std::shared_ptr<Connection> CreateActive(const ConnectionDeps &deps,
                                                    std::vector<SocketAddress> addresses);
    // An accepted socket whose CONNECT_REQUEST, once read, goes to `requests`.
    static int StartPassive(const ConnectionDeps &deps, UniqueFd socket,
                            std::weak_ptr<RequestQueue> requests);

    Connection(const ConnectionDeps &deps, bool active);
    ~Connection() override;

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
    const std::vector<uint8_t> &RequestPrivateData() const { return request_private_data_; }
    int EventFd() const { return events_.Fd(); }
    int NextEvent(CmEvent *event) { return events_.Pop(event); }

    // Queue pair side.
    int PostSend(const ibv_send_wr &wr);
    int PostRecv(const ibv_recv_wr &wr);
    int PostFlush(uint64_t remote_addr, uint32_t rkey, size_t length, FlushType type, bool signaled,
                  uint64_t wr_id);
    int PostAtomicWrite(uint64_t remote_addr, uint32_t rkey, const char value[8], bool signaled,
                        uint64_t wr_id);

    void OnEvents(int fd, uint32_t events) override;
    void ResumeReceiving() override;

  private:
    enum class State {
        kIdle,             // active: resolved, Connect not called
        kConnecting,       // active: TCP connect in progress
        kAwaitingReply,    // active: CONNECT_REQUEST sent
        kAwaitingRequest,  // passive: reading the CONNECT_REQUEST
        kRequestQueued,    // passive: waiting for Accept/Reject
        kAwaitingRtu,      // passive: ACCEPT sent
        kEstablished,
        kDisconnecting,  // DISCONNECT sent and/or received, finishing
        kClosing,        // dead; sending a last NAK or REJECT
        kClosed,
    };
    enum class TimerPurpose { kNone, kConnect, kHandshake, kReceiverNotReady, kLinger };

    // The message being read from the socket.
    struct Inbound {
        enum class Phase { kHeader, kPayload, kWaitingForReceive };
        Phase phase = Phase::kHeader;
        uint8_t header_bytes[wire::kHeaderSize] = {};
        size_t header_received = 0;
        wire::Header header;
        // Payload destination: registered memory, or `small` when empty.
        std::vector<MemorySegment> destination;
        MemorySegment atomic_target;
        std::array<uint8_t, wire::kMaxHandshakePayload> small{};
        size_t payload_length = 0;
        size_t payload_received = 0;
        bool has_receive = false;
        PostedReceive receive;
    };

    static const char *StateName(State state);

    // Socket and timer plumbing.
    int AttachSocket(UniqueFd socket);
    void DetachSocket();
    int EnsureTimer();
    void ArmTimer(TimerPurpose purpose, int milliseconds);
    void DisarmTimer(TimerPurpose purpose);
    void OnTimer();
    bool ReadingEnabled() const;
    uint32_t WantedEvents() const;
    void UpdateInterest();
    // Sends what the socket takes now; the rest goes out on EPOLLOUT.
    void FlushOutbound();
    // After any progress: pending ACK, flushing, half-close, interest.
    void AfterProgress();

    // Active handshake.
    bool TryNextAddress();
    void FinishTcpConnect();
    void PushHandshake(wire::Opcode opcode, const void *private_data, size_t length);

    // Reading.
    void ReadInbound();
    // False when reading must stop (would block, EOF, error).
    bool ConsumeReadResult(ssize_t result);
    bool ReadPayload(size_t *budget);
    // readv into the payload's destination; *revoked when a region was
    // deregistered under it.
    ssize_t ReceivePayloadBytes(bool *revoked);
    void BeginPayload(size_t length);
    void OnHeader();
    void OnPayloadComplete();
    void OnRequestHeader();
    bool AcquireReceive();
    void OnAck(const wire::Header &header);
    void OnNak(const wire::Header &header);
    void OnReadResponseHeader(const wire::Header &header);
    void OnDisconnectMessage();
    void OnConnectRequest();
    void OnAccept();
    void CompleteRequest();
    void CompleteReceive(ibv_wc_status status, ibv_wc_opcode opcode, uint32_t byte_len,
                         bool with_imm);

    // Posting.
    int CheckCanPost() const;
    int PostRequest(PendingWr wr, OutboundMessage message);
    void FailOnFrontLocalError();

    // Ending.
    // The peer's request violated our rules: answer it with a NAK carrying
    // `status` and break the connection.
    void RejectRequest(ibv_wc_status status, const char *why);
    // The queue pair enters the error state and the connection breaks.
    void Fail(ibv_wc_status first_status, bool send_nothing);
    void ProtocolError(const char *why);
    void OnPeerGone(int error);
    void FinishDisconnect();
    void FlushReceives();
    // Stop reading, send what is queued (bounded by a timer), then close.
    void BeginClosing();
    void CloseNow();
    void Emit(CmEventType type, std::vector<uint8_t> private_data = {});
    bool IsLive() const;

    const ConnectionDeps deps_;
    const bool active_;

    std::mutex mu_;
    State state_;
    UniqueFd socket_;
    uint64_t socket_token_ = 0;
    uint32_t interest_ = 0;
    bool write_shut_down_ = false;
    UniqueFd timer_;
    uint64_t timer_token_ = 0;
    TimerPurpose timer_purpose_ = TimerPurpose::kNone;

    std::string peer_;
    std::vector<SocketAddress> addresses_;
    size_t next_address_ = 0;
    std::vector<uint8_t> connect_private_data_;
    std::vector<uint8_t> request_private_data_;
    std::weak_ptr<RequestQueue> requests_;
    bool request_failed_ = false;
    uint32_t peer_send_queue_depth_ = 0;

    SignalingQueue<CmEvent> events_{/*nonblocking=*/true};
    bool final_event_sent_ = false;
    bool disconnected_event_sent_ = false;
    bool sent_disconnect_ = false;
    bool received_disconnect_ = false;

    bool has_qp_ = false;
    QueuePairBinding qp_;
    std::unique_ptr<ReceiveQueue> private_rq_;
    ReceiveQueue *rq_ = nullptr;
    SendQueue sq_;

    uint64_t expected_sequence_ = 1;
    uint64_t applied_sequence_ = 0;
    uint64_t acknowledged_sequence_ = 0;
    Inbound in_;
    OutboundQueue out_;
};

}  // namespace rpma::provider::tcp

#endif  // RPMA_CORE_SRC_PROVIDER_TCP_TCP_CONNECTION_H
