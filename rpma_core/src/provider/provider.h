// The provider interface: everything the librpma objects need from a
// transport, shaped after ibverbs + rdma_cm so that the verbs provider is a
// thin one-to-one mapping and the tcp provider emulates the same contract.
//
// The API objects (peer, mr, ep, conn_req, conn, cq, srq) talk only to these
// classes; a provider lives in its own folder and never reaches into another,
// and the generic layer finds it only through its Ops (provider_ops.h).
//
// Conventions:
// - Every fd handed out (channel, listener, CmId event fd) is created
//   blocking: O_NONBLOCK belongs to the application, which sets it to make
//   librpma's calls non-blocking, and the API objects look at it to decide
//   whether to wait. Listener::NextRequest and CmId::NextEvent never block
//   whatever the flag says (they return EAGAIN), so a provider must not rely
//   on O_NONBLOCK to read its own fds (poll with a zero timeout first).
// - Methods return 0 or a positive errno value (as ibverbs does): EINVAL,
//   ENOMEM (also: a queue is full, as ibverbs reports it), EAGAIN (nothing
//   ready on a non-blocking call), EOPNOTSUPP, EFAULT (range outside a
//   registration), ENODEV, ENOTCONN (not yet established), EPIPE (broken or
//   disconnected), ECONNREFUSED, ETIMEDOUT, EHOSTUNREACH.
// - Work requests and completions use the ibverbs structs (ibv_send_wr,
//   ibv_recv_wr, ibv_wc) with ibverbs' meaning of every field.
// - Objects are owned by unique_ptr; an owner outlives what it created
//   (ProtectionDomain > MemoryRegion, CompletionChannel > CompletionQueue >
//   QueuePair), exactly as with ibverbs.
#ifndef RPMA_CORE_SRC_PROVIDER_PROVIDER_H
#define RPMA_CORE_SRC_PROVIDER_PROVIDER_H

#include <infiniband/verbs.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace rpma::provider {

class CompletionQueue;
class ProtectionDomain;
class SharedReceiveQueue;

// ibv_comp_channel: one pollable fd that becomes readable when an armed CQ
// attached to it gets a completion. Several CQs may share one channel.
class CompletionChannel {
  public:
    virtual ~CompletionChannel() = default;
    virtual int Fd() const = 0;
    // ibv_get_cq_event: blocks until an armed CQ fired unless the fd was made
    // non-blocking by the caller (then EAGAIN). Sets *cq to the CQ that fired.
    virtual int GetEvent(CompletionQueue **cq) = 0;
    // ibv_ack_cq_events.
    virtual void AckEvents(CompletionQueue *cq, unsigned int count) = 0;
    // GetEvent, and the event acknowledged at once (rpma_cq_wait's way).
    virtual int GetAckedEvent(CompletionQueue **cq) {
        const int err = GetEvent(cq);
        if (err == 0)
            AckEvents(*cq, 1);
        return err;
    }
    // GetAckedEvent that gives up after `timeout_ms` (>= 0) with ETIMEDOUT,
    // whether or not the fd is O_NONBLOCK. This default sleeps in poll(2)
    // on Fd() first, which is all an ibverbs channel can do; a provider
    // that makes progress in a waiting thread overrides it.
    virtual int GetAckedEventWithin(CompletionQueue **cq, int timeout_ms) {
        pollfd readable{Fd(), POLLIN, 0};
        const int ready = poll(&readable, 1, timeout_ms);
        if (ready < 0)
            return errno;
        if (ready == 0)
            return ETIMEDOUT;
        return GetAckedEvent(cq);
    }
};

// ibv_cq.
class CompletionQueue {
  public:
    virtual ~CompletionQueue() = default;
    // ibv_poll_cq: returns the number of completions written (0 = none), or a
    // negative errno.
    virtual int Poll(int num_entries, ibv_wc *wc) = 0;
    // ibv_req_notify_cq(cq, 0): arm; the channel fires at the next completion.
    virtual int RequestNotify() = 0;
    virtual int Capacity() const = 0;
};

// What peers did to a registered region through one-sided operations, in
// bytes and persistent flushes, since it was registered.
struct RemoteAccessCounts {
    uint64_t bytes_written = 0;  // WRITE, WRITE_WITH_IMM payloads, ATOMIC_WRITE
    uint64_t bytes_read = 0;
    uint64_t persistent_flushes = 0;
    uint64_t bytes_persisted = 0;
};

// ibv_mr: the registration of [addr, addr + length).
class MemoryRegion {
  public:
    virtual ~MemoryRegion() = default;
    virtual void *Addr() const = 0;
    virtual size_t Length() const = 0;
    virtual uint32_t Lkey() const = 0;
    virtual uint32_t Rkey() const = 0;
    // ibv_advise_mr for [addr, addr + length) inside this region.
    // advice: enum ibv_advise_mr_advice; flags: IBV_ADVISE_MR_FLAG_*.
    virtual int Advise(void *addr, size_t length, int advice, uint32_t flags) = 0;
    // The peers' one-sided operations on this region so far; EOPNOTSUPP
    // where a NIC applies them without the CPU (verbs), so nothing sees them.
    virtual int RemoteCounts(RemoteAccessCounts *counts) const = 0;
};

// ibv_srq.
class SharedReceiveQueue {
  public:
    virtual ~SharedReceiveQueue() = default;
    virtual int PostRecv(const ibv_recv_wr &wr) = 0;
};

// What rpma_flush asks for; the provider picks the mechanism (native flush,
// an APM read, or the tcp provider's persist-then-acknowledge).
enum class FlushType { kPersistent, kVisibility };

// Not an ibv_send_flags bit: rpma_ext.h's RPMA_EXT_F_MORE on a PostSend,
// the hint that another work request follows at once on the QP. verbs
// drops it before ibv_post_send.
inline constexpr unsigned int kSendMore = 1u << 30;

