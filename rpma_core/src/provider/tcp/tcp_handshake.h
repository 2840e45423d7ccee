// A connection's handshake, what of it is not the connection's state
// machine: the addresses an outgoing connection tries in turn, the queue an
// incoming one's request goes to, the private data each side sends, the
// handshake messages (CONNECT_REQUEST and ACCEPT carry a prefix of magic,
// version and send-queue depth before the private data), what the peer's
// prefix says, and whether the first bytes of a stranger can still be a
// handshake; the goodbye (DISCONNECT) and how long each step may take. A
// change of handshake version is made here. Used under the connection's
// lock. Tests: tcp_handshake_test, tcp_hostile_handshake_test.
#ifndef RPMA_CORE_SRC_PROVIDER_TCP_TCP_HANDSHAKE_H
#define RPMA_CORE_SRC_PROVIDER_TCP_TCP_HANDSHAKE_H

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "rpma_core/src/provider/tcp/tcp_connection_state.h"
#include "rpma_core/src/provider/tcp/tcp_inbound_message.h"
#include "rpma_core/src/provider/tcp/tcp_outbound_queue.h"
#include "rpma_core/src/provider/tcp/tcp_socket.h"
#include "rpma_core/src/provider/tcp/tcp_unique_fd.h"
#include "rpma_core/src/provider/tcp/tcp_wire.h"

namespace rpma::provider::tcp {

class RequestQueue;

class Handshake {
  public:
    // A passive side gives a peer this long to send its CONNECT_REQUEST, and
    // its READY_TO_USE after ACCEPT, so a silent client cannot pin a socket.
    static constexpr int kPassiveTimeoutMs = 10000;
    // How long a disconnect waits for the peer's DISCONNECT and end of stream.
    static constexpr int kDisconnectTimeoutMs = 2000;

    // Private data of `length` bytes fits a handshake message (rdma_cm's
    // bound); otherwise EINVAL, logged as `what` ("connect", "accept").
    static int CheckPrivateData(const void *data, uint8_t length, const char *what);

    // An outgoing connection: the addresses to try, in order.
    void SetAddresses(std::vector<SocketAddress> addresses) { addresses_ = std::move(addresses); }
    // Passive: where the peer's CONNECT_REQUEST goes, once read (null when
    // the listener closed meanwhile).
    void SetRequests(std::weak_ptr<RequestQueue> requests) { requests_ = std::move(requests); }
    std::shared_ptr<RequestQueue> Requests() const { return requests_.lock(); }
    std::string FirstAddress() const {
        return addresses_.empty() ? std::string() : addresses_.front().ToString();
    }
    // A socket with a non-blocking connect under way to the next address
    // that takes one (*peer names it), or an invalid one when none is left.
    UniqueFd ConnectNext(std::string *peer);

    // What this side's CONNECT_REQUEST carries (checked already).
    void SetConnectData(const void *data, uint8_t length);
    // CONNECT_REQUEST (with SetConnectData's) or ACCEPT, announcing this
    // side's send-queue depth.
    OutboundMessage ConnectRequest(uint32_t send_queue_depth) const;
    static OutboundMessage Accept(uint32_t send_queue_depth, const void *data, size_t length);
    // The answer to a CONNECT_REQUEST that is refused.
    static OutboundMessage Reject() { return Bare(wire::Opcode::kReject); }

    // The payload of the peer's CONNECT_REQUEST or ACCEPT (in `message`).
    enum class Peer {
        kRpma,          // of this version: depth and private data taken
        kOtherVersion,  // rpma of another version (tell it: REJECT)
        kOtherProtocol,
    };
    Peer Take(const InboundMessage &message);
    // The peer's send-queue depth, as this side bounds it: no honest peer
    // has a deeper queue than this provider creates, and 0 still lets one
    // READ be answered. Nothing a peer declares is used unchecked.
    uint32_t peer_send_queue_depth() const { return peer_send_queue_depth_; }
    const std::vector<uint8_t> &peer_private_data() const { return peer_private_data_; }

    // The peer's CONNECT_REQUEST failed (withdrawn, or the connection broke)
    // before the application answered it: Accept then reports a connect
    // error, and Reject has nothing left to do.
    void RequestFailed() { request_failed_ = true; }
    bool request_failed() const { return request_failed_; }

    // The goodbye: this side's DISCONNECT (built once), and the peer's.
    OutboundMessage Disconnect() {
        sent_disconnect_ = true;
        return Bare(wire::Opcode::kDisconnect);
    }
    void PeerDisconnected() { received_disconnect_ = true; }
    bool sent_disconnect() const { return sent_disconnect_; }
    bool peer_disconnected() const { return received_disconnect_; }

    // Before the handshake completes (`state`), whether the part of a
    // header read so far can still begin the message expected then.
    static bool Plausible(ConnectionState state, const InboundMessage &message);

  private:
    static OutboundMessage Bare(wire::Opcode opcode) {
        OutboundMessage message;
        message.header.opcode = opcode;
        return message;
    }

    std::vector<SocketAddress> addresses_;
    std::weak_ptr<RequestQueue> requests_;
    size_t next_address_ = 0;
    std::vector<uint8_t> connect_data_;
    std::vector<uint8_t> peer_private_data_;
    uint32_t peer_send_queue_depth_ = 1;
    bool request_failed_ = false;
    bool sent_disconnect_ = false;
    bool received_disconnect_ = false;
};

}  // namespace rpma::provider::tcp

#endif  // RPMA_CORE_SRC_PROVIDER_TCP_TCP_HANDSHAKE_H
