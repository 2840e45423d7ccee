// Test fixture: a client and a server connection in one process, connected
// through the public API over 127.0.0.1 (the tcp provider on this machine).
#ifndef RPMA_TESTS_UNIT_CONNECTED_PAIR_H
#define RPMA_TESTS_UNIT_CONNECTED_PAIR_H

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

#include "librpma.h"

namespace rpma_test {

// A port nothing listens on right now (the kernel picks it).
inline std::string FreePort() {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (fd < 0 || bind(fd, reinterpret_cast<sockaddr *>(&addr), sizeof(addr)) != 0 ||
        getsockname(fd, reinterpret_cast<sockaddr *>(&addr), &len) != 0)
        ADD_FAILURE() << "cannot pick a free port";
    close(fd);
    return std::to_string(ntohs(addr.sin_port));
}

inline rpma_peer *NewPeer() {
    ibv_context *ctx = nullptr;
    EXPECT_EQ(rpma_utils_get_ibv_context("127.0.0.1", RPMA_UTIL_IBV_CONTEXT_LOCAL, &ctx), 0);
    rpma_peer *peer = nullptr;
    EXPECT_EQ(rpma_peer_new(ctx, &peer), 0);
    return peer;
}

inline void ExpectEvent(rpma_conn *conn, rpma_conn_event expected) {
    rpma_conn_event event = RPMA_CONN_UNDEFINED;
    ASSERT_EQ(rpma_conn_next_event(conn, &event), 0);
    EXPECT_EQ(event, expected) << rpma_utils_conn_event_2str(event);
}

// Waits for the next completion on conn's main CQ.
inline ibv_wc NextCompletion(rpma_conn *conn) {
    rpma_cq *cq = nullptr;
    EXPECT_EQ(rpma_conn_get_cq(conn, &cq), 0);
    ibv_wc wc{};
    for (;;) {
        int ret = rpma_cq_get_wc(cq, 1, &wc, nullptr);
        if (ret == 0)
            return wc;
        EXPECT_EQ(ret, RPMA_E_NO_COMPLETION);
        EXPECT_EQ(rpma_cq_wait(cq), 0);
        if (::testing::Test::HasFailure())
            return wc;
    }
}

class ConnectedPair : public ::testing::Test {
  protected:
    // Override to shape the connections.
    virtual rpma_conn_cfg *ClientCfg() { return nullptr; }
    virtual rpma_conn_cfg *ServerCfg() { return nullptr; }

    void SetUp() override {
        peer_ = NewPeer();
        ASSERT_NE(peer_, nullptr);
        std::string port = FreePort();
        ASSERT_EQ(rpma_ep_listen(peer_, "127.0.0.1", port.c_str(), &ep_), 0);

        rpma_conn_req *outgoing = nullptr;
        ASSERT_EQ(rpma_conn_req_new(peer_, "127.0.0.1", port.c_str(), ClientCfg(), &outgoing), 0);
        char hello[] = "client";
        rpma_conn_private_data pdata{hello, sizeof(hello)};
        ASSERT_EQ(rpma_conn_req_connect(&outgoing, &pdata, &client_), 0);

        rpma_conn_req *incoming = nullptr;
        ASSERT_EQ(rpma_ep_next_conn_req(ep_, ServerCfg(), &incoming), 0);
        char welcome[] = "server";
        rpma_conn_private_data reply{welcome, sizeof(welcome)};
        ASSERT_EQ(rpma_conn_req_connect(&incoming, &reply, &server_), 0);

        ExpectEvent(client_, RPMA_CONN_ESTABLISHED);
        ExpectEvent(server_, RPMA_CONN_ESTABLISHED);
    }

    void TearDown() override {
        if (client_ != nullptr && server_ != nullptr) {
            EXPECT_EQ(rpma_conn_disconnect(client_), 0);
            ExpectEvent(server_, RPMA_CONN_CLOSED);
            ExpectEvent(client_, RPMA_CONN_CLOSED);
        }
        EXPECT_EQ(rpma_conn_delete(&client_), 0);
        EXPECT_EQ(rpma_conn_delete(&server_), 0);
        EXPECT_EQ(rpma_ep_shutdown(&ep_), 0);
        EXPECT_EQ(rpma_peer_delete(&peer_), 0);
    }

    static ibv_wc NextCompletion(rpma_conn *conn) { return rpma_test::NextCompletion(conn); }

    rpma_peer *peer_ = nullptr;
    rpma_ep *ep_ = nullptr;
    rpma_conn *client_ = nullptr;
    rpma_conn *server_ = nullptr;
};

}  // namespace rpma_test

#endif  // RPMA_TESTS_UNIT_CONNECTED_PAIR_H
