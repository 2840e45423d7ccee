// Completion order on a shared completion channel, as a librpma program
// sees it through rpma_conn_wait: once the peer has answered a SEND (its
// ACK, or a reply SEND carrying the ACK), the send CQ's event comes before
// the receive CQ's event of that reply. Programs written for librpma (the
// GPSPM examples' "wait for the send completion, then for the receive")
// depend on it.
//
// Both ends run in one process, each in its own thread, through the public
// API only, so the same source serves two providers:
//   - :tcp_completion_order_test, linked with rpma_core, on the tcp provider
//     over 127.0.0.1;
//   - in the Soft-RoCE VM (tests/unit/provider/verbs:completion_order_vm),
//     built against Debian's librpma.h with -lrpma and run on our
//     librpma.so.0 and on Debian's librpma 1.2, with RPMA_PROVIDER=verbs and
//     RPMA_TEST_ADDR.
// RPMA_TEST_ITERATIONS overrides the number of round trips per test;
// RPMA_EXPECT_LIBRARY makes it fail unless that is the librpma in use.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <limits.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "librpma.h"
#include "tests/support/free_port.h"

namespace {

int Iterations() {
    const char *value = getenv("RPMA_TEST_ITERATIONS");
    const int parsed = value != nullptr ? atoi(value) : 0;
    return parsed > 0 ? parsed : 5000;
}

const char *TestAddr() {
    const char *addr = getenv("RPMA_TEST_ADDR");
    return addr != nullptr && *addr != '\0' ? addr : "127.0.0.1";
}

rpma_conn_cfg *SharedChannelCfg() {
    rpma_conn_cfg *cfg = nullptr;
    EXPECT_EQ(rpma_conn_cfg_new(&cfg), 0);
    EXPECT_EQ(rpma_conn_cfg_set_rcq_size(cfg, 8), 0);
    EXPECT_EQ(rpma_conn_cfg_set_compl_channel(cfg, true), 0);
    return cfg;
}

// One end's message buffers: 8 bytes to send from, 8 to receive into.
struct Messages {
    char bytes[16] = {};
    rpma_mr_local *mr = nullptr;
    static constexpr size_t kSend = 0;
    static constexpr size_t kRecv = 8;
    static constexpr size_t kSize = 8;
};

// The completions a connection with a shared channel has seen, and how
// often the order was not librpma's.
struct SharedChannelWaiter {
    rpma_conn *conn = nullptr;
    int sends = 0;
    int recvs = 0;
    // rpma_conn_wait named the receive CQ while a SEND the peer has answered
    // was still waiting for its completion.
    int recv_before_send = 0;
    // An event whose CQ had nothing to poll.
    int empty_events = 0;

    // One rpma_conn_wait and one rpma_cq_get_wc on the CQ it names, as the
    // librpma examples do. False on an error (already reported).
    bool WaitOnce(bool send_pending) {
        rpma_cq *cq = nullptr;
        bool is_rcq = false;
        const int ret = rpma_conn_wait(conn, 0, &cq, &is_rcq);
        if (ret != 0) {
            ADD_FAILURE() << "rpma_conn_wait: " << rpma_err_2str(ret);
            return false;
        }
        if (send_pending && is_rcq)
            ++recv_before_send;
        ibv_wc wc[4];
        int got = 0;
        const int polled = rpma_cq_get_wc(cq, 4, wc, &got);
        if (polled == RPMA_E_NO_COMPLETION) {
            ++empty_events;
            return true;
        }
        if (polled != 0) {
            ADD_FAILURE() << "rpma_cq_get_wc: " << rpma_err_2str(polled);
            return false;
        }
        for (int i = 0; i < got; ++i) {
            if (wc[i].status != IBV_WC_SUCCESS) {
                ADD_FAILURE() << "completion failed: " << ibv_wc_status_str(wc[i].status);
                return false;
            }
            if ((wc[i].opcode == IBV_WC_SEND) == is_rcq) {
                ADD_FAILURE() << "opcode " << wc[i].opcode << " polled from the "
                              << (is_rcq ? "receive" : "main") << " CQ";
                return false;
            }
            ++(wc[i].opcode == IBV_WC_SEND ? sends : recvs);
        }
        return true;
    }
};

// The peer of a waiter: a connection with one CQ (no shared channel) that
// answers or asks, and checks what completes.
class PlainEnd {
  public:
    PlainEnd(rpma_conn *conn, Messages *messages) : conn_(conn), messages_(messages) {
        EXPECT_EQ(rpma_conn_get_cq(conn_, &cq_), 0);
    }

