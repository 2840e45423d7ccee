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
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "rpma_core/src/provider/tcp/tcp_unique_fd.h"
#include "rpma_core/src/provider/tcp/tcp_wire.h"
#include "tests/unit/provider/tcp/tcp_test_support.h"

namespace rpma::provider::tcp::testing {

class RawPeer {
  public:
    RawPeer() = default;
    explicit RawPeer(UniqueFd socket) : socket_(std::move(socket)) { Configure(); }

    // Connects to 127.0.0.1:port.
    static RawPeer ConnectTo(const std::string &port) {
        UniqueFd socket(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
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
            if (left <= 0 || !WaitReadable(socket_.Get(), static_cast<int>(left)))
                return false;
            const ssize_t got = ::recv(socket_.Get(), sink, sizeof(sink), MSG_DONTWAIT);
            if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR))
                return true;
        }
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

}  // namespace rpma::provider::tcp::testing

#endif  // TESTS_UNIT_PROVIDER_TCP_TCP_RAW_PEER_H
