// One connection of the tcp connection fuzzer: the harness as the peer on a
// loopback socket and the provider's application, with the model of a
// correct peer's conversation the checks compare the provider against.
// Its parts live in their own files: setup and teardown in
// tcp_connection_fuzzer.cc, the script's steps in tcp_fuzz_steps.cc, the
// transport in tcp_fuzz_transport.cc, the invariants in tcp_fuzz_checks.cc.

#ifndef TESTS_FUZZ_TCP_FUZZ_SESSION_H_
#define TESTS_FUZZ_TCP_FUZZ_SESSION_H_

#include <netinet/in.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <vector>

#include "rpma_core/src/provider/provider.h"
#include "rpma_core/src/provider/tcp/tcp_wire.h"
#include "tests/fuzz/tcp_fuzz_environment.h"
#include "tests/fuzz/tcp_fuzz_script.h"

namespace tcp_fuzz {

namespace wire = rpma::provider::tcp::wire;

class Session {
  public:
    explicit Session(Process &process) : p_(process) {}
    ~Session() { TearDown(); }
    Session(const Session &) = delete;
    Session &operator=(const Session &) = delete;

    void Run(Script &script);

  private:
    struct OutstandingRead {
        uint64_t sequence;
        uint32_t length;
        std::vector<uint8_t> expected;
        bool tainted;  // a later WRITE may have changed the bytes before they left
    };
    // What a receive completes with, in order: a SEND's payload, or a
    // WRITE_WITH_IMM's length (its payload went to the region).
    struct ExpectedReceive {
        wire::Opcode opcode;
        uint32_t length;
        uint32_t imm;
        std::vector<uint8_t> payload;
    };
    struct ProviderRequest {
        uint64_t sequence;
        wire::Opcode opcode;
        uint32_t length;
    };

    // Setup.
    void RegisterRegions();
    void ConnectSocket();
    void ConnectFromProvider();
    void CreateQp();
    int FindProviderSocket() const;
    bool IsProviderSocket(int fd) const;

    // Steps.
    void RunStep(Script &script);
    void SendConnectRequest(Script &script);
    void SendRequest(Script &script, wire::Opcode opcode);
    void SendAnswer(Script &script, wire::Opcode opcode);
    void SendRawBytes(Script &script);
    void SendFreeHeader(Script &script);
    void ProviderPost(Script &script);
    void SendHeaderOnly(Script &script, wire::Opcode opcode);

    // Transport.
    void Deliver(const std::vector<uint8_t> &bytes, uint8_t first_piece, uint8_t other_pieces);
    bool SendPiece(const uint8_t *bytes, size_t length);
    bool ProviderHasUnread() const;
    bool WaitUntil(const std::function<bool()> &done, int bound_ms);
    void Pump();
    void ReadFromProvider();
    void OnProviderMessage(const wire::Header &header, const std::vector<uint8_t> &payload);
    void TakeRequest();
    void HandleEvents();
    void DrainCompletions();
    void PostReceive(uint64_t index);
    void RepostReceives();
    void CheckReceive(const ibv_wc &wc);

    // Ending.
    void Finish();
    void TearDown();
    bool Ended() const { return closed_ || provider_ended_; }
    void Unpredictable() {
        predictable_ = false;
        reads_.clear();
        receives_expected_.clear();
    }

    Process &p_;
    std::unique_ptr<provider::MemoryRegion> target_mr_;
    std::unique_ptr<provider::MemoryRegion> local_mr_;
    std::vector<uint8_t> shadow_;  // what the target region must hold

    int socket_ = -1;
    sockaddr_in local_address_{};
    sockaddr_in peer_address_{};
    int provider_socket_ = -1;
    std::vector<uint8_t> inbox_;
    bool closed_ = false;          // end of stream or reset from the provider
    bool provider_ended_ = false;  // it said NAK, REJECT or DISCONNECT, or reported an error
    bool stalled_ = false;         // it stopped reading; the script is abandoned
    bool deregister_next_ = false;
    bool destroy_qp_next_ = false;

    // The provider's side, driven as an application would.
    bool active_ = false;  // it connects; the harness sends ACCEPT, not READY_TO_USE
    bool reject_ = false;
    uint32_t receives_ = kReceives;
    // Receives completed and not posted again yet: a wait that does not end
    // at once posts them, so that a SEND sometimes finds none and waits.
    std::vector<uint64_t> free_receives_;
    std::unique_ptr<provider::CompletionQueue> send_cq_;
    std::unique_ptr<provider::CompletionQueue> recv_cq_;
    std::unique_ptr<provider::CmId> id_;
    bool qp_ready_ = false;
    uint64_t next_wr_id_ = 1;

    // The model of a correct peer's conversation.
    bool predictable_ = true;
    bool request_sent_ = false;
    bool request_seen_ = false;  // active: the provider's CONNECT_REQUEST
    bool accept_seen_ = false;
    bool handshake_done_ = false;
    uint32_t declared_depth_ = kQueueDepth;
    uint64_t next_sequence_ = 1;
    uint64_t acked_ = 0;  // by ACKs and SENDs that carry one
    uint64_t last_ack_message_ = 0;
    uint64_t ack_messages_ = 0;
    size_t provider_messages_ = 0;
    std::deque<OutstandingRead> reads_;
    std::deque<ExpectedReceive> receives_expected_;
    std::vector<ProviderRequest> provider_requests_;
};

// The bytes of a header as the wire format puts them.
std::vector<uint8_t> Encode(const wire::Header &header);

}  // namespace tcp_fuzz

#endif  // TESTS_FUZZ_TCP_FUZZ_SESSION_H_
