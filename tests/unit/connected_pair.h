// Test fixture: a client and a server connection in one process, connected
// through the public API, and what the API tests need to know about the
// provider they run on.
//
// The same tests run on both providers:
//   - on the build machines: the tcp provider over 127.0.0.1 (the default);
//   - on real verbs: RPMA_PROVIDER=verbs RPMA_TEST_ADDR=<address of an RDMA
//     interface>, as the VM tier does on Soft-RoCE (tests/unit:api_verbs_vm_test).
// Where the providers legitimately differ (what rdma_cm does to private data,
// how a connection to nothing fails, ...) the tests assert each provider's
// behaviour explicitly.
#ifndef RPMA_TESTS_UNIT_CONNECTED_PAIR_H
#define RPMA_TESTS_UNIT_CONNECTED_PAIR_H

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "librpma.h"
#include "tests/support/free_port.h"

namespace rpma_test {

// The address the tests listen on and connect to: $RPMA_TEST_ADDR, else
// 127.0.0.1.
inline const char *TestAddr() {
    const char *addr = getenv("RPMA_TEST_ADDR");
    return addr != nullptr && *addr != '\0' ? addr : "127.0.0.1";
}

enum class Provider { kTcp, kVerbs };

// The provider the tests run on: verbs when RPMA_PROVIDER=verbs, tcp
// otherwise (RPMA_PROVIDER=tcp, or auto on a host without an RDMA device).
// Tests check that the device they get is really that provider's.
inline Provider TestProvider() {
    const char *provider = getenv("RPMA_PROVIDER");
    return provider != nullptr && std::string_view(provider) == "verbs" ? Provider::kVerbs
                                                                        : Provider::kTcp;
}

inline bool OnVerbs() {
    return TestProvider() == Provider::kVerbs;
}

// The name of the device serving TestAddr(): tcp0 for the tcp provider, the
// RDMA device (rxe0 on Soft-RoCE, mlx5_0, ...) for verbs.
inline std::string TestDeviceName() {
    ibv_context *ctx = nullptr;
    if (rpma_utils_get_ibv_context(TestAddr(), RPMA_UTIL_IBV_CONTEXT_LOCAL, &ctx) != 0 ||
        ctx == nullptr || ctx->device == nullptr)
        return "";
    return ctx->device->name;
}

// Soft-RoCE (rdma_rxe), whose limits some tests pin down as measured.
inline bool OnSoftRoce() {
    return OnVerbs() && TestDeviceName().rfind("rxe", 0) == 0;
}

// Private data as the receiving side sees it. The tcp provider delivers
// exactly the bytes sent. rdma_cm on InfiniBand and RoCE pads them with zeros
// to the size of the CM message's field (56 bytes in a connection request,
// 196 in a reply), so a librpma application on verbs gets at least what was
// sent, with the sent bytes first.
inline ::testing::AssertionResult ReceivedPrivateData(const rpma_conn_private_data &got,
                                                      const void *sent, size_t sent_len) {
    if (got.ptr == nullptr)
        return ::testing::AssertionFailure() << "no private data";
    if (OnVerbs() ? got.len < sent_len : got.len != sent_len)
        return ::testing::AssertionFailure()
               << got.len << " bytes of private data, sent " << sent_len;
    if (memcmp(got.ptr, sent, sent_len) != 0)
        return ::testing::AssertionFailure()
               << "the private data does not start with what was sent";
    return ::testing::AssertionSuccess();
}

// A port nothing listens on right now (tests/support/free_port.h). rdma_cm
// has a port space of its own, so on verbs this is merely a port that is
// unlikely to be taken.
inline std::string FreePort() {
    const uint16_t port = rpma::testing::FreePort();
    if (port == 0)
        ADD_FAILURE() << "cannot pick a free port";
    return std::to_string(port);
}

inline rpma_peer *NewPeer() {
    ibv_context *ctx = nullptr;
    EXPECT_EQ(rpma_utils_get_ibv_context(TestAddr(), RPMA_UTIL_IBV_CONTEXT_LOCAL, &ctx), 0);
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

// The graceful end of a connection, as librpma applications do it: the
// active side disconnects; the passive side sees CLOSED and disconnects too,
// which on InfiniBand/RoCE sends the DREP the active side's CLOSED waits for
// (without it, that waits out the DREQ retries, about a minute).
inline void Disconnect(rpma_conn *active, rpma_conn *passive) {
    EXPECT_EQ(rpma_conn_disconnect(active), 0);
    ExpectEvent(passive, RPMA_CONN_CLOSED);
    EXPECT_EQ(rpma_conn_disconnect(passive), 0);
    ExpectEvent(active, RPMA_CONN_CLOSED);
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
        ASSERT_EQ(rpma_ep_listen(peer_, TestAddr(), port.c_str(), &ep_), 0);

        rpma_conn_req *outgoing = nullptr;
        ASSERT_EQ(rpma_conn_req_new(peer_, TestAddr(), port.c_str(), ClientCfg(), &outgoing), 0);
        rpma_conn_private_data pdata{hello_, sizeof(hello_)};
        ASSERT_EQ(rpma_conn_req_connect(&outgoing, &pdata, &client_), 0);

        rpma_conn_req *incoming = nullptr;
        ASSERT_EQ(rpma_ep_next_conn_req(ep_, ServerCfg(), &incoming), 0);
        rpma_conn_private_data reply{welcome_, sizeof(welcome_)};
        ASSERT_EQ(rpma_conn_req_connect(&incoming, &reply, &server_), 0);

        ExpectEvent(client_, RPMA_CONN_ESTABLISHED);
        ExpectEvent(server_, RPMA_CONN_ESTABLISHED);
    }

    void TearDown() override {
        if (client_ != nullptr && server_ != nullptr)
            Disconnect(client_, server_);
        EXPECT_EQ(rpma_conn_delete(&client_), 0);
        EXPECT_EQ(rpma_conn_delete(&server_), 0);
        EXPECT_EQ(rpma_ep_shutdown(&ep_), 0);
        EXPECT_EQ(rpma_peer_delete(&peer_), 0);
    }

    static ibv_wc NextCompletion(rpma_conn *conn) { return rpma_test::NextCompletion(conn); }

    // The private data each side sends while connecting.
    char hello_[7] = "client";
    char welcome_[7] = "server";

    rpma_peer *peer_ = nullptr;
    rpma_ep *ep_ = nullptr;
    rpma_conn *client_ = nullptr;
    rpma_conn *server_ = nullptr;
};

}  // namespace rpma_test

#endif  // RPMA_TESTS_UNIT_CONNECTED_PAIR_H