    // Blocks until `wanted` completions of `opcode` arrived in all
    // (counting the others too). False on an error (already reported).
    bool Await(ibv_wc_opcode opcode, int wanted) {
        const int &count = opcode == IBV_WC_SEND ? sends_ : recvs_;
        while (count < wanted) {
            ibv_wc wc[4];
            int got = 0;
            const int ret = rpma_cq_get_wc(cq_, 4, wc, &got);
            if (ret == RPMA_E_NO_COMPLETION) {
                if (const int waited = rpma_cq_wait(cq_); waited != 0) {
                    ADD_FAILURE() << "rpma_cq_wait: " << rpma_err_2str(waited);
                    return false;
                }
                continue;
            }
            if (ret != 0) {
                ADD_FAILURE() << "rpma_cq_get_wc: " << rpma_err_2str(ret);
                return false;
            }
            for (int i = 0; i < got; ++i) {
                if (wc[i].status != IBV_WC_SUCCESS) {
                    ADD_FAILURE() << "completion failed: " << ibv_wc_status_str(wc[i].status);
                    return false;
                }
                ++(wc[i].opcode == IBV_WC_SEND ? sends_ : recvs_);
            }
        }
        return true;
    }

    bool PostRecv() {
        return rpma_recv(conn_, messages_->mr, Messages::kRecv, Messages::kSize, nullptr) == 0;
    }
    bool Send() {
        return rpma_send(conn_, messages_->mr, Messages::kSend, Messages::kSize,
                         RPMA_F_COMPLETION_ALWAYS, nullptr) == 0;
    }

  private:
    rpma_conn *conn_;
    Messages *messages_;
    rpma_cq *cq_ = nullptr;
    int sends_ = 0;
    int recvs_ = 0;
};

class CompletionOrder : public ::testing::Test {
  protected:
    // Connects a client and a server; `client_shared` / `server_shared`
    // give that end a receive CQ on a shared completion channel.
    void Connect(bool client_shared, bool server_shared) {
        ibv_context *ctx = nullptr;
        ASSERT_EQ(rpma_utils_get_ibv_context(TestAddr(), RPMA_UTIL_IBV_CONTEXT_LOCAL, &ctx), 0);
        ASSERT_EQ(rpma_peer_new(ctx, &peer_), 0);
        const uint16_t free_port = rpma::testing::FreePort();
        ASSERT_NE(free_port, 0) << "cannot pick a free port";
        const std::string port = std::to_string(free_port);
        ASSERT_EQ(rpma_ep_listen(peer_, TestAddr(), port.c_str(), &ep_), 0);
        if (client_shared)
            client_cfg_ = SharedChannelCfg();
        if (server_shared)
            server_cfg_ = SharedChannelCfg();

        rpma_conn_req *outgoing = nullptr;
        ASSERT_EQ(rpma_conn_req_new(peer_, TestAddr(), port.c_str(), client_cfg_, &outgoing), 0);
        ASSERT_EQ(rpma_conn_req_connect(&outgoing, nullptr, &client_), 0);
        rpma_conn_req *incoming = nullptr;
        ASSERT_EQ(rpma_ep_next_conn_req(ep_, server_cfg_, &incoming), 0);
        // The server's first receive is posted before the client can send.
        ASSERT_EQ(RegisterMessages(&server_messages_), 0);
        ASSERT_EQ(rpma_conn_req_recv(incoming, server_messages_.mr, Messages::kRecv,
                                     Messages::kSize, nullptr),
                  0);
        ASSERT_EQ(rpma_conn_req_connect(&incoming, nullptr, &server_), 0);
        ExpectEvent(client_, RPMA_CONN_ESTABLISHED);
        ExpectEvent(server_, RPMA_CONN_ESTABLISHED);
        ASSERT_EQ(RegisterMessages(&client_messages_), 0);
    }

