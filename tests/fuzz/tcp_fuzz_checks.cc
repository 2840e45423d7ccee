// The invariants: every message the provider sends parses and fits the
// model of a correct peer's conversation (ACKs name requests sent and never
// go back, READ_RESPONSEs answer the READs in order with the region's
// bytes), receives complete in order with each SEND's bytes, and the
// connection ends as it must (an ACK_REQUEST answered, the region equal to
// its shadow, the socket closed once the peer and the application left).

#include "tests/fuzz/tcp_fuzz_session.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "rpma_core/src/provider/tcp/tcp_listener.h"
#include "tests/fuzz/fuzz_support.h"

namespace tcp_fuzz {

void Session::OnProviderMessage(const wire::Header &header, const std::vector<uint8_t> &payload) {
    ++provider_messages_;
    if (predictable_ && provider_messages_ == 1) {
        // An active side speaks first to ask, a passive one to answer.
        if (active_)
            FUZZ_CHECK(header.opcode == wire::Opcode::kConnectRequest);
        else
            FUZZ_CHECK(header.opcode == wire::Opcode::kAccept ||
                       header.opcode == wire::Opcode::kReject);
    }
    switch (header.opcode) {
        case wire::Opcode::kConnectRequest:
            request_seen_ = true;
            if (predictable_) {
                wire::HandshakePrefix prefix;
                FUZZ_CHECK(wire::ParseHandshakePrefix(payload.data(), payload.size(), &prefix));
            }
            return;
        case wire::Opcode::kAccept:
            accept_seen_ = true;
            if (predictable_) {
                wire::HandshakePrefix prefix;
                FUZZ_CHECK(wire::ParseHandshakePrefix(payload.data(), payload.size(), &prefix));
            }
            return;
        case wire::Opcode::kReject:
        case wire::Opcode::kNak:
        case wire::Opcode::kDisconnect:
            provider_ended_ = true;
            return;
        case wire::Opcode::kAck:
            ++ack_messages_;
            if (predictable_) {
                FUZZ_CHECK(header.sequence < next_sequence_);      // names a request sent
                FUZZ_CHECK(header.sequence >= last_ack_message_);  // cumulative
            }
            last_ack_message_ = header.sequence;
            acked_ = std::max(acked_, header.sequence);
            return;
        case wire::Opcode::kReadResponse:
            if (predictable_) {
                // Answers the oldest READ, with the region's bytes.
                FUZZ_CHECK(!reads_.empty());
                const OutstandingRead &read = reads_.front();
                FUZZ_CHECK(header.sequence == read.sequence);
                FUZZ_CHECK(payload.size() == read.length);
                if (!read.tainted)
                    FUZZ_CHECK(memcmp(payload.data(), read.expected.data(), read.length) == 0);
                reads_.pop_front();
            }
            return;
        default:
            break;
    }
    if (wire::IsSend(header.opcode) && (header.flags & wire::kCarriesAck)) {
        if (predictable_)
            FUZZ_CHECK(header.remote_addr < next_sequence_);
        acked_ = std::max(acked_, header.remote_addr);
    }
    if (wire::IsRequest(header.opcode))
        provider_requests_.push_back({header.sequence, header.opcode, header.length});
}

// Messages arrive in order, each where its receive's buffer is, whole.
void Session::CheckReceive(const ibv_wc &wc) {
    FUZZ_CHECK(!receives_expected_.empty());
    const ExpectedReceive &expected = receives_expected_.front();
    FUZZ_CHECK(wc.byte_len == expected.length);
    const bool with_imm = expected.opcode != wire::Opcode::kSend;
    FUZZ_CHECK(((wc.wc_flags & IBV_WC_WITH_IMM) != 0) == with_imm);
    if (with_imm)
        FUZZ_CHECK(wc.imm_data == expected.imm);
    if (expected.opcode == wire::Opcode::kWriteWithImm) {
        FUZZ_CHECK(wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM);
    } else {
        FUZZ_CHECK(wc.opcode == IBV_WC_RECV);
        const uint8_t *buffer = p_.local.data() + kLocalSize / 2 + wc.wr_id * kReceiveSize;
        FUZZ_CHECK(expected.length == 0 ||
                   memcmp(buffer, expected.payload.data(), expected.length) == 0);
    }
    receives_expected_.pop_front();
}

void Session::Finish() {
    if (predictable_ && handshake_done_ && !Ended() && !stalled_) {
        // A correct conversation so far: an ACK_REQUEST is answered with an
        // ACK of every request, or the connection ends.
        wire::Header header;
        header.opcode = wire::Opcode::kAckRequest;
        const std::vector<uint8_t> bytes = Encode(header);
        const uint64_t before = ack_messages_;
        if (SendPiece(bytes.data(), bytes.size())) {
            const bool answered = WaitUntil(
                [&] { return Ended() || (ack_messages_ > before && acked_ + 1 >= next_sequence_); },
                kBoundMs);
            if (!answered)
                fprintf(stderr, "no ACK and no end within %d ms after an ACK_REQUEST\n", kBoundMs);
            FUZZ_CHECK(answered);
            if (predictable_ && !Ended())
                FUZZ_CHECK(memcmp(p_.target.data(), shadow_.data(), shadow_.size()) == 0);
        }
    }
    // The peer leaves; the provider must close its socket.
    shutdown(socket_, SHUT_WR);
    if (!WaitUntil([&] { return closed_; }, kBoundMs) && id_) {
        // Established: the application drops its id, which cuts it.
        id_.reset();
        WaitUntil([&] { return closed_; }, kBoundMs);
    }
    if (!closed_)
        fprintf(stderr, "the provider kept the socket after the peer and the application left\n");
    FUZZ_CHECK(closed_);
    if (getenv("TCP_CONNECTION_FUZZER_VERBOSE") != nullptr)
        fprintf(stderr,
                "conversation: %s, handshake %s, %llu requests, acked %llu, %zu messages from "
                "the provider%s%s\n",
                predictable_ ? "correct" : "not a correct peer's",
                handshake_done_ ? "done" : "not done",
                static_cast<unsigned long long>(next_sequence_ - 1),
                static_cast<unsigned long long>(acked_), provider_messages_,
                provider_ended_ ? ", the provider ended it" : "", stalled_ ? ", stalled" : "");
}

}  // namespace tcp_fuzz
