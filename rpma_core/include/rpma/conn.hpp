// rpma::Connection: owns an rpma_conn, from ConnReq::Connect. Its Peer, and
// the memory regions its operations use, must outlive it; so must an SRQ it
// was configured with. The destructor disconnects (unless Disconnect() was
// called) and deletes. The operations post exactly what the C functions post:
// offsets, lengths, RPMA_F_* flags and op_context (the completion's wr_id).
#ifndef RPMA_CORE_INCLUDE_RPMA_CONN_HPP
#define RPMA_CORE_INCLUDE_RPMA_CONN_HPP

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>

#include "librpma.h"
#include "rpma/cq.hpp"
#include "rpma/error.hpp"
#include "rpma/mr.hpp"
#include "rpma/owner.hpp"
#include "rpma/peer_cfg.hpp"

namespace rpma {

class Connection {
  public:
    // Which queue rpma_conn_wait found a completion on.
    struct Fired {
        CompletionQueue cq;
        bool is_rcq = false;
    };

    Connection() = default;
    // Takes ownership of conn.
    explicit Connection(rpma_conn *conn) : conn_(conn) {}
    Connection(Connection &&other) noexcept
        : conn_(std::move(other.conn_)), disconnected_(std::exchange(other.disconnected_, false)) {}
    Connection &operator=(Connection &&other) noexcept {
        if (this != &other) {
            Release();
            conn_ = std::move(other.conn_);
            disconnected_ = std::exchange(other.disconnected_, false);
        }
        return *this;
    }
    ~Connection() { Release(); }

    // RPMA_E_NO_EVENT (non-blocking event fd) passes through as an error.
    Result<rpma_conn_event> NextEvent() {
        rpma_conn_event event = RPMA_CONN_UNDEFINED;
        detail::Returned got = detail::Check(rpma_conn_next_event(conn_.get(), &event));
        if (got.code != 0)
            return detail::Failure(got, "rpma_conn_next_event");
        return event;
    }

    Result<void> Disconnect() {
        disconnected_ = true;
        return detail::Status(detail::Check(rpma_conn_disconnect(conn_.get())),
                              "rpma_conn_disconnect");
    }

    Result<int> EventFd() const { return Fd(rpma_conn_get_event_fd, "rpma_conn_get_event_fd"); }
    // Only with a shared completion channel (RPMA_E_NOT_SHARED_CHNL otherwise).
    Result<int> CompletionFd() const {
        return Fd(rpma_conn_get_compl_fd, "rpma_conn_get_compl_fd");
    }

    // The other side's private data; valid as long as the connection.
    Result<std::span<const std::byte>> PrivateData() const {
        rpma_conn_private_data pdata{};
        detail::Returned got = detail::Check(rpma_conn_get_private_data(conn_.get(), &pdata));
        if (got.code != 0)
            return detail::Failure(got, "rpma_conn_get_private_data");
        return std::span<const std::byte>(static_cast<const std::byte *>(pdata.ptr), pdata.len);
    }

    // The remote peer's configuration, needed before a persistent Flush.
    Result<void> ApplyRemotePeerCfg(const PeerCfg &cfg) {
        return detail::Status(
            detail::Check(rpma_conn_apply_remote_peer_cfg(conn_.get(), cfg.get())),
            "rpma_conn_apply_remote_peer_cfg");
    }

    Result<uint32_t> QpNum() const {
        uint32_t qp_num = 0;
        detail::Returned got = detail::Check(rpma_conn_get_qp_num(conn_.get(), &qp_num));
        if (got.code != 0)
            return detail::Failure(got, "rpma_conn_get_qp_num");
        return qp_num;
    }

    CompletionQueue Cq() const { return Queue(rpma_conn_get_cq); }
    // Empty unless the connection was configured with a receive CQ.
    CompletionQueue Rcq() const { return Queue(rpma_conn_get_rcq); }

    // With a shared completion channel: blocks (unless CompletionFd() is
    // O_NONBLOCK) until the CQ or the RCQ has a completion.
    Result<Fired> Wait(int flags = 0) {
        rpma_cq *cq = nullptr;
        bool is_rcq = false;
        detail::Returned waited = detail::Check(rpma_conn_wait(conn_.get(), flags, &cq, &is_rcq));
        if (waited.code != 0)
            return detail::Failure(waited, "rpma_conn_wait");
        return Fired{CompletionQueue(cq), is_rcq};
    }