    // After a failure: what either end still waits for completes with an
    // error, and TearDown does not wait for a graceful close.
    void Abort() {
        aborted_ = true;
        EXPECT_EQ(rpma_conn_disconnect(client_), 0);
    }

    void TearDown() override {
        if (client_ != nullptr && server_ != nullptr && !aborted_) {
            // The active side ends it; the passive side's disconnect sends
            // what the active side's CLOSED waits for on verbs.
            EXPECT_EQ(rpma_conn_disconnect(client_), 0);
            ExpectEvent(server_, RPMA_CONN_CLOSED);
            EXPECT_EQ(rpma_conn_disconnect(server_), 0);
            ExpectEvent(client_, RPMA_CONN_CLOSED);
        }
        EXPECT_EQ(rpma_conn_delete(&client_), 0);
        EXPECT_EQ(rpma_conn_delete(&server_), 0);
        for (Messages *messages : {&client_messages_, &server_messages_}) {
            if (messages->mr != nullptr) {
                EXPECT_EQ(rpma_mr_dereg(&messages->mr), 0);
            }
        }
        EXPECT_EQ(rpma_conn_cfg_delete(&client_cfg_), 0);
        EXPECT_EQ(rpma_conn_cfg_delete(&server_cfg_), 0);
        if (ep_ != nullptr) {
            EXPECT_EQ(rpma_ep_shutdown(&ep_), 0);
        }
        if (peer_ != nullptr) {
            EXPECT_EQ(rpma_peer_delete(&peer_), 0);
        }
    }

    int RegisterMessages(Messages *messages) {
        return rpma_mr_reg(peer_, messages->bytes, sizeof(messages->bytes),
                           RPMA_MR_USAGE_SEND | RPMA_MR_USAGE_RECV, &messages->mr);
    }

    static void ExpectEvent(rpma_conn *conn, rpma_conn_event expected) {
        rpma_conn_event event = RPMA_CONN_UNDEFINED;
        ASSERT_EQ(rpma_conn_next_event(conn, &event), 0);
        EXPECT_EQ(event, expected) << rpma_utils_conn_event_2str(event);
    }

