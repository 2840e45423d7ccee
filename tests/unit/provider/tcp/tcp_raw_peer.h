// A scripted peer for hostile-peer tests: a plain blocking TCP socket on
// 127.0.0.1 that speaks the tcp provider's wire format (or anything else)
// byte by byte, so a test decides exactly what the provider sees and when.
// Every read and write is bounded by kTimeoutMs (SO_RCVTIMEO, SO_SNDTIMEO):
// a provider that stops answering or reading fails the test instead of
// hanging it.
#ifndef TESTS_UNIT_PROVIDER_TCP_TCP_RAW_PEER_H
#define TESTS_UNIT_PROVIDER_TCP_TCP_RAW_PEER_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "rpma_core/src/provider/tcp/tcp_unique_fd.h"
#include "rpma_core/src/provider/tcp/tcp_wire.h"
#include "tests/unit/provider/tcp/tcp_test_support.h"
#include "tools/sanitizers/annotations.h"

namespace rpma::provider::tcp::testing {

// One message as the provider sent it.
struct RawMessage {
    wire::Header header;
    std::vector<uint8_t> payload;
};

// A request header as an rpma initiator would send it.
inline wire::Header RequestHeader(wire::Opcode opcode, uint64_t sequence, uint64_t remote_addr,
                                  uint32_t rkey, uint32_t length,
                                  uint8_t flags = wire::kAckRequested) {
    wire::Header header;
    header.opcode = opcode;
    header.flags = flags;
    header.sequence = sequence;
    header.remote_addr = remote_addr;
    header.rkey = rkey;
    header.length = length;
    return header;
}

// Appends a request (header and payload) to a burst sent at once.
inline void AppendRequest(std::vector<uint8_t> *bytes, const wire::Header &header,
                          const std::vector<uint8_t> &payload = {}) {
    const wire::EncodedHeader encoded = wire::EncodeHeader(header);
    bytes->insert(bytes->end(), encoded.begin(), encoded.end());
    bytes->insert(bytes->end(), payload.begin(), payload.end());
}

// Waits (bounded, without sleeping) until the provider wrote `value` at `at`.
// The provider's progress thread writes the byte as a NIC would, with
// nothing a poller synchronizes with (an RDMA application polling a flag
// does the same), so under ThreadSanitizer these polling reads are not
// shown to it: it would report each as racing with that write.
inline bool WaitForByte(const uint8_t *at, uint8_t value) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kTimeoutMs);
    const rpma::sanitizers::IgnoreReadsInScope polling;
    while (*static_cast<const volatile uint8_t *>(at) != value) {
        if (std::chrono::steady_clock::now() > deadline)
            return false;
        std::this_thread::yield();
    }
    return true;
}

class RawPeer {
  public:
    RawPeer() = default;
    explicit RawPeer(UniqueFd socket) : socket_(std::move(socket)) { Configure(); }