    Result<void> Read(MemoryRegion &dst, size_t dst_offset, const RemoteMemory &src,
                      size_t src_offset, size_t len, int flags, const void *op_context) {
        return detail::Status(detail::Check(rpma_read(conn_.get(), dst.get(), dst_offset, src.get(),
                                                      src_offset, len, flags, op_context)),
                              "rpma_read", Range(src_offset, len));
    }

    Result<void> Write(RemoteMemory &dst, size_t dst_offset, const MemoryRegion &src,
                       size_t src_offset, size_t len, int flags, const void *op_context) {
        return detail::Status(
            detail::Check(rpma_write(conn_.get(), dst.get(), dst_offset, src.get(), src_offset, len,
                                     flags, op_context)),
            "rpma_write", Range(dst_offset, len));
    }

    Result<void> WriteWithImm(RemoteMemory &dst, size_t dst_offset, const MemoryRegion &src,
                              size_t src_offset, size_t len, int flags, uint32_t imm,
                              const void *op_context) {
        return detail::Status(
            detail::Check(rpma_write_with_imm(conn_.get(), dst.get(), dst_offset, src.get(),
                                              src_offset, len, flags, imm, op_context)),
            "rpma_write_with_imm", Range(dst_offset, len));
    }

    Result<void> AtomicWrite(RemoteMemory &dst, size_t dst_offset,
                             const char src[RPMA_ATOMIC_WRITE_ALIGNMENT], int flags,
                             const void *op_context) {
        return detail::Status(detail::Check(rpma_atomic_write(conn_.get(), dst.get(), dst_offset,
                                                              src, flags, op_context)),
                              "rpma_atomic_write", Range(dst_offset, RPMA_ATOMIC_WRITE_ALIGNMENT));
    }

    Result<void> Flush(RemoteMemory &dst, size_t dst_offset, size_t len, rpma_flush_type type,
                       int flags, const void *op_context) {
        return detail::Status(detail::Check(rpma_flush(conn_.get(), dst.get(), dst_offset, len,
                                                       type, flags, op_context)),
                              "rpma_flush", Range(dst_offset, len));
    }

    Result<void> Send(const MemoryRegion &src, size_t offset, size_t len, int flags,
                      const void *op_context) {
        return detail::Status(
            detail::Check(rpma_send(conn_.get(), src.get(), offset, len, flags, op_context)),
            "rpma_send", Range(offset, len));
    }

    Result<void> SendWithImm(const MemoryRegion &src, size_t offset, size_t len, int flags,
                             uint32_t imm, const void *op_context) {
        return detail::Status(detail::Check(rpma_send_with_imm(conn_.get(), src.get(), offset, len,
                                                               flags, imm, op_context)),
                              "rpma_send_with_imm", Range(offset, len));
    }

    Result<void> Recv(MemoryRegion &dst, size_t offset, size_t len, const void *op_context) {
        return detail::Status(
            detail::Check(rpma_recv(conn_.get(), dst.get(), offset, len, op_context)), "rpma_recv",
            Range(offset, len));
    }

    rpma_conn *get() const { return conn_.get(); }

  private:
    // "len bytes at offset", the context of an operation's error.
    static std::string Range(size_t offset, size_t len) {
        return std::to_string(len) + " bytes at " + std::to_string(offset);
    }

    Result<int> Fd(int (*get_fd)(const rpma_conn *, int *), const char *call) const {
        int fd = -1;
        detail::Returned got = detail::Check(get_fd(conn_.get(), &fd));
        if (got.code != 0)
            return detail::Failure(got, call);
        return fd;
    }

    CompletionQueue Queue(int (*get_cq)(const rpma_conn *, rpma_cq **)) const {
        rpma_cq *cq = nullptr;
        if (get_cq(conn_.get(), &cq) != 0)
            return CompletionQueue();
        return CompletionQueue(cq);
    }

    void Release() {
        if (conn_.get() != nullptr && !disconnected_)
            (void)rpma_conn_disconnect(conn_.get());
        conn_.reset();
        disconnected_ = false;
    }

    detail::Owner<rpma_conn, rpma_conn_delete> conn_;
    bool disconnected_ = false;
};

}  // namespace rpma

#endif  // RPMA_CORE_INCLUDE_RPMA_CONN_HPP