    rpma_peer *peer_ = nullptr;
    rpma_ep *ep_ = nullptr;
    rpma_conn_cfg *client_cfg_ = nullptr;
    rpma_conn_cfg *server_cfg_ = nullptr;
    rpma_conn *client_ = nullptr;
    rpma_conn *server_ = nullptr;
    Messages client_messages_;
    Messages server_messages_;
    bool aborted_ = false;
};

// In the VM the same binary runs on two libraries: this says which.
TEST(CompletionOrderLibrary, IsTheExpectedOne) {
    Dl_info info{};
    ASSERT_NE(dladdr(reinterpret_cast<void *>(&rpma_conn_wait), &info), 0);
    ASSERT_NE(info.dli_fname, nullptr);
    char in_use[PATH_MAX];
    if (realpath(info.dli_fname, in_use) == nullptr)
        snprintf(in_use, sizeof(in_use), "%s", info.dli_fname);
    printf("librpma in use: %s\n", in_use);
    const char *expected = getenv("RPMA_EXPECT_LIBRARY");
    if (expected == nullptr)
        return;
    char wanted[PATH_MAX];
    ASSERT_NE(realpath(expected, wanted), nullptr) << expected;
    EXPECT_STREQ(in_use, wanted);
}

// The GPSPM client: it sends a request, then waits for its send completion
// and then for the reply, which the server sends as soon as the request
// arrived (the request's ACK goes first or rides in the reply's header).
TEST_F(CompletionOrder, ClientWithSharedChannelSeesItsSendBeforeTheReply) {
    ASSERT_NO_FATAL_FAILURE(Connect(/*client_shared=*/true, /*server_shared=*/false));
    const int iterations = Iterations();
    std::atomic<bool> client_failed{false};
    std::thread server([&] {
        PlainEnd end(server_, &server_messages_);
        for (int i = 0; i < iterations && !client_failed.load(); ++i) {
            if (!end.Await(IBV_WC_RECV, i + 1))
                return;
            if (i + 1 < iterations && !end.PostRecv()) {
                ADD_FAILURE() << "the server's rpma_recv failed";
                return;
            }
            if (!end.Send()) {
                ADD_FAILURE() << "the server's rpma_send failed";
                return;
            }
            if (!end.Await(IBV_WC_SEND, i + 1))
                return;
        }
    });
    SharedChannelWaiter client{client_};
    for (int i = 0; i < iterations; ++i) {
        ASSERT_EQ(
            rpma_recv(client_, client_messages_.mr, Messages::kRecv, Messages::kSize, nullptr), 0);
        ASSERT_EQ(rpma_send(client_, client_messages_.mr, Messages::kSend, Messages::kSize,
                            RPMA_F_COMPLETION_ALWAYS, nullptr),
                  0);
        bool ok = true;
        while (ok && (client.sends <= i || client.recvs <= i))
            ok = client.WaitOnce(/*send_pending=*/client.sends <= i);
        if (!ok) {
            client_failed = true;
            break;
        }
    }
    if (client_failed)
        Abort();  // the server may be waiting for what will not come
    server.join();
    EXPECT_EQ(client.recv_before_send, 0)
        << "the reply's receive CQ came first in " << client.recv_before_send << " of "
        << iterations << " round trips";
    EXPECT_EQ(client.empty_events, 0) << "events whose CQ had nothing to poll";
}

// The server of the issue: a receive CQ on a shared channel; it answers
// each request with a SEND and waits for that send's completion before it
// takes the next request, which the client sends as soon as the reply
// arrived (the reply's ACK goes first or rides in the request's header).
TEST_F(CompletionOrder, ServerWithSharedChannelSeesItsSendBeforeTheNextRequest) {
    ASSERT_NO_FATAL_FAILURE(Connect(/*client_shared=*/false, /*server_shared=*/true));
    const int iterations = Iterations();
    std::atomic<bool> server_failed{false};
    std::thread client([&] {
        PlainEnd end(client_, &client_messages_);
        for (int i = 0; i < iterations && !server_failed.load(); ++i) {
            if (!end.PostRecv() || !end.Send()) {
                ADD_FAILURE() << "the client's rpma_recv or rpma_send failed";
                return;
            }
            if (!end.Await(IBV_WC_SEND, i + 1) || !end.Await(IBV_WC_RECV, i + 1))
                return;
        }
    });
    SharedChannelWaiter server{server_};
    for (int i = 0; i < iterations; ++i) {
        bool ok = true;
        while (ok && server.recvs <= i)
            ok = server.WaitOnce(/*send_pending=*/false);
        if (ok && i + 1 < iterations)
            ok = rpma_recv(server_, server_messages_.mr, Messages::kRecv, Messages::kSize,
                           nullptr) == 0;
        if (ok)
            ok = rpma_send(server_, server_messages_.mr, Messages::kSend, Messages::kSize,
                           RPMA_F_COMPLETION_ALWAYS, nullptr) == 0;
        while (ok && server.sends <= i)
            ok = server.WaitOnce(/*send_pending=*/true);
        if (!ok) {
            ADD_FAILURE() << "the server failed in round trip " << i;
            server_failed = true;
            break;
        }
    }
    if (server_failed)
        Abort();  // the client may be waiting for what will not come
    client.join();
    EXPECT_EQ(server.recv_before_send, 0)
        << "the next request's receive CQ came first in " << server.recv_before_send << " of "
        << iterations << " round trips";
    EXPECT_EQ(server.empty_events, 0) << "events whose CQ had nothing to poll";
}

}  // namespace