    // Connects to 127.0.0.1:port. A receive_buffer (SO_RCVBUF, set before
    // connecting so the window is sized by it) makes a peer that stops
    // reading fill up soon.
    static RawPeer ConnectTo(const std::string &port, int receive_buffer = 0) {
        UniqueFd socket(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
        if (receive_buffer > 0)
            setsockopt(socket.Get(), SOL_SOCKET, SO_RCVBUF, &receive_buffer,
                       sizeof(receive_buffer));
        sockaddr_in address = Loopback(static_cast<uint16_t>(std::stoi(port)));
        EXPECT_EQ(connect(socket.Get(), reinterpret_cast<sockaddr *>(&address), sizeof(address)), 0)
            << strerror(errno);
        return RawPeer(std::move(socket));
    }

    bool Valid() const { return socket_.Valid(); }
    int Fd() const { return socket_.Get(); }

    bool Send(const void *bytes, size_t length) {
        const auto *p = static_cast<const uint8_t *>(bytes);
        while (length > 0) {
            const ssize_t sent = ::send(socket_.Get(), p, length, MSG_NOSIGNAL);
            if (sent <= 0)
                return false;
            p += sent;
            length -= static_cast<size_t>(sent);
        }
        return true;
    }
    bool Send(const std::string &text) { return Send(text.data(), text.size()); }
    bool SendHeader(const wire::Header &header) {
        const wire::EncodedHeader encoded = wire::EncodeHeader(header);
        return Send(encoded.data(), encoded.size());
    }
    // A handshake message (CONNECT_REQUEST or ACCEPT) with its prefix.
    bool SendHandshake(wire::Opcode opcode, uint32_t send_queue_depth,
                       uint32_t magic = wire::kMagic, uint16_t version = wire::kVersion) {
        wire::HandshakePrefix prefix;
        prefix.magic = magic;
        prefix.version = version;
        prefix.send_queue_depth = send_queue_depth;
        uint8_t payload[wire::kHandshakePrefixSize];
        wire::EncodeHandshakePrefix(prefix, payload);
        wire::Header header;
        header.opcode = opcode;
        header.length = sizeof(payload);
        return SendHeader(header) && Send(payload, sizeof(payload));
    }

    // A request header with its payload (for WRITE, SEND, ATOMIC_WRITE).
    bool SendRequest(const wire::Header &header, const std::vector<uint8_t> &payload = {}) {
        return SendHeader(header) && (payload.empty() || Send(payload.data(), payload.size()));
    }
    // Ends our half of the stream (a half-open connection: we still read).
    bool ShutdownWrite() { return shutdown(socket_.Get(), SHUT_WR) == 0; }
    // Bytes received and not read yet.
    int Unread() const {
        int bytes = 0;
        return ioctl(socket_.Get(), FIONREAD, &bytes) == 0 ? bytes : -1;
    }

    // Reads exactly `length` bytes; false on EOF, error or timeout.
    bool Read(void *bytes, size_t length) {
        auto *p = static_cast<uint8_t *>(bytes);
        while (length > 0) {
            const ssize_t got = ::recv(socket_.Get(), p, length, 0);
            if (got <= 0)
                return false;
            p += got;
            length -= static_cast<size_t>(got);
        }
        return true;
    }
    // One message: its header and payload (as wire::PayloadLength says).
    bool ReadMessage(wire::Header *header, std::vector<uint8_t> *payload = nullptr) {
        uint8_t bytes[wire::kHeaderSize];
        if (!Read(bytes, sizeof(bytes)) ||
            wire::ParseHeader(bytes, header) != wire::ParseError::kNone)
            return false;
        std::vector<uint8_t> body(wire::PayloadLength(*header));
        if (!Read(body.data(), body.size()))
            return false;
        if (payload != nullptr)
            *payload = std::move(body);
        return true;
    }
    // Reads the peer's CONNECT_REQUEST (as a scripted server) or ACCEPT.
    bool ReadHandshake(wire::Opcode expected) {
        wire::Header header;
        return ReadMessage(&header) && header.opcode == expected;
    }

    // True when the provider closed the connection within timeout_ms: EOF
    // or a reset, after discarding whatever it still sent.
    bool WaitClosed(int timeout_ms = kTimeoutMs) {
        const auto deadline =
            std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
        uint8_t sink[4096];
        for (;;) {
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                                  deadline - std::chrono::steady_clock::now())
                                  .count();
            if (left <= 0 || !WaitReadableOrFailed(socket_.Get(), static_cast<int>(left)))
                return false;
            const ssize_t got = ::recv(socket_.Get(), sink, sizeof(sink), MSG_DONTWAIT);
            if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR))
                return true;
        }
    }

    // Every byte the provider sends until it closes the connection (EOF or
    // a reset); false when it does not close it within timeout_ms.
    bool ReadBytesUntilClosed(std::vector<uint8_t> *bytes, int timeout_ms = kTimeoutMs) {
        const auto deadline =
            std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
        for (;;) {
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                                  deadline - std::chrono::steady_clock::now())
                                  .count();
            if (left <= 0 || !WaitReadableOrFailed(socket_.Get(), static_cast<int>(left)))
                return false;
            uint8_t chunk[65536];
            const ssize_t got = ::recv(socket_.Get(), chunk, sizeof(chunk), MSG_DONTWAIT);
            if (got > 0)
                bytes->insert(bytes->end(), chunk, chunk + got);
            else if (got == 0 || (errno != EAGAIN && errno != EINTR))
                return true;
        }
    }
    // The same as whole messages; *unfinished counts the bytes after the
    // last whole one (a message cut short, or bytes that are none).
    bool ReadUntilClosed(std::vector<RawMessage> *messages, size_t *unfinished,
                         int timeout_ms = kTimeoutMs) {
        std::vector<uint8_t> bytes;
        const bool closed = ReadBytesUntilClosed(&bytes, timeout_ms);
        size_t at = 0;
        while (bytes.size() - at >= wire::kHeaderSize) {
            uint8_t encoded[wire::kHeaderSize];
            memcpy(encoded, &bytes[at], sizeof(encoded));
            RawMessage message;
            if (wire::ParseHeader(encoded, &message.header) != wire::ParseError::kNone)
                break;
            const size_t length = wire::PayloadLength(message.header);
            if (bytes.size() - at - wire::kHeaderSize < length)
                break;
            const auto begin = bytes.begin() + static_cast<ptrdiff_t>(at + wire::kHeaderSize);
            message.payload.assign(begin, begin + static_cast<ptrdiff_t>(length));
            messages->push_back(std::move(message));
            at += wire::kHeaderSize + length;
        }
        *unfinished = bytes.size() - at;
        return closed;
    }

  private:
    static sockaddr_in Loopback(uint16_t port) {
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_port = htons(port);
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        return address;
    }
    void Configure() {
        timeval timeout{kTimeoutMs / 1000, (kTimeoutMs % 1000) * 1000};
        setsockopt(socket_.Get(), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
        setsockopt(socket_.Get(), SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
        const int one = 1;
        setsockopt(socket_.Get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    }

    friend class RawListener;
    UniqueFd socket_;
};

// A listening socket on 127.0.0.1 for a scripted server.
class RawListener {
  public:
    RawListener() : socket_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
        sockaddr_in address = RawPeer::Loopback(0);
        EXPECT_EQ(bind(socket_.Get(), reinterpret_cast<sockaddr *>(&address), sizeof(address)), 0);
        EXPECT_EQ(listen(socket_.Get(), 16), 0);
        socklen_t length = sizeof(address);
        getsockname(socket_.Get(), reinterpret_cast<sockaddr *>(&address), &length);
        port_ = std::to_string(ntohs(address.sin_port));
    }
    const std::string &Port() const { return port_; }
    // The next connection, within kTimeoutMs.
    RawPeer Accept() {
        if (!WaitReadable(socket_.Get()))
            return RawPeer();
        return RawPeer(UniqueFd(accept4(socket_.Get(), nullptr, nullptr, SOCK_CLOEXEC)));
    }

  private:
    UniqueFd socket_;
    std::string port_;
};

// The provider on one side of a connection, a scripted raw peer on the
// other, and a check that the process still serves well-behaved peers.
class HostilePeerTest : public ConnectedPair {
  protected:
    // The provider connects as a client to a scripted server, which takes
    // the handshake declaring `declared_depth` as its send-queue depth.
    void ConnectToScripted(RawListener &raw, RawPeer *server, const PairOptions &options = {},
                           uint32_t declared_depth = 16) {
        port = raw.Port();
        ASSERT_NO_FATAL_FAILURE(CreateClient(options));
        ASSERT_EQ(client.id->Connect(nullptr, 0, kTimeoutMs), 0);
        *server = raw.Accept();
        ASSERT_TRUE(server->Valid());
        ASSERT_TRUE(server->ReadHandshake(wire::Opcode::kConnectRequest));
        ASSERT_TRUE(server->SendHandshake(wire::Opcode::kAccept, declared_depth));
        ASSERT_EQ(WaitEventType(*client.id), CmEventType::kEstablished);
        ASSERT_TRUE(server->ReadHandshake(wire::Opcode::kReadyToUse));
    }

    // A scripted client connects to the provider's listener (started on
    // first use) declaring `declared_depth`; the provider accepts it with a
    // QP of `options` as `server`.
    // The application takes the raw peer's request (sent already) and
    // accepts it; the peer reads the ACCEPT and has not answered yet.
    void AcceptAndReadAccept(RawPeer &raw, const PairOptions &options = {}) {
        ASSERT_NO_FATAL_FAILURE(TakeRequest(options));
        ASSERT_EQ(server.id->Accept(nullptr, 0), 0);
        ASSERT_TRUE(raw.ReadHandshake(wire::Opcode::kAccept));
    }

    void AcceptScripted(RawPeer *raw, uint32_t declared_depth = 16, const PairOptions &options = {},
                        int receive_buffer = 0) {
        if (listener == nullptr) {
            ASSERT_NO_FATAL_FAILURE(StartListening());
        }
        *raw = RawPeer::ConnectTo(ListenerPort(), receive_buffer);
        ASSERT_TRUE(raw->SendHandshake(wire::Opcode::kConnectRequest, declared_depth));
        ASSERT_NO_FATAL_FAILURE(AcceptAndReadAccept(*raw, options));
        wire::Header ready;
        ready.opcode = wire::Opcode::kReadyToUse;
        ASSERT_TRUE(raw->SendHeader(ready));
        ASSERT_EQ(WaitEventType(*server.id), CmEventType::kEstablished);
    }

    // The process still makes connections and moves data: a fresh pair
    // through the provider's own listener writes, then reads back. Its
    // target side runs on the progress thread, which therefore is not
    // stuck.
    void ExpectAnotherConnectionWorks() {
        if (listener == nullptr) {
            ASSERT_NO_FATAL_FAILURE(StartListening());
        }
        port = ListenerPort();
        Endpoint c;
        Endpoint s;
        ASSERT_NO_FATAL_FAILURE(ConnectAnother(c, s, PairOptions{}));
        Buffer local(*client_pd, 4096, kRemoteAll);
        Buffer remote(*server_pd, 4096, kRemoteAll);
        memset(local.data(), 0x5a, 64);
        memset(remote.data() + 2048, 0xa5, 64);
        ibv_sge out = local.Sge(0, 64);
        ASSERT_EQ(c.qp().PostSend(SendWr(IBV_WR_RDMA_WRITE, &out, 1, remote.addr(), remote.rkey())),
                  0);
        EXPECT_EQ(c.send.WaitOne().status, IBV_WC_SUCCESS);
        EXPECT_EQ(remote.data()[63], 0x5a);
        ibv_sge in = local.Sge(2048, 64);
        ASSERT_EQ(
            c.qp().PostSend(SendWr(IBV_WR_RDMA_READ, &in, 2, remote.addr(2048), remote.rkey())), 0);
        EXPECT_EQ(c.send.WaitOne().status, IBV_WC_SUCCESS);
        EXPECT_EQ(local.data()[2048 + 63], 0xa5);
    }

    std::string ListenerPort() const {
        return std::to_string(static_cast<tcp::Listener &>(*listener).Port());
    }
};

}  // namespace rpma::provider::tcp::testing

#endif  // TESTS_UNIT_PROVIDER_TCP_TCP_RAW_PEER_H