// ibv_qp (RC).
class QueuePair {
  public:
    virtual ~QueuePair() = default;
    virtual uint32_t QpNum() const = 0;
    // ibv_post_send of one WR (wr.next is ignored). Opcodes: RDMA_WRITE,
    // RDMA_WRITE_WITH_IMM, RDMA_READ, SEND, SEND_WITH_IMM. ENOMEM when sq_size
    // WRs are outstanding.
    virtual int PostSend(const ibv_send_wr &wr) = 0;
    virtual int PostRecv(const ibv_recv_wr &wr) = 0;
    // Makes [remote_addr, remote_addr + length) flushed to `type` at the peer
    // once every earlier WR is done; completes with opcode IBV_WC_RDMA_READ
    // (as librpma's APM flush does) when `signaled`.
    virtual int PostFlush(uint64_t remote_addr, uint32_t rkey, size_t length, FlushType type,
                          bool signaled, uint64_t wr_id) = 0;
    // 8 bytes stored atomically at remote_addr after every earlier WR;
    // completes with opcode IBV_WC_RDMA_WRITE when `signaled`.
    virtual int PostAtomicWrite(uint64_t remote_addr, uint32_t rkey, const char value[8],
                                bool signaled, uint64_t wr_id) = 0;
    // Sends what PostSends with kSendMore left waiting (nothing waits on
    // verbs, whose posts go at once).
    virtual void RingDoorbell() {}
};

struct QueuePairInit {
    CompletionQueue *send_cq = nullptr;
    CompletionQueue *recv_cq = nullptr;  // may equal send_cq
    SharedReceiveQueue *srq = nullptr;   // receives come from here when set
    uint32_t sq_size = 0;
    uint32_t rq_size = 0;
};

// ibv_pd.
class ProtectionDomain {
  public:
    virtual ~ProtectionDomain() = default;
    // ibv_reg_mr. access: IBV_ACCESS_* bits.
    virtual int RegisterMemory(void *addr, size_t length, int access,
                               std::unique_ptr<MemoryRegion> *mr) = 0;
    virtual int CreateSrq(uint32_t max_wr, std::unique_ptr<SharedReceiveQueue> *srq) = 0;
};

// rdma_cm events, as librpma maps them.
enum class CmEventType {
    kEstablished,
    kRejected,
    kUnreachable,   // address/route resolution or connect failed
    kConnectError,  // -> RPMA_CONN_LOST
    kDeviceRemoval,
    kDisconnected,  // -> RPMA_CONN_CLOSED
    kTimewaitExit,
    kOther,
};

struct CmEvent {
    CmEventType type = CmEventType::kOther;
    std::vector<uint8_t> private_data;  // ESTABLISHED carries the peer's
};

// One side of one connection (rdma_cm_id with its own event channel): the
// active side gets it resolved from ConnectionManager::Resolve, the passive
// side from Listener::NextRequest.
class CmId {
  public:
    virtual ~CmId() = default;
    virtual ibv_context *Context() const = 0;
    // rdma_create_qp on this id. The CmId owns the QP (Qp() returns it, or
    // nullptr before CreateQp) and destroys it first when it is destroyed, so
    // the CQs given in `init` must outlive the CmId.
    virtual int CreateQp(ProtectionDomain &pd, const QueuePairInit &init) = 0;
    virtual QueuePair *Qp() const = 0;
    // rdma_destroy_qp: the QP goes, with every work request still posted on
    // it (none completes), and CreateQp may be called again, e.g. in another
    // protection domain. Only before Connect/Accept: a connection in progress
    // or established loses its QP and is cut. No-op without a QP.
    virtual void DestroyQp() = 0;
    // The other side's address (rdma_get_peer_addr; getpeername), for logs
    // and access decisions. ENOTCONN when the id has no peer yet.
    virtual int PeerAddress(sockaddr_storage *address) const = 0;
    // The peer's private data carried by a connection request (passive side).
    virtual const std::vector<uint8_t> &RequestPrivateData() const = 0;
    virtual int Connect(const void *private_data, uint8_t length, int timeout_ms) = 0;
    virtual int Accept(const void *private_data, uint8_t length) = 0;
    virtual int Reject() = 0;
    virtual int Disconnect() = 0;
    // Events of this connection: a pollable fd and a non-blocking read
    // (EAGAIN when none is pending).
    virtual int EventFd() const = 0;
    virtual int NextEvent(CmEvent *event) = 0;
};

// rdma_listen on an event channel.
class Listener {
  public:
    virtual ~Listener() = default;
    virtual int Fd() const = 0;
    // The next connection request (EAGAIN when none is pending).
    virtual int NextRequest(std::unique_ptr<CmId> *id) = 0;
};

// A device (ibv_context) and what can be made from it.
class Device {
  public:
    virtual ~Device() = default;
    virtual ibv_context *Context() = 0;
    virtual bool IsOdpCapable() const = 0;
    virtual int AllocPd(std::unique_ptr<ProtectionDomain> *pd) = 0;
    virtual int CreateCompletionChannel(std::unique_ptr<CompletionChannel> *channel) = 0;
    virtual int CreateCq(int capacity, CompletionChannel *channel,
                         std::unique_ptr<CompletionQueue> *cq) = 0;
    virtual int Listen(const char *addr, const char *port, std::unique_ptr<Listener> *listener) = 0;
    // rdma_resolve_addr + rdma_resolve_route, synchronous.
    virtual int Resolve(const char *addr, const char *port, int timeout_ms,
                        std::unique_ptr<CmId> *id) = 0;
};

}  // namespace rpma::provider

#endif  // RPMA_CORE_SRC_PROVIDER_PROVIDER_H
