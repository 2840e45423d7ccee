// For tests of one role of the tcp provider without a connection: a
// connected pair of local stream sockets, one end for the code under test
// and one for the test playing its peer, and the headers the peer got.
#ifndef TESTS_UNIT_PROVIDER_TCP_TCP_SOCKET_PAIR_H
#define TESTS_UNIT_PROVIDER_TCP_TCP_SOCKET_PAIR_H

#include <gtest/gtest.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <vector>

#include "rpma_core/src/provider/tcp/tcp_unique_fd.h"
#include "rpma_core/src/provider/tcp/tcp_wire.h"

namespace rpma::provider::tcp::testing {

// Both ends non-blocking. False (with the errno in the test's log) when
// the process is out of file descriptors.
inline bool OpenSocketPair(UniqueFd *ours, UniqueFd *peer) {
    int fds[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds) != 0) {
        ADD_FAILURE() << "socketpair: " << strerror(errno);
        return false;
    }
    ours->Reset(fds[0]);
    peer->Reset(fds[1]);
    return true;
}

// Every header that arrived at `fd` so far, in order; an ATOMIC_WRITE's
// 8-byte payload is read past.
inline std::vector<wire::Header> ReceivedHeaders(int fd) {
    std::vector<wire::Header> headers;
    for (;;) {
        uint8_t bytes[wire::kHeaderSize];
        const ssize_t got = recv(fd, bytes, sizeof(bytes), MSG_DONTWAIT);
        if (got <= 0) {
            EXPECT_TRUE(got < 0 && errno == EAGAIN) << "the sender closed or failed";
            return headers;
        }
        EXPECT_EQ(got, static_cast<ssize_t>(sizeof(bytes))) << "whole headers only";
        wire::Header header;
        EXPECT_EQ(wire::ParseHeader(bytes, &header), wire::ParseError::kNone);
        if (header.opcode == wire::Opcode::kAtomicWrite) {
            uint8_t value[wire::kAtomicWriteSize];
            EXPECT_EQ(recv(fd, value, sizeof(value), MSG_DONTWAIT),
                      static_cast<ssize_t>(sizeof(value)));
        }
        headers.push_back(header);
    }
}

}  // namespace rpma::provider::tcp::testing

#endif  // TESTS_UNIT_PROVIDER_TCP_TCP_SOCKET_PAIR_H
